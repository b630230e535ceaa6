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

The amendments of 2026-12-06: walker2d-medium's two metrics are read a second time at 10 seeds
per arm (nominal alpha 0.048, Holm over the family as read then), only once both arms have all
ten, with two exploratory readings of the runs' curves beside them; hopper-medium-replay is read
from the experiment ``official_replay`` alone (both arms on a new file they share), never from
Table 1's runs on the old file, which are shown beside it without a verdict. A row whose runs
span two data files (content hashes) is refused, not read.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping, Sequence
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
from benchmarks.reproduction import (
    MixedContents,
    analysis_parser,
    complete_runs,
    emit_report,
    missing_arm,
)

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
# amendment of 2026-12-06: this row's both arms come from this experiment only (a file they share)
REPLAY_EXPERIMENT = "official_replay"
REPLAY_ROWS = ("hopper-medium-replay",)
# amendment of 2026-12-06: walker2d-medium's second look at 10 seeds per arm (same boundary)
WALKER = "walker2d-medium"
WALKER_SEEDS, WALKER_FRESH = range(10), range(5, 10)
CURVE_READINGS = {"pretrain_last3": "mean of the last three pretraining evaluations",
                  "online_mean": "mean of the online evaluations"}


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


def read_all(runs: pd.DataFrame, rows: dict[str, Sequence[int]] = ROWS, primary_alpha: float = 0.05,
             alphas: Mapping[tuple[str, str], float] | None = None) -> list[Reading]:
    """Every (row, metric) of the protocol, the primary first (at ``primary_alpha``); the
    secondaries at 0.05 (or their level in ``alphas``) with Holm's p over their family."""
    def alpha(d: str, m: str) -> float:
        return primary_alpha if (d, m) == PRIMARY else (alphas or {}).get((d, m), 0.05)
    readings = [read_one(runs, d, m, seeds, alpha(d, m)) for d, seeds in rows.items() for m in METRICS]
    primary = [r for r in readings if (r.dataset, r.metric) == PRIMARY]
    family = {(r.dataset, r.metric): r for r in readings if (r.dataset, r.metric) != PRIMARY and r.interval}
    adjusted = read_family({k: r.interval for k, r in family.items()})
    secondary = [dataclasses.replace(r, p_holm=adjusted[(r.dataset, r.metric)].p_holm
                                     if (r.dataset, r.metric) in adjusted else None)
                 for r in readings if (r.dataset, r.metric) != PRIMARY]
    return primary + secondary


def amended_rows() -> dict[str, Sequence[int]]:
    return {**ROWS, PRIMARY[0]: AMENDED_SEEDS}


def report_rows() -> dict[str, Sequence[int]]:
    """Every seed of every row some reading uses (the per-seed and provenance tables)."""
    return {**amended_rows(), WALKER: WALKER_SEEDS}


def sourced(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs each row is read from: ``REPLAY_ROWS`` only from ``REPLAY_EXPERIMENT`` (both arms),
    every other row never from it."""
    return runs[runs.dataset.isin(REPLAY_ROWS) == (runs.experiment == REPLAY_EXPERIMENT)]


def check_contents(runs: pd.DataFrame) -> None:
    """Raise :class:`MixedContents` naming the runs and contents of a row whose two arms' runs (any
    status) name more than one data file; runs that name none are not counted."""
    if "data_file" not in runs:
        return
    arms = runs[runs.method.isin((OURS, OFFICIAL)) & runs.data_file.notna()]
    for dataset, row in arms.groupby("dataset", sort=True):
        if row.data_file.nunique() > 1:
            named = "; ".join(f"content {c}: {', '.join(sorted(g.run_id))}"
                              for c, g in row.groupby("data_file", sort=True))
            raise MixedContents(f"row {dataset!r} is not read: its runs span {row.data_file.nunique()} "
                                f"data files ({named})")


def content_of(runs: pd.DataFrame, dataset: str) -> str | None:
    """The one data file (content prefix) of a row's two arms, None when none is recorded."""
    if "data_file" not in runs:
        return None
    files = runs[runs.method.isin((OURS, OFFICIAL)) & (runs.dataset == dataset)].data_file.dropna().unique()
    return str(files[0]) if len(files) == 1 else None


def row_labels(runs: pd.DataFrame) -> dict[str, str]:
    """Row name in the tables: ``REPLAY_ROWS`` carry their file's content prefix."""
    return {d: d + (f" (file {c})" if d in REPLAY_ROWS and (c := content_of(runs, d)) else "")
            for d in report_rows()}


def arms_complete(runs: pd.DataFrame, dataset: str, seeds: Sequence[int]) -> bool:
    """Whether both arms have a final score on every one of ``seeds`` of ``dataset``."""
    return all(len(values(runs, m, dataset, "final_score", seeds)) == len(seeds) for m in (OURS, OFFICIAL))


def amendment_complete(runs: pd.DataFrame) -> bool:
    """The amendment's stop rule: read only once both arms have all 20 hopper-medium seeds."""
    return arms_complete(runs, PRIMARY[0], AMENDED_SEEDS)


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


def comparison_table(readings: list[Reading], labels: Mapping[str, str] | None = None) -> list[str]:
    lines = ["| row | metric | ours | official | ours − official, Welch (level) | p | p (Holm) | TOST interval (level) | verdict |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in readings:
        role = " (primary)" if (r.dataset, r.metric) == PRIMARY else ""
        p = "—" if r.interval is None else f"{r.interval.p_value:.3f}"
        holm = "primary" if role else ("—" if r.p_holm is None else f"{r.p_holm:.3f}")
        ci = _ci(r.interval) + ("" if r.interval is None else f" ({_level(r.interval.confidence)})")
        tost = "—" if r.equivalence is None else (
            f"{_ci(r.equivalence.interval)} ({_level(r.equivalence.interval.confidence)})")
        lines.append(f"| {(labels or {}).get(r.dataset, r.dataset)} | {METRICS[r.metric]}{role} | "
                     f"{_ms(r.ours)} | {_ms(r.official)} | "
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


def walker_complete(runs: pd.DataFrame) -> bool:
    """The walker2d amendment's stop rule: both arms have all ten walker2d-medium seeds."""
    return arms_complete(runs, WALKER, WALKER_SEEDS)


def walker_readings(runs: pd.DataFrame) -> list[Reading]:
    """The secondary family as read at walker2d's second look: walker2d-medium at n = 10 and
    ``SECOND_LOOK_ALPHA``, hopper-medium at 20 seeds once its amendment is complete, the others as
    registered; Holm over the family."""
    rows = {**(amended_rows() if amendment_complete(runs) else ROWS), WALKER: WALKER_SEEDS}
    alphas = {(WALKER, m): SECOND_LOOK_ALPHA for m in METRICS}
    return [r for r in read_all(runs, rows, alphas=alphas) if (r.dataset, r.metric) != PRIMARY]


def curve_readings(curves: pd.DataFrame) -> pd.DataFrame:
    """(experiment, run_id) -> each run's ``CURVE_READINGS`` from its evaluation rows (the frame of
    ``aggregate.load_results``); NaN where a run has fewer than three pretraining or no online ones."""
    out = []
    for (experiment, run_id), c in curves[curves.step >= 0].groupby(["experiment", "run_id"], sort=True):
        pre = c[c.phase == "pretrain"].sort_values("updates").score_mean
        online = c[c.phase == "online"].score_mean
        out.append({"experiment": experiment, "run_id": run_id,
                    "pretrain_last3": pre.tail(3).mean() if len(pre) >= 3 else np.nan,
                    "online_mean": online.mean() if len(online) else np.nan})
    return pd.DataFrame(out, columns=["experiment", "run_id", *CURVE_READINGS])


def walker_exploratory_lines(runs: pd.DataFrame, curves: pd.DataFrame | None) -> list[str]:
    """The walker2d amendment's exploratory readings (no verdict), at n = 10 and on seeds 5-9."""
    if curves is None:
        return ["Exploratory readings: not made (the runs' curves were not loaded).", ""]
    merged = runs.merge(curve_readings(curves), on=["experiment", "run_id"], how="left")
    lines = ["Exploratory, no verdict (proposed after the n = 5 curves were seen): each run's "
             + " and ".join(CURVE_READINGS.values()) + ", ours − official.", "",
             "| reading | seeds | ours | official | ours − official, 95% Welch | p |", "|---|---|---|---|---|---|"]
    for metric, name in CURVE_READINGS.items():
        for label, seeds in (("0-9", WALKER_SEEDS), ("5-9 (fresh)", WALKER_FRESH)):
            r = read_one(merged, WALKER, metric, seeds)
            p = "—" if r.interval is None else f"{r.interval.p_value:.3f}"
            lines.append(f"| {name} | {label} | {_ms(r.ours)} | {_ms(r.official)} | {_ci(r.interval)} | {p} |")
    return lines + [""]


def walker_lines(runs: pd.DataFrame, curves: pd.DataFrame | None = None) -> list[str]:
    """The walker2d amendment of 2026-12-06: its second look at 10 seeds per arm, or how far its
    runs are."""
    head = [f"## Amendment of 2026-12-06: {WALKER} at {len(WALKER_SEEDS)} seeds per arm", ""]
    if not walker_complete(runs):
        done = {m: len(values(runs, m, WALKER, "final_score", WALKER_SEEDS)) for m in (OURS, OFFICIAL)}
        return head + [f"Not read: the stop rule waits for all {len(WALKER_SEEDS)} seeds per arm "
                       f"(complete: ours {done[OURS]}, official {done[OFFICIAL]}).", ""]
    return head + [
        f"{WALKER}'s second look, at O'Brien-Fleming's nominal alpha {SECOND_LOOK_ALPHA}; the secondary "
        "family as read now, Holm over it (its other rows at their own levels).", "",
        *comparison_table(walker_readings(runs), row_labels(runs)), "",
        *walker_exploratory_lines(runs, curves)]


def replay_lines(runs: pd.DataFrame, table1: pd.DataFrame) -> list[str]:
    """The hopper-medium-replay amendment of 2026-12-06: where the row is read from, and, without
    a verdict, ours on Table 1's file (``table1``: its runs) beside ours on the shared one."""
    d = REPLAY_ROWS[0]
    done = {m: len(values(runs, m, d, "final_score", ROWS[d])) for m in (OURS, OFFICIAL)}
    sets = {"Table 1 (`table1`)": complete_runs(table1, OURS, d),
            f"`{REPLAY_EXPERIMENT}`": complete_runs(runs, OURS, d)}
    lines = [f"## Amendment of 2026-12-06: {d} on a file both arms share", "",
             f"Both arms of the {d} row above come from `{REPLAY_EXPERIMENT}` only (complete, seeds "
             f"{ROWS[d][0]}-{ROWS[d][-1]}: ours {done[OURS]}, official {done[OFFICIAL]} of {len(ROWS[d])}); "
             "it is the registered first look once both arms have all of them. Table 1's `odt` runs of "
             "this row are on another file and take no part in it.", "",
             "Also reported, no verdict: ours on each file, compared as sets across files.", "",
             "| ours on | data file | end of pretraining | final |", "|---|---|---|---|"]
    for label, cell in sets.items():
        files = agg.tally(cell.data_file) if len(cell) else "—"
        lines.append(f"| {label} | {files} | {_ms(cell.offline_score.dropna().to_numpy(dtype=float))} | "
                     f"{_ms(cell.final_score.dropna().to_numpy(dtype=float))} |")
    old, new = sets.values()
    diffs = [f"{METRICS[m]} {_ci(difference_interval(new[m].dropna(), old[m].dropna(), paired=False))}"
             for m in ("offline_score", "final_score") if min(new[m].count(), old[m].count()) >= 2]
    if diffs:
        lines += ["", "New file − Table 1's file, 95% Welch: " + "; ".join(diffs) + "."]
    return lines + [""]


def per_seed_table(runs: pd.DataFrame) -> list[str]:
    lines = ["| row | seed | ours: end of pretraining | ours: final | official: end of pretraining | official: final |",
             "|---|---|---|---|---|---|"]
    labels = row_labels(runs)
    for dataset, seeds in report_rows().items():
        for s in seeds:
            cells = []
            for method in (OURS, OFFICIAL):
                run = complete_runs(runs, method, dataset)
                run = run[run.seed == s]
                cells += ([f"{run.offline_score.iloc[0]:.1f}", f"{run.final_score.iloc[0]:.1f}"]
                          if len(run) else ["—", "—"])
            if any(c != "—" for c in cells[2:]):
                lines.append(f"| {labels[dataset]} | {s} | " + " | ".join(cells) + " |")
    return lines


def provenance_lines(runs: pd.DataFrame) -> list[str]:
    """Code version, CPU, torch, data and cost of each arm's complete runs (context, not a verdict)."""
    lines = ["| arm | row | runs | " + " | ".join(agg.ORIGIN.values()) + " | wall h per run, median [min, max] | core-h |",
             "|---|---|---|" + "---|" * len(agg.ORIGIN) + "---|---|"]
    labels = row_labels(runs)
    for method in (OURS, OFFICIAL):
        for dataset, seeds in report_rows().items():
            cell = complete_runs(runs, method, dataset)
            cell = cell[cell.seed.isin(list(seeds))]
            if cell.empty:
                continue
            hours = cell.wall_time.dropna().to_numpy() / 3600
            span = f"{np.median(hours):.2f} [{hours.min():.2f}, {hours.max():.2f}]" if len(hours) else "—"
            core = cell.core_seconds.dropna()
            core_h = f"{core.sum() / 3600:.2f}" + ("" if len(core) == len(cell) else f" ({len(core)} timed)")
            origin = " | ".join(agg.tally(cell[c]) for c in agg.ORIGIN)
            lines.append(f"| {method} | {labels[dataset]} | {len(cell)} | {origin} | {span} | {core_h} |")
    return lines


def report_lines(loaded: pd.DataFrame, preset: str, curves: pd.DataFrame | None = None) -> list[str]:
    """The report from every loaded run (:func:`load`); raises :class:`MixedContents` for a row
    whose runs span two data files."""
    runs = sourced(loaded)
    check_contents(runs)
    readings = read_all(runs)
    return [
        f"# Our ODT against the official online-dt code (preset `{preset}`)", "",
        "Generated by `python -m benchmarks.official.comparison` from the records; the protocol is "
        "`PROTOCOL-official-cpu.md`. Data generated here by the project's forge (not D4RL); budget: "
        f"the `{preset}` preset's (2500 pretraining updates, 5000 online samples). Scores are D4RL-"
        "normalised (100 = expert), each the mean of 10 mean-action episodes. Ours: Table 1's `odt` runs; "
        "official: `official-odt` runs of the experiment `official` (facebookresearch/online-dt, "
        "c376fa1, unmodified, through `benchmarks/official/`); both arms of "
        f"{', '.join(REPLAY_ROWS)}: the experiment `{REPLAY_EXPERIMENT}` only, on another data file than "
        "Table 1's. Sets, not pairs: the two codebases "
        f"share no random streams. Equivalence margin ±{MARGIN:g} points.", "",
        *comparison_table(readings, row_labels(runs)), "",
        "Verdicts: **contradicts**: the 95% interval excludes 0 (for the secondaries, Holm's adjusted "
        "p <= 0.05 over the family of the five); **equivalent**: the 90% interval lies inside the "
        "margin; **inconclusive**: neither. A row whose arms have fewer than 2 complete runs is not read.", "",
        *amendment_lines(runs),
        *walker_lines(runs, curves),
        *replay_lines(runs, loaded[loaded.experiment == "table1"]),
        "## Per seed", "", *per_seed_table(runs), "",
        "## Where the runs ran", "",
        "Times are context, not a speed comparison: seeds 0-9 of the two arms ran on different days; "
        "seeds 10-19 ran in one sitting, one launcher per arm (`paper_tables/perf/PERF.md` compares their "
        "wall time, and the per-update cost measured alternating).", "",
        *provenance_lines(runs), ""]


def load(results, preset: str) -> pd.DataFrame:
    """Both arms' runs: Table 1's (ours), the experiments ``official``, ``official_more`` and
    ``official_replay``; :func:`sourced` picks each row's."""
    frames = [agg.load_runs(results, preset, e) for e in (*EXPERIMENTS, REPLAY_EXPERIMENT)]
    filled = [f.dropna(axis=1, how="all") for f in frames if not f.empty]
    if not filled:
        return frames[0]
    columns = list(dict.fromkeys(c for f in frames for c in f.columns))
    return pd.concat(filled, ignore_index=True).reindex(columns=columns)


def load_curves(results, preset: str) -> pd.DataFrame:
    """The walker2d-medium evaluation rows of the experiments :func:`load` reads it from."""
    frames = [agg.load_results(results, preset, e) for e in EXPERIMENTS]
    rows = pd.concat([f for f in frames if not f.empty], ignore_index=True)
    return rows[rows.dataset == WALKER]


def main(argv: list[str] | None = None) -> int:
    parser = analysis_parser("python -m benchmarks.official.comparison", __doc__,
                             "paper_tables/official_cpu.md", seeds=False)
    args = parser.parse_args(argv)
    runs = load(args.results, args.preset)
    if missing_arm(runs, OFFICIAL, args.preset, args.results):
        return 1
    curves = load_curves(args.results, args.preset) if walker_complete(sourced(runs)) else None
    return emit_report(lambda: report_lines(runs, args.preset, curves), args.out)


if __name__ == "__main__":
    sys.exit(main())
