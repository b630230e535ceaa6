"""``python -m benchmarks.actor_comparison``: the reading of ``PROTOCOL-antmaze-actor-cpu.md``.

Can IQL's own actor imitate the generated U-maze file when its advantage weights are uniform?
Three arms on Table 1's ``antmaze-umaze`` file, compared as sets (no shared random streams):
W, IQL at temperature 0.001 (experiment ``antmaze_actor``); O, Table 1's IQL; BO, Table 1's BC.
The primary W - O (95% Welch, expected +1), the secondary W - BO (two-sided, uncorrected: the only
one), and the protocol's outcome once all five seeds of each arm are complete. A record on a
file other than the protocol's is refused.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from benchmarks import arm_sets
from benchmarks.arm_sets import Arm
from benchmarks.intervals import Interval, difference_interval, verdict
from benchmarks.reproduction import (
    analysis_parser,
    emit_report,
    mean_interval_cell,
    missing_arm,
    p_cell,
)

DATASET, CONTENT = "antmaze-umaze", "b7b9dc8f"
SEEDS = range(5)
METRIC = "offline_score"  # success in % at the end of the offline phase (100 episodes)
IMITATES_FROM, FAILS_BELOW = 30.0, 10.0  # the outcomes' thresholds on W's mean success, in %

ARMS = {a.name: a for a in (Arm("W", "iql", DATASET, "antmaze_actor", CONTENT),
                             Arm("O", "iql", DATASET, "table1", CONTENT),
                             Arm("BO", "bc", DATASET, "table1", CONTENT))}
PRIMARY, SECONDARY = ("W", "O"), ("W", "BO")
DESCRIPTION = {"W": "iql, temperature 0.001, offline only", "O": "iql, Table 1 (temperature 10)", "BO": "bc, Table 1"}


def load(results, preset: str) -> pd.DataFrame:
    return arm_sets.load(results, preset, ARMS.values())


def arm_values(runs: pd.DataFrame, arm: str) -> np.ndarray | None:
    """An arm's five scores; None until all five are complete."""
    x = arm_sets.values(runs, ARMS[arm], SEEDS, METRIC)
    return x if len(x) == len(SEEDS) else None


def comparisons(runs: pd.DataFrame) -> dict[tuple[str, str], Interval | None]:
    """(left, right) -> the 95% Welch interval of left - right; None until both arms are complete."""
    out: dict[tuple[str, str], Interval | None] = {}
    for left, right in (PRIMARY, SECONDARY):
        a, b = arm_values(runs, left), arm_values(runs, right)
        out[(left, right)] = None if a is None or b is None else difference_interval(a, b, paired=False)
    return out


def outcome(runs: pd.DataFrame, primary: Interval | None) -> str:
    w = arm_values(runs, "W")
    if primary is None or w is None:
        return "not read yet (arm W's or arm O's five seeds are not all complete)"
    word, mean = verdict(primary, expected_sign=+1), float(w.mean())
    if word == "supports" and mean >= IMITATES_FROM:
        return (f"IQL's actor imitates the file with uniform weights (W {mean:.1f}% >= {IMITATES_FROM:g}%, primary "
                "supports): its advantage weights, i.e. the values, remove the goal-reaching")
    if mean < FAILS_BELOW:
        return (f"IQL's actor does not imitate the file within 1.8e5 updates even with uniform weights (W {mean:.1f}% "
                f"< {FAILS_BELOW:g}%, primary {word}): the limit is the actor's fit, not the values")
    return f"none of the registered branches (W {mean:.1f}%, primary {word}): reported as it is"


def arms_table(runs: pd.DataFrame) -> list[str]:
    lines = ["| arm | what | file | end of offline, per seed (0-4) | mean [95% t] |", "|---|---|---|---|---|"]
    for name, arm in ARMS.items():
        x = arm_sets.values(runs, arm, SEEDS, METRIC)
        per_seed = ", ".join(f"{v:g}" for v in x) or "—"
        lines.append(f"| {name} | {DESCRIPTION[name]} | {arm.dataset} ({arm.content}) | {per_seed} | {mean_interval_cell(x)} |")
    return lines


def comparison_table(found: dict[tuple[str, str], Interval | None]) -> list[str]:
    lines = ["| comparison | difference, 95% Welch | p | reading |", "|---|---|---|---|"]
    for (left, right), iv in found.items():
        primary = (left, right) == PRIMARY
        label = f"{left} − {right}" + (" (primary)" if primary else " (secondary, two-sided)")
        if iv is None:
            lines.append(f"| {label} | — | — | not read yet (an arm is incomplete) |")
            continue
        word = verdict(iv, expected_sign=+1) if primary else ("differ" if iv.low > 0 or iv.high < 0 else "not told apart")
        lines.append(f"| {label} | {iv.estimate:+.1f} [{iv.low:+.1f}, {iv.high:+.1f}] | {p_cell(iv.p_value)} | **{word}** |")
    return lines


def report_lines(runs: pd.DataFrame, preset: str) -> list[str]:
    arm_sets.check_contents(runs, ARMS)
    found = comparisons(runs)
    return arm_sets.report_lines(f"IQL's actor with uniform advantage weights on the generated U-maze (preset `{preset}`)",
                                 "benchmarks.actor_comparison", "PROTOCOL-antmaze-actor-cpu.md", arms_table(runs),
                                 comparison_table(found), outcome(runs, found[PRIMARY]))


def main(argv: list[str] | None = None) -> int:
    parser = analysis_parser("python -m benchmarks.actor_comparison", __doc__, "paper_tables/actor_cpu.md", seeds=False)
    args = parser.parse_args(argv)
    runs = load(args.results, args.preset)
    if missing_arm(runs[runs.experiment == "antmaze_actor"] if not runs.empty else runs, "iql", args.preset, args.results):
        return 1
    return emit_report(lambda: report_lines(runs, args.preset), args.out)


if __name__ == "__main__":
    sys.exit(main())
