"""``python -m benchmarks.official.comparison``: the reading of ``PROTOCOL-official-cpu.md``.

Our ODT (Table 1's ``odt`` runs) against the unmodified official code (``official-odt`` runs of
the experiment ``official``) on the same rows, seeds and config. The two codebases share no
random streams, so each comparison is of two sets of runs: the difference of means ours -
official, a 95% Welch t-interval, and two one-sided tests against the registered margin (the
90% Welch interval inside +-margin). The primary comparison is the final score on hopper-medium;
the others are one family read with Holm's correction beside their uncorrected intervals.

Verdicts: ``contradicts`` (the two differ: the 95% interval excludes 0, after Holm for the
family), else ``equivalent`` (the 90% interval inside the margin), else ``inconclusive``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from benchmarks import aggregate as agg
from benchmarks.intervals import (
    Equivalence,
    Interval,
    difference_interval,
    equivalence,
    read_family,
)
from benchmarks.reproduction import analysis_parser, complete_runs, emit

OURS, OFFICIAL = "odt", "official-odt"
MARGIN = 10.0  # normalised points, every locomotion row (the protocol's)
ROWS = {"hopper-medium": range(10), "hopper-medium-replay": range(5), "walker2d-medium": range(5)}
METRICS = {"final_score": "final", "offline_score": "end of pretraining"}
PRIMARY = ("hopper-medium", "final_score")


@dataclass(frozen=True)
class Reading:
    dataset: str
    metric: str
    ours: np.ndarray
    official: np.ndarray
    interval: Interval | None  # 95% Welch, ours - official
    equivalence: Equivalence | None
    p_holm: float | None = None  # None for the primary

    @property
    def verdict(self) -> str:
        if self.interval is None or self.equivalence is None:
            return "not read (fewer than 2 runs in an arm)"
        significant = (self.interval.p_value if self.p_holm is None else self.p_holm) <= 0.05
        if significant:
            return "contradicts"
        return "equivalent" if self.equivalence.equivalent else "inconclusive"


def values(runs: pd.DataFrame, method: str, dataset: str, metric: str, seeds: Sequence[int]) -> np.ndarray:
    """The complete runs' ``metric`` of one cell, on the protocol's seeds, in seed order."""
    cell = complete_runs(runs, method, dataset)
    cell = cell[cell.seed.isin(list(seeds))].sort_values("seed")
    return cell[metric].dropna().to_numpy(dtype=float)


def read_one(runs: pd.DataFrame, dataset: str, metric: str, seeds: Sequence[int]) -> Reading:
    ours, official = (values(runs, m, dataset, metric, seeds) for m in (OURS, OFFICIAL))
    if min(len(ours), len(official)) < 2:
        return Reading(dataset, metric, ours, official, None, None)
    return Reading(dataset, metric, ours, official, difference_interval(ours, official, paired=False),
                   equivalence(ours, official, MARGIN, paired=False))


def read_all(runs: pd.DataFrame) -> list[Reading]:
    """Every (row, metric) of the protocol, the primary first; the secondaries with Holm's p."""
    readings = [read_one(runs, d, m, seeds) for d, seeds in ROWS.items() for m in METRICS]
    primary = [r for r in readings if (r.dataset, r.metric) == PRIMARY]
    family = {(r.dataset, r.metric): r for r in readings if (r.dataset, r.metric) != PRIMARY and r.interval}
    adjusted = read_family({k: r.interval for k, r in family.items()})
    secondary = [Reading(r.dataset, r.metric, r.ours, r.official, r.interval, r.equivalence,
                         adjusted[(r.dataset, r.metric)].p_holm if (r.dataset, r.metric) in adjusted else None)
                 for r in readings if (r.dataset, r.metric) != PRIMARY]
    return primary + secondary


def _ms(x: np.ndarray) -> str:
    if len(x) == 0:
        return "—"
    sd = f" ± {x.std(ddof=1):.1f}" if len(x) > 1 else ""
    return f"{x.mean():.1f}{sd} (n={len(x)})"


def _ci(i: Interval | None) -> str:
    return "—" if i is None else f"{i.estimate:+.1f} [{i.low:+.1f}, {i.high:+.1f}]"


def comparison_table(readings: list[Reading]) -> list[str]:
    lines = ["| row | metric | ours | official | ours − official, 95% Welch | p | p (Holm) | 90% Welch (TOST) | verdict |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in readings:
        role = " (primary)" if (r.dataset, r.metric) == PRIMARY else ""
        p = "—" if r.interval is None else f"{r.interval.p_value:.3f}"
        holm = "primary" if role else ("—" if r.p_holm is None else f"{r.p_holm:.3f}")
        tost = "—" if r.equivalence is None else _ci(r.equivalence.interval)
        lines.append(f"| {r.dataset} | {METRICS[r.metric]}{role} | {_ms(r.ours)} | {_ms(r.official)} | "
                     f"{_ci(r.interval)} | {p} | {holm} | {tost} | **{r.verdict}** |")
    return lines


def per_seed_table(runs: pd.DataFrame) -> list[str]:
    lines = ["| row | seed | ours: end of pretraining | ours: final | official: end of pretraining | official: final |",
             "|---|---|---|---|---|---|"]
    for dataset, seeds in ROWS.items():
        for s in seeds:
            cells = []
            for method in (OURS, OFFICIAL):
                run = complete_runs(runs, method, dataset)
                run = run[run.seed == s]
                cells += ([f"{run.offline_score.iloc[0]:.1f}", f"{run.final_score.iloc[0]:.1f}"]
                          if len(run) else ["—", "—"])
            if any(c != "—" for c in cells[2:]):
                lines.append(f"| {dataset} | {s} | " + " | ".join(cells) + " |")
    return lines


def provenance_lines(runs: pd.DataFrame) -> list[str]:
    """Code version, CPU, torch, data and cost of each arm's complete runs (context, not a verdict)."""
    lines = ["| arm | row | runs | " + " | ".join(agg.ORIGIN.values()) + " | wall h per run, median [min, max] | core-h |",
             "|---|---|---|" + "---|" * len(agg.ORIGIN) + "---|---|"]
    for method in (OURS, OFFICIAL):
        for dataset, seeds in ROWS.items():
            cell = complete_runs(runs, method, dataset)
            cell = cell[cell.seed.isin(list(seeds))]
            if cell.empty:
                continue
            hours = cell.wall_time.dropna().to_numpy() / 3600
            span = f"{np.median(hours):.2f} [{hours.min():.2f}, {hours.max():.2f}]" if len(hours) else "—"
            core = cell.core_seconds.dropna()
            core_h = f"{core.sum() / 3600:.2f}" + ("" if len(core) == len(cell) else f" ({len(core)} timed)")
            origin = " | ".join(agg.tally(cell[c]) for c in agg.ORIGIN)
            lines.append(f"| {method} | {dataset} | {len(cell)} | {origin} | {span} | {core_h} |")
    return lines


def report_lines(runs: pd.DataFrame, preset: str) -> list[str]:
    readings = read_all(runs)
    return [
        f"# Our ODT against the official online-dt code (preset `{preset}`)", "",
        "Generated by `python -m benchmarks.official.comparison` from the records; the protocol is "
        "`PROTOCOL-official-cpu.md`. Data generated here by the project's forge (not D4RL); budget: "
        f"the `{preset}` preset's (2500 pretraining updates, 5000 online samples). Scores are D4RL-"
        "normalised (100 = expert), each the mean of 10 mean-action episodes. Ours: Table 1's `odt` runs; "
        "official: `official-odt` runs of the experiment `official` (facebookresearch/online-dt, "
        "c376fa1, unmodified, through `benchmarks/official/`). Sets, not pairs: the two codebases "
        f"share no random streams. Equivalence margin ±{MARGIN:g} points.", "",
        *comparison_table(readings), "",
        "Verdicts: **contradicts**: the 95% interval excludes 0 (for the secondaries, Holm's adjusted "
        "p <= 0.05 over the family of the five); **equivalent**: the 90% interval lies inside the "
        "margin; **inconclusive**: neither. A row whose arms have fewer than 2 complete runs is not read.", "",
        "## Per seed", "", *per_seed_table(runs), "",
        "## Where the runs ran", "",
        "Times are context, not a speed comparison: the arms ran on different days "
        "(`benchmarks/PERF.md` has the alternating comparison).", "",
        *provenance_lines(runs), ""]


def load(results, preset: str) -> pd.DataFrame:
    """Both arms' runs: Table 1's (ours) and the experiment ``official``'s."""
    frames = [agg.load_runs(results, preset, e) for e in ("table1", "official")]
    return pd.concat([f for f in frames if not f.empty], ignore_index=True) if any(
        not f.empty for f in frames) else frames[0]


def main(argv: list[str] | None = None) -> int:
    parser = analysis_parser("python -m benchmarks.official.comparison", __doc__,
                             "paper_tables/official_cpu.md", seeds=False)
    args = parser.parse_args(argv)
    runs = load(args.results, args.preset)
    if runs.empty or not (runs.method == OFFICIAL).any():
        print(f"error: no official-odt runs at preset {args.preset!r} under {args.results}", file=sys.stderr)
        return 1
    return emit("\n".join(report_lines(runs, args.preset)), args.out)


if __name__ == "__main__":
    sys.exit(main())
