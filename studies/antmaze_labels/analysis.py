"""``python -m studies.antmaze_labels.analysis``: the reading of ``PROTOCOL-antmaze-labels-cpu.md``.

Does D4RL's labelling (every step within 0.5 m of the goal rewarded and terminal, 1000-step
episodes) let our IQL learn the generated U-maze? Four arms, compared as sets (two files, no
shared random streams): IQL and BC on ``antmaze-umaze-d4rlstyle`` (L, BL; experiment
``antmaze_labels``) and on Table 1's ``antmaze-umaze`` (O, BO; Table 1's records). The primary
L - O (95% Welch, expected +1); BL - BO and L - BL with Holm over the two; the protocol's outcome.
Arm L's seeds follow the protocol's rule (0-2, or 0-4 when seeds 0-2 are not 20 points above O's).
A record on a file other than the protocol's is refused.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from benchmarks.intervals import Interval, difference_interval, read_family, verdict
from benchmarks.reproduction import (
    analysis_parser,
    emit_report,
    mean_interval_cell,
    missing_arm,
    p_cell,
)
from studies import arm_sets
from studies.arm_sets import Arm

LABELS, ORIGINAL = "antmaze-umaze-d4rlstyle", "antmaze-umaze"
CONTENTS = {LABELS: "7fca558f", ORIGINAL: "b7b9dc8f"}  # the protocol's files, by content hash
FIRST_SEEDS, ALL_SEEDS = range(3), range(5)
SEED_RULE_POINTS = 20.0  # arm L stops at three seeds when their mean is this far above O's
RESCUED_FROM, FAILS_BELOW = 15.0, 5.0  # the outcomes' thresholds on L's mean success, in %
METRIC = "offline_score"  # success in % at the end of the offline phase (100 episodes)

ARMS = {a.name: a for a in (Arm("L", "iql", LABELS, "antmaze_labels", CONTENTS[LABELS]),
                             Arm("O", "iql", ORIGINAL, "table1", CONTENTS[ORIGINAL]),
                             Arm("BL", "bc", LABELS, "antmaze_labels", CONTENTS[LABELS]),
                             Arm("BO", "bc", ORIGINAL, "table1", CONTENTS[ORIGINAL]))}
PRIMARY = ("L", "O")
SECONDARY = (("BL", "BO"), ("L", "BL"))


def load(results, preset: str) -> pd.DataFrame:
    """The four arms' runs: the experiment's own and Table 1's antmaze-umaze cells."""
    return arm_sets.load(results, preset, ARMS.values())


def check_contents(runs: pd.DataFrame) -> None:
    """Raise :class:`MixedContents` naming the runs made on a file other than the protocol's."""
    arm_sets.check_contents(runs, ARMS)


def values(runs: pd.DataFrame, arm: str, seeds, metric: str = METRIC) -> np.ndarray:
    """An arm's complete scores on ``seeds``, in seed order."""
    return arm_sets.values(runs, ARMS[arm], seeds, metric)


def labels_seeds(runs: pd.DataFrame) -> range | None:
    """Arm L's seeds by the protocol's rule; None while the rule is not settled (L's or O's seeds
    0-2 incomplete, or seeds 3-4 asked for and not all complete)."""
    first_l, first_o = values(runs, "L", FIRST_SEEDS), values(runs, "O", FIRST_SEEDS)
    if min(len(first_l), len(first_o)) < len(FIRST_SEEDS):
        return None
    if first_l.mean() >= first_o.mean() + SEED_RULE_POINTS:
        return FIRST_SEEDS
    return ALL_SEEDS if len(values(runs, "L", ALL_SEEDS)) == len(ALL_SEEDS) else None


def arm_values(runs: pd.DataFrame, arm: str) -> np.ndarray | None:
    """The values an arm is read on: L's by the seed rule, the others' seeds 0-4; None until all
    of them are complete."""
    seeds = labels_seeds(runs) if arm == "L" else ALL_SEEDS
    if seeds is None:
        return None
    x = values(runs, arm, seeds)
    return x if len(x) == len(seeds) else None


def comparisons(runs: pd.DataFrame) -> dict[tuple[str, str], Interval | None]:
    """(left, right) -> the 95% Welch interval of left - right; None until both arms are complete."""
    out: dict[tuple[str, str], Interval | None] = {}
    for left, right in (PRIMARY, *SECONDARY):
        a, b = arm_values(runs, left), arm_values(runs, right)
        out[(left, right)] = None if a is None or b is None else difference_interval(a, b, paired=False)
    return out


def outcome(runs: pd.DataFrame, found: dict[tuple[str, str], Interval | None]) -> str:
    """The protocol's outcome, from the primary, L's mean and the Holm reading of BL - BO."""
    primary, labels = found[PRIMARY], arm_values(runs, "L")
    if primary is None or labels is None:
        return "not read yet (arm L's or arm O's seeds are not all complete)"
    word, mean = verdict(primary, expected_sign=+1), float(labels.mean())
    secondary = {k: v for k, v in found.items() if k != PRIMARY}
    if word == "supports" and mean >= RESCUED_FROM:
        if any(v is None for v in secondary.values()):
            return f"primary supports (L {mean:.1f}%); not settled until the BC arms are complete"
        content_differs = read_family({"-".join(k): v for k, v in secondary.items()})["BL-BO"].significant
        if content_differs:
            return (f"the new file helps IQL (L {mean:.1f}%, primary supports), but BC on it differs too "
                    "(BL - BO, Holm): labels and content are not separated")
        return (f"the labels are why IQL fails on the generated file (L {mean:.1f}% >= {RESCUED_FROM:g}%, primary "
                "supports, BL - BO not told apart): the forge's AntMaze default moves to D4RL's conventions "
                "by a protocol of its own")
    if word != "supports" and mean < FAILS_BELOW:
        return (f"D4RL's labelling does not rescue IQL at this budget (L {mean:.1f}% < {FAILS_BELOW:g}%, primary "
                f"{word}): the remaining suspects are registered before they run")
    return f"none of the registered branches (L {mean:.1f}%, primary {word}): reported as it is"


def arms_table(runs: pd.DataFrame) -> list[str]:
    lines = ["| arm | method | file | seeds read | end of offline, per seed | mean [95% t] | final score (after 5000 online samples) |",
             "|---|---|---|---|---|---|---|"]
    for name, a in ARMS.items():
        seeds = labels_seeds(runs) if name == "L" else ALL_SEEDS
        shown = seeds if seeds is not None else ALL_SEEDS
        x, final = values(runs, name, shown), values(runs, name, shown, "final_score")
        read = f"{shown.start}-{shown.stop - 1}" + ("" if seeds is not None else " (rule not settled)")
        per_seed = ", ".join(f"{v:g}" for v in x) or "—"
        final_cell = mean_interval_cell(final) if a.method == "iql" else "— (no online phase)"
        lines.append(f"| {name} | {a.method} | {a.dataset} ({CONTENTS[a.dataset]}) | {read} | {per_seed} | "
                     f"{mean_interval_cell(x)} | {final_cell} |")
    return lines


def comparison_table(runs: pd.DataFrame, found: dict[tuple[str, str], Interval | None]) -> list[str]:
    secondary = {"-".join(k): v for k, v in found.items() if k != PRIMARY}
    holm = read_family(secondary) if all(v is not None for v in secondary.values()) else None
    lines = ["| comparison | difference, 95% Welch | p | p (Holm) | reading |", "|---|---|---|---|---|"]
    for (left, right), iv in found.items():
        label = f"{left} − {right}" + (" (primary)" if (left, right) == PRIMARY else "")
        if iv is None:
            lines.append(f"| {label} | — | — | — | not read yet (an arm is incomplete) |")
            continue
        if (left, right) == PRIMARY:
            adjusted, word = "primary", verdict(iv, expected_sign=+1)
        elif holm is None:
            adjusted, word = "— (the other secondary is not read yet)", "—"
        else:
            c = holm[f"{left}-{right}"]
            adjusted, word = p_cell(c.p_holm), "differ" if c.significant else "not told apart"
        lines.append(f"| {label} | {iv.estimate:+.1f} [{iv.low:+.1f}, {iv.high:+.1f}] | {p_cell(iv.p_value)} | "
                     f"{adjusted} | **{word}** |")
    return lines


def report_lines(runs: pd.DataFrame, preset: str) -> list[str]:
    check_contents(runs)
    found = comparisons(runs)
    return arm_sets.report_lines(f"D4RL's AntMaze labels and IQL on the generated U-maze (preset `{preset}`)",
                                 "studies.antmaze_labels.analysis", "PROTOCOL-antmaze-labels-cpu.md", arms_table(runs),
                                 comparison_table(runs, found), outcome(runs, found))


def main(argv: list[str] | None = None) -> int:
    parser = analysis_parser("python -m studies.antmaze_labels.analysis", __doc__,
                             "paper_tables/labels_cpu.md", seeds=False)
    args = parser.parse_args(argv)
    runs = load(args.results, args.preset)
    if missing_arm(runs[runs.dataset == LABELS] if not runs.empty else runs, "iql", args.preset, args.results):
        return 1
    return emit_report(lambda: report_lines(runs, args.preset), args.out)


if __name__ == "__main__":
    sys.exit(main())
