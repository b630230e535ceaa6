"""``python -m benchmarks.official.comparison``: the reading of ``PROTOCOL-official-cpu.md``.

Our ODT (Table 1's ``odt`` runs) against the unmodified official code (``official-odt`` runs of
the experiment ``official``) on the same rows, seeds and config. The two codebases share no
random streams, so each comparison is of two sets of runs: the difference of means ours -
official, a 95% Welch t-interval, and two one-sided tests against the registered margin (the
90% Welch interval inside +-margin). The primary comparison is the final score on hopper-medium;
the others are one family read with Holm's correction beside their uncorrected intervals.

Verdicts: ``contradicts`` (the two differ: the 95% interval excludes 0, after Holm for the
family), else ``equivalent`` (the 90% interval inside the margin), else ``inconclusive``.

The protocol's amendment of 2026-12-04 (the 10-seed primary was inconclusive) adds seeds 10-19
of both arms on hopper-medium (experiment ``official_more``) and reads the primary a second time
at 20 seeds per arm, at O'Brien-Fleming's nominal alpha for the second of two looks (0.048), once
all 40 runs are complete; beside it, without a verdict, the online gain within a run.
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
EXPERIMENTS = ("table1", "official", "official_more")  # ours: table1 (seeds 0-9) and official_more (10-19)
AMENDED_SEEDS = range(20)  # hopper-medium, both arms, after the amendment of 2026-12-04
# O'Brien-Fleming boundaries for two equally spaced looks at overall two-sided alpha 0.05:
# nominal 0.0052 at the first look (n = 10) and 0.048 at the second (n = 20).
SECOND_LOOK_ALPHA = 0.048
GAIN = "online_gain"  # final - end of pretraining, within a run (exploratory in the amendment)
COLLAPSE_BELOW = 20.0  # the amendment's count of runs ending below this score


@dataclass(frozen=True)
class Reading:
    dataset: str
    metric: str
    ours: np.ndarray
    official: np.ndarray
    interval: Interval | None  # 95% Welch, ours - official
    equivalence: Equivalence | None
    p_holm: float | None = None  # None for the primary
    alpha: float = 0.05  # the nominal level of this look: interval at 1 - alpha, TOST at alpha

    @property
    def verdict(self) -> str:
        if self.interval is None or self.equivalence is None:
            return "not read (fewer than 2 runs in an arm)"
        significant = (self.interval.p_value if self.p_holm is None else self.p_holm) <= self.alpha
        if significant:
            return "contradicts"
        return "equivalent" if self.equivalence.equivalent else "inconclusive"


def values(runs: pd.DataFrame, method: str, dataset: str, metric: str, seeds: Sequence[int]) -> np.ndarray:
    """The complete runs' ``metric`` of one cell, on the protocol's seeds, in seed order."""
    cell = complete_runs(runs, method, dataset)
    cell = cell[cell.seed.isin(list(seeds))].sort_values("seed")
    return cell[metric].dropna().to_numpy(dtype=float)


def read_one(runs: pd.DataFrame, dataset: str, metric: str, seeds: Sequence[int],
             alpha: float = 0.05) -> Reading:
    ours, official = (values(runs, m, dataset, metric, seeds) for m in (OURS, OFFICIAL))
    if min(len(ours), len(official)) < 2:
        return Reading(dataset, metric, ours, official, None, None, alpha=alpha)
    return Reading(dataset, metric, ours, official,
                   difference_interval(ours, official, paired=False, confidence=1 - alpha),
                   equivalence(ours, official, MARGIN, paired=False, alpha=alpha), alpha=alpha)


def read_all(runs: pd.DataFrame, rows: dict[str, Sequence[int]] = ROWS,
             primary_alpha: float = 0.05) -> list[Reading]:
    """Every (row, metric) of the protocol, the primary first (at ``primary_alpha``); the
    secondaries at 0.05 with Holm's p over their family."""
    readings = [read_one(runs, d, m, seeds, primary_alpha if (d, m) == PRIMARY else 0.05)
                for d, seeds in rows.items() for m in METRICS]
    primary = [r for r in readings if (r.dataset, r.metric) == PRIMARY]
    family = {(r.dataset, r.metric): r for r in readings if (r.dataset, r.metric) != PRIMARY and r.interval}
    adjusted = read_family({k: r.interval for k, r in family.items()})
    secondary = [Reading(r.dataset, r.metric, r.ours, r.official, r.interval, r.equivalence,
                         adjusted[(r.dataset, r.metric)].p_holm if (r.dataset, r.metric) in adjusted else None)
                 for r in readings if (r.dataset, r.metric) != PRIMARY]
    return primary + secondary


def amended_rows() -> dict[str, Sequence[int]]:
    return {**ROWS, PRIMARY[0]: AMENDED_SEEDS}


def amendment_complete(runs: pd.DataFrame) -> bool:
    """The amendment's stop rule: read only once both arms have all 20 hopper-medium seeds."""
    return all(len(values(runs, m, PRIMARY[0], PRIMARY[1], AMENDED_SEEDS)) == len(AMENDED_SEEDS)
               for m in (OURS, OFFICIAL))


def with_online_gain(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs with ``online_gain`` = final - end of pretraining (one run's own two scores)."""
    return runs.assign(**{GAIN: runs.final_score - runs.offline_score})


def read_online_gain(runs: pd.DataFrame) -> Reading:
    """Exploratory (no verdict): the online gain, ours - official, 95% Welch, on seeds 0-19."""
    return read_one(with_online_gain(runs), PRIMARY[0], GAIN, AMENDED_SEEDS)


def _ms(x: np.ndarray) -> str:
    if len(x) == 0:
        return "—"
    sd = f" ± {x.std(ddof=1):.1f}" if len(x) > 1 else ""
    return f"{x.mean():.1f}{sd} (n={len(x)})"


def _ci(i: Interval | None) -> str:
    return "—" if i is None else f"{i.estimate:+.1f} [{i.low:+.1f}, {i.high:+.1f}]"


def _level(confidence: float) -> str:
    return f"{100 * confidence:.1f}".rstrip("0").rstrip(".") + "%"


def comparison_table(readings: list[Reading]) -> list[str]:
    lines = ["| row | metric | ours | official | ours − official, Welch (level) | p | p (Holm) | TOST interval (level) | verdict |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in readings:
        role = " (primary)" if (r.dataset, r.metric) == PRIMARY else ""
        p = "—" if r.interval is None else f"{r.interval.p_value:.3f}"
        holm = "primary" if role else ("—" if r.p_holm is None else f"{r.p_holm:.3f}")
        ci = _ci(r.interval) + ("" if r.interval is None else f" ({_level(r.interval.confidence)})")
        tost = "—" if r.equivalence is None else (
            f"{_ci(r.equivalence.interval)} ({_level(r.equivalence.interval.confidence)})")
        lines.append(f"| {r.dataset} | {METRICS[r.metric]}{role} | {_ms(r.ours)} | {_ms(r.official)} | "
                     f"{ci} | {p} | {holm} | {tost} | **{r.verdict}** |")
    return lines


def amendment_lines(runs: pd.DataFrame) -> list[str]:
    """The amendment of 2026-12-04: the second look at 20 seeds per arm, or how far its runs are."""
    head = ["## Amendment of 2026-12-04: hopper-medium at 20 seeds per arm", ""]
    if not amendment_complete(runs):
        done = {m: len(values(runs, m, PRIMARY[0], PRIMARY[1], AMENDED_SEEDS)) for m in (OURS, OFFICIAL)}
        return head + [f"Not read: the stop rule waits for all {len(AMENDED_SEEDS)} seeds per arm "
                       f"(complete: ours {done[OURS]}, official {done[OFFICIAL]}).", ""]
    gain = read_online_gain(runs)
    low = {m: int((values(runs, m, PRIMARY[0], PRIMARY[1], AMENDED_SEEDS) < COLLAPSE_BELOW).sum())
           for m in (OURS, OFFICIAL)}
    return head + [
        f"The primary's second look, at O'Brien-Fleming's nominal alpha {SECOND_LOOK_ALPHA} (the first "
        "look, above, did not cross its boundary); end of pretraining and the other rows as above, "
        "Holm over the family of five.", "",
        *comparison_table(read_all(runs, amended_rows(), SECOND_LOOK_ALPHA)), "",
        "Exploratory, no verdict (formed after the first look): the online gain within a run "
        "(final − end of pretraining).", "",
        "| row | ours | official | ours − official, 95% Welch | p |", "|---|---|---|---|---|",
        f"| {PRIMARY[0]} | {_ms(gain.ours)} | {_ms(gain.official)} | {_ci(gain.interval)} | "
        + ("—" if gain.interval is None else f"{gain.interval.p_value:.3f}") + " |", "",
        f"Runs ending below {COLLAPSE_BELOW:g}: ours {low[OURS]} of {len(AMENDED_SEEDS)}, "
        f"official {low[OFFICIAL]} of {len(AMENDED_SEEDS)}.", ""]


def per_seed_table(runs: pd.DataFrame) -> list[str]:
    lines = ["| row | seed | ours: end of pretraining | ours: final | official: end of pretraining | official: final |",
             "|---|---|---|---|---|---|"]
    for dataset, seeds in amended_rows().items():
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
        for dataset, seeds in amended_rows().items():
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
        *amendment_lines(runs),
        "## Per seed", "", *per_seed_table(runs), "",
        "## Where the runs ran", "",
        "Times are context, not a speed comparison: seeds 0-9 of the two arms ran on different days; "
        "seeds 10-19 ran in one sitting, one launcher per arm (`paper_tables/perf/PERF.md` compares their "
        "wall time, and the per-update cost measured alternating).", "",
        *provenance_lines(runs), ""]


def load(results, preset: str) -> pd.DataFrame:
    """Both arms' runs: Table 1's (ours), the experiments ``official`` and ``official_more``."""
    frames = [agg.load_runs(results, preset, e) for e in EXPERIMENTS]
    filled = [f.dropna(axis=1, how="all") for f in frames if not f.empty]
    if not filled:
        return frames[0]
    columns = list(dict.fromkeys(c for f in frames for c in f.columns))
    return pd.concat(filled, ignore_index=True).reindex(columns=columns)


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
