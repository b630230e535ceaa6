"""``python -m benchmarks.corl.comparison``: the reading of ``PROTOCOL-corl-iql-cpu.md``.

Our IQL (Table 1's ``iql`` runs, seeds 0-4) against CORL's single-file IQL run unmodified
(``corl-iql``, experiment ``corl_iql``) on the same generated files and budget. The codes share no
random streams, so each comparison is of two sets: CORL - ours, the difference of means with a 95%
Welch t-interval. The primary is the end-of-offline success rate on antmaze-umaze, read for the
claim "CORL's IQL does better than ours here" (supports / contradicts / inconclusive); the end of
offline on hopper-medium and the final score on both rows are one family read with Holm.

The AntMaze seed rule: ``corl-iql`` seeds 3-4 are read only if the mean of its seeds 0-2 is within
``SEED_RULE_POINTS`` of ours over seeds 0-2. A row whose runs name two data files is refused.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from benchmarks import aggregate as agg
from benchmarks.intervals import Interval, difference_interval, read_family, verdict
from benchmarks.reproduction import (
    MixedContents,
    analysis_parser,
    complete_runs,
    emit_report,
    missing_arm,
)

OURS, CORL = "iql", "corl-iql"
EXPERIMENTS = {OURS: "table1", CORL: "corl_iql"}
ANTMAZE, HOPPER = "antmaze-umaze", "hopper-medium"
CONTENT = {ANTMAZE: "b7b9dc8f", HOPPER: "bdaad3f4"}  # the Table 1 records' files (content prefix)
METRICS = {"offline_score": "end of offline", "final_score": "final"}
PRIMARY = (ANTMAZE, "offline_score")
OURS_SEEDS = range(5)
FIRST_SEEDS, ALL_SEEDS = range(3), range(5)
SEED_RULE_POINTS = 20.0
# the protocol's outcomes: CORL's mean end-of-offline success on AntMaze below / at or above these
FAILS_BELOW, SUCCEEDS_FROM = 10.0, 15.0


@dataclass(frozen=True)
class Reading:
    dataset: str
    metric: str
    corl: np.ndarray
    ours: np.ndarray
    interval: Interval | None  # 95% Welch, CORL - ours
    p_holm: float | None = None  # None for the primary

    @property
    def verdict(self) -> str:
        if self.interval is None:
            return "not read (fewer than 2 runs in an arm)"
        if self.p_holm is None:
            return verdict(self.interval, expected_sign=+1)
        return "differ" if self.p_holm <= 0.05 else "not told apart"


def load(results, preset: str) -> pd.DataFrame:
    """Both arms' runs of the two rows: ours from ``table1``, CORL's from ``corl_iql``."""
    frames = [agg.load_runs(results, preset, e) for e in EXPERIMENTS.values()]
    frames = [f for f in frames if not f.empty]
    if not frames:
        return pd.DataFrame(columns=["method", "dataset", "seed", "status"])
    runs = pd.concat(frames, ignore_index=True)
    keep = ((runs.method == OURS) & (runs.experiment == EXPERIMENTS[OURS])) | (
        (runs.method == CORL) & (runs.experiment == EXPERIMENTS[CORL]))
    return runs[keep & runs.dataset.isin(CONTENT)]


def check_contents(runs: pd.DataFrame) -> None:
    """Raise :class:`MixedContents` for a row whose runs name a data file other than its Table 1
    file (the protocol reads no record made on other content)."""
    if "data_file" not in runs:
        return
    for dataset, row in runs[runs.data_file.notna()].groupby("dataset", sort=True):
        other = row[row.data_file != CONTENT[dataset]]
        if not other.empty:
            raise MixedContents(f"row {dataset!r} is not read: runs {', '.join(sorted(other.run_id))} name data "
                                f"file(s) {', '.join(sorted(set(other.data_file)))}, not {CONTENT[dataset]}")


def values(runs: pd.DataFrame, method: str, dataset: str, metric: str, seeds: Sequence[int]) -> np.ndarray:
    cell = complete_runs(runs, method, dataset)
    cell = cell[cell.seed.isin(list(seeds))].sort_values("seed")
    return cell[metric].dropna().to_numpy(dtype=float)


def corl_antmaze_seeds(runs: pd.DataFrame) -> range | None:
    """The seed rule: CORL's AntMaze seeds to read (0-2 or 0-4); None while seeds 0-2 of either
    arm are incomplete, or while the rule asks for seeds 3-4 and they are not all complete."""
    corl, ours = (values(runs, m, ANTMAZE, "offline_score", FIRST_SEEDS) for m in (CORL, OURS))
    if len(corl) < len(FIRST_SEEDS) or len(ours) < len(FIRST_SEEDS):
        return None
    if abs(corl.mean() - ours.mean()) >= SEED_RULE_POINTS:
        return FIRST_SEEDS
    done = len(values(runs, CORL, ANTMAZE, "offline_score", ALL_SEEDS))
    return ALL_SEEDS if done == len(ALL_SEEDS) else None


def read_one(runs: pd.DataFrame, dataset: str, metric: str, corl_seeds: Sequence[int]) -> Reading:
    corl = values(runs, CORL, dataset, metric, corl_seeds)
    ours = values(runs, OURS, dataset, metric, OURS_SEEDS)
    if min(len(corl), len(ours)) < 2:
        return Reading(dataset, metric, corl, ours, None)
    return Reading(dataset, metric, corl, ours, difference_interval(corl, ours, paired=False))


def read_all(runs: pd.DataFrame) -> list[Reading]:
    """The primary (None of it when the seed rule is not settled) and the secondaries with Holm.
    A row is read once its arms are complete: AntMaze by the seed rule, hopper-medium at 5 + 5."""
    antmaze_seeds = corl_antmaze_seeds(runs)
    hopper_done = all(len(values(runs, m, HOPPER, "final_score", ALL_SEEDS)) == 5 for m in (CORL, OURS))
    seeds = {ANTMAZE: antmaze_seeds, HOPPER: ALL_SEEDS if hopper_done else None}
    readings = [read_one(runs, d, m, s) if s is not None else Reading(d, m, np.array([]), np.array([]), None)
                for d, s in seeds.items() for m in METRICS]
    family = {(r.dataset, r.metric): r.interval for r in readings if (r.dataset, r.metric) != PRIMARY and r.interval}
    adjusted = read_family(family)
    return [r if (r.dataset, r.metric) == PRIMARY or r.interval is None
            else Reading(r.dataset, r.metric, r.corl, r.ours, r.interval, adjusted[(r.dataset, r.metric)].p_holm)
            for r in readings]


def outcome(primary: Reading) -> str:
    """Which of the protocol's three outcomes the primary reading is."""
    if primary.interval is None:
        return "not read yet"
    mean, word = float(primary.corl.mean()), primary.verdict
    if word != "supports" and mean < FAILS_BELOW:
        return (f"1: CORL's IQL also fails on this file (its mean {mean:.1f}% < {FAILS_BELOW:g}%, primary "
                f"{word}): our IQL is not the cause; next, the data")
    if word == "supports" and mean >= SUCCEEDS_FROM:
        return f"2: CORL's IQL succeeds ({mean:.1f}% >= {SUCCEEDS_FROM:g}%, primary supports): ours has a bug"
    return f"3: neither branch (CORL's mean {mean:.1f}%, primary {word}); the next step is registered first"


def _ms(x: np.ndarray) -> str:
    if len(x) == 0:
        return "—"
    return f"{x.mean():.1f}" + (f" ± {x.std(ddof=1):.1f}" if len(x) > 1 else "") + f" (n={len(x)})"


def table(readings: list[Reading]) -> list[str]:
    lines = ["| row | metric | CORL | ours | CORL − ours, 95% Welch | p | p (Holm) | reading |",
             "|---|---|---|---|---|---|---|---|"]
    for r in readings:
        primary = (r.dataset, r.metric) == PRIMARY
        ci = "—" if r.interval is None else f"{r.interval.estimate:+.1f} [{r.interval.low:+.1f}, {r.interval.high:+.1f}]"
        p = "—" if r.interval is None else f"{r.interval.p_value:.3f}"
        holm = "primary" if primary else ("—" if r.p_holm is None else f"{r.p_holm:.3f}")
        lines.append(f"| {r.dataset} | {METRICS[r.metric]}{' (primary)' if primary else ''} | {_ms(r.corl)} | "
                     f"{_ms(r.ours)} | {ci} | {p} | {holm} | **{r.verdict}** |")
    return lines


def per_seed(runs: pd.DataFrame) -> list[str]:
    lines = ["| row | arm | seed | end of offline | final | data file | code | CPU | wall min |",
             "|---|---|---|---|---|---|---|---|---|"]
    for dataset in CONTENT:
        for method in (CORL, OURS):
            cell = complete_runs(runs, method, dataset)
            cell = cell[cell.seed.isin(list(ALL_SEEDS if method == CORL else OURS_SEEDS))]
            for _, r in cell.sort_values("seed").iterrows():
                wall = f"{r.wall_time / 60:.0f}" if pd.notna(r.get("wall_time")) else "—"
                lines.append(f"| {dataset} | {method} | {int(r.seed)} | {r.offline_score:.1f} | {r.final_score:.1f} | "
                             f"{r.get('data_file', '—')} | {r.get('code', '—')} | {r.get('cpu', '—')} | {wall} |")
    return lines


def report_lines(runs: pd.DataFrame, preset: str) -> list[str]:
    check_contents(runs)
    readings = read_all(runs)
    seeds = corl_antmaze_seeds(runs)
    rule = ("not settled (seeds 0-2 of an arm, or 3-4 it asks for, incomplete)" if seeds is None
            else f"read CORL's seeds {seeds.start}-{seeds.stop - 1}")
    return [f"# Our IQL against CORL's IQL, unmodified, on the same files (preset `{preset}`)", "",
            "Generated by `python -m benchmarks.corl.comparison` from the records; the protocol is "
            "`PROTOCOL-corl-iql-cpu.md`. Data generated here by the project's forge (not D4RL): antmaze-umaze "
            f"{CONTENT[ANTMAZE]}, hopper-medium {CONTENT[HOPPER]}. Budget: 1.8e5 offline updates, then 5000 online "
            "samples. Sets, not pairs (the codes share no random streams). AntMaze: success rate in % "
            "(100 episodes); hopper-medium: D4RL-normalised return.", "",
            f"AntMaze seed rule: {rule}.", "",
            *table(readings), "",
            f"**Outcome:** {outcome(readings[0])}.", "",
            "The online phases differ by configuration (`docs/corl.md`): the final scores are described, "
            "not a like-for-like comparison.", "",
            "## Per seed", "", *per_seed(runs), ""]


def main(argv: list[str] | None = None) -> int:
    parser = analysis_parser("python -m benchmarks.corl.comparison", __doc__, "paper_tables/corl_iql_cpu.md",
                             seeds=False)
    args = parser.parse_args(argv)
    runs = load(args.results, args.preset)
    if missing_arm(runs, CORL, args.preset, args.results):
        return 1
    return emit_report(lambda: report_lines(runs, args.preset), args.out)


if __name__ == "__main__":
    sys.exit(main())
