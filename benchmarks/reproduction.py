"""``python -m benchmarks.reproduction``: the numbers behind a reproduction report.

Table 1 (``benchmarks.tables``) gives mean +- std per cell. A reproduction also has to say
whether the paper's claim held: after pretraining, ODT gains more from the online budget than
IQL does. This module computes, from the ``table1`` runs of one preset:

* the registered readings of ``PROTOCOL-table1-cpu.md`` (P1, P2 on the Hopper rows) and of
  ``PROTOCOL-control-pretraining-cpu.md`` (P1m), under ``PROTOCOL-reanalysis.md``: the primary
  comparisons read alone, the others as one Holm family per protocol, each in one of four words
  (supports, contradicts, equivalent, inconclusive);
* the finetuning gains, each with a 95% t-interval over seeds:
  - delta ODT as in Table 1 (described): ODT (0.2m) minus ODT (offline), two separate sets of
    runs (the online protocol's final score against the offline protocol's);
  - delta ODT within a run: each ``odt`` run's mean of its last k online evaluations minus its
    own score after pretraining (k = ``LAST_K``, fewer on a row whose runs evaluate fewer times
    online: :func:`row_k`);
  - delta IQL within a run, the same way (Table 1's column keeps IQL's final score);
  - delta ODT minus delta IQL, Table 1's way and within run (independent groups);
* the gain at the first online evaluation of each ``odt`` and ``iql`` run (ODT: after
  ``eval_every_rounds`` rounds; IQL: after ``eval_every_samples`` samples), its score there
  minus its score after pretraining: a fixed point of the curve, not a chosen best one;
* ODT against its no-new-data control (``odt-control``), paired by seed: what online data adds,
  and the control's own gain (what the finetuning schedule does without new data);
* for that comparison, the seeds a resolved interval would need (a planning projection from the
  per-seed spread) and, exploratory and post hoc, the same difference read from the mean of each
  run's last 2 and 3 online evaluations (no verdict is read from those);
* the wall time of each method (minutes per run) and the compute the runs used in total;
* every seed's scores, so each mean can be checked.

Intervals: a signed sum of the means of independent groups (a difference of arms, a sum over
rows) gets a t-interval with Welch-Satterthwaite degrees of freedom
(``benchmarks.intervals.combination_interval``); one group of per-seed differences is the paired
t-interval. They replaced the percentile bootstrap on 2026-12-04 (``PROTOCOL-reanalysis.md``:
at 3-10 seeds the bootstrap's 95% interval covers far less than 95%).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks import aggregate as agg
from benchmarks import records as rec
from benchmarks.experiments import TABLE1_DATASETS
from benchmarks.intervals import (
    Claim,
    Interval,
    Reading,
    combination_interval,
    mean_interval,
    read_claims,
)
from benchmarks.tables import write_text
from rlbase.presets import PRESETS

CI_LEVEL = 0.95
ALPHA = 1.0 - CI_LEVEL  # every verdict: two-sided tests at 0.05, TOST at 0.05 (its 90% interval)
MIN_SEEDS_FOR_INTERVAL = 2  # a group of one seed has no spread: no interval
INTERVAL_METHOD = ("95% t-interval over seeds (Welch-Satterthwaite degrees of freedom for a sum of "
                   "independent groups' means; paired t on per-seed differences)")
# PROTOCOL-reanalysis.md (2026-12-04): the equivalence margins, per domain
LOCOMOTION_MARGIN = 5.0  # D4RL-normalised score points
ANTMAZE_MARGIN = 10.0  # success points (percentage points of episodes reaching the goal)
ANTMAZE_FLOOR = 5.0  # an AntMaze comparison whose every run of every arm scores <= this is at the floor
LAST_K = 2  # within-run deltas: the mean of a run's last k online evaluations (row_k: fewer where runs have fewer)


@dataclass(frozen=True)
class Estimate:
    """A signed combination of group means with its 95% t-interval: ``n`` is the smallest group's
    seed count; ``se``, ``df`` and ``p_value`` (two-sided, for 0) are NaN without an interval."""

    mean: float
    lo: float
    hi: float
    n: int
    se: float = float("nan")
    df: float = float("nan")
    p_value: float = float("nan")

    def text(self, signed: bool = True, digits: int = 1) -> str:
        """'mean [lo, hi] (n=k)' to ``digits`` decimals; ``signed`` puts + on positive numbers (gains,
        differences), not on scores. With one seed (in the smallest group) there is no spread to
        build an interval from, so none is printed."""
        if self.n == 0:
            return "—"
        f = f"{'+' if signed else ''}.{digits}f"
        if self.n < MIN_SEEDS_FOR_INTERVAL:
            return f"{self.mean:{f}} (n={self.n}: no interval from one seed)"
        return f"{self.mean:{f}} [{self.lo:{f}}, {self.hi:{f}}] (n={self.n})"

    @property
    def interval(self) -> Interval | None:
        """The t-interval behind the estimate (None where there is none)."""
        if self.n < MIN_SEEDS_FOR_INTERVAL or not np.isfinite(self.se):
            return None
        return Interval(self.mean, self.lo, self.hi, self.n, None, CI_LEVEL, "t", self.p_value, self.se, self.df)


def combination_estimate(groups: Sequence[tuple[Sequence[float], float]]) -> Estimate:
    """sum(sign * mean(values)) over independent groups with its 95% t-interval
    (``intervals.combination_interval``); n is the smallest group's size. No group, or an empty
    one: n = 0 and no number. A group of one seed: the point estimate without an interval."""
    arrays = [(np.asarray(v, dtype=float), float(sign)) for v, sign in groups]
    if not arrays or any(a.size == 0 for a, _ in arrays):
        return Estimate(float("nan"), float("nan"), float("nan"), 0)
    point = float(sum(sign * a.mean() for a, sign in arrays))
    n = min(a.size for a, _ in arrays)
    if n < MIN_SEEDS_FOR_INTERVAL:
        return Estimate(point, float("nan"), float("nan"), n)
    i = combination_interval(arrays, CI_LEVEL)
    return Estimate(i.estimate, i.low, i.high, n, i.se, i.df, i.p_value)


# ----- verdicts: one vocabulary, primaries alone, the rest of a protocol as one Holm family ------
@dataclass(frozen=True)
class Registered:
    """One registered comparison of a protocol, ready to be read.

    ``expected_sign`` +1 / -1: the claim predicts a difference of that sign; None: it predicts no
    difference beyond ``margin``. ``status`` (e.g. "incomplete (n=3 < 5)", "out of regime (...)")
    withholds the verdict and keeps the comparison out of its family."""

    key: str
    estimate: Estimate
    expected_sign: int | None
    margin: float | None
    primary: bool = False
    status: str | None = None


@dataclass(frozen=True)
class Verdict:
    """A registered comparison's reading: its word and the p-values it rests on."""

    word: str  # supports / contradicts / equivalent / inconclusive, or the comparison's status
    primary: bool
    reading: Reading | None  # None for a status

    def text(self) -> str:
        """e.g. "**supports** (primary; p 0.004)", "inconclusive (p 0.030, Holm 0.24)"; with the
        TOST p-values where the claim has a margin."""
        if self.reading is None:
            return self.word
        r = self.reading
        word = f"**{self.word}**" if self.word in ("supports", "contradicts", "equivalent") else self.word
        # the test behind supports / contradicts: against 0, or (a claim of no difference) against the margin
        test = "p" if r.claim.expected_sign is not None else f"p(beyond ±{r.claim.margin:g})"
        if self.primary:
            parts = [f"primary; {test} {p_cell(r.p_difference)}"]
            if r.p_equivalence is not None:
                parts.append(f"TOST ±{r.claim.margin:g} p {p_cell(r.p_equivalence)}")
        else:
            parts = [f"{test} {p_cell(r.p_difference)}, Holm {p_cell(r.p_difference_holm)}"]
            if r.p_equivalence is not None:
                parts.append(f"TOST ±{r.claim.margin:g} p {p_cell(r.p_equivalence)}, Holm {p_cell(r.p_equivalence_holm)}")
        return f"{word} ({'; '.join(parts)})"


def p_cell(p: float | None) -> str:
    """A report's p-value cell: three decimals, '<0.001' below that, '—' where there is none."""
    return "—" if p is None else "<0.001" if p < 0.001 else f"{p:.3f}"


def read_protocol(comparisons: Sequence[Registered], alpha: float = ALPHA) -> dict[str, Verdict]:
    """Each comparison's verdict (``PROTOCOL-reanalysis.md``): a primary is read alone at
    ``alpha``; every other comparison with an interval and no status is one member of a single
    Holm family (``intervals.read_claims``); the rest keep their status as their word."""
    out: dict[str, Verdict] = {}
    family: dict[str, Claim] = {}
    for c in comparisons:
        interval = c.estimate.interval
        if c.status is not None or interval is None:
            out[c.key] = Verdict(c.status or f"no interval (n={c.estimate.n})", c.primary, None)
        elif c.primary:
            (reading,) = read_claims({c.key: Claim(interval, c.expected_sign, c.margin)}, alpha).values()
            out[c.key] = Verdict(reading.verdict, True, reading)
        else:
            family[c.key] = Claim(interval, c.expected_sign, c.margin)
    for key, reading in read_claims(family, alpha).items():
        out[key] = Verdict(reading.verdict, False, reading)
    return {c.key: out[c.key] for c in comparisons}


def margin_for(dataset: str) -> float:
    """The registered equivalence margin of a dataset's (or domain's) comparisons."""
    return ANTMAZE_MARGIN if dataset.startswith("antmaze") else LOCOMOTION_MARGIN


def at_floor(dataset: str, *arms: Sequence[float]) -> bool:
    """An AntMaze comparison whose every run, in every arm, scores at most ``ANTMAZE_FLOOR``
    success points: out of the regime a claim about learning is about (nothing to compare)."""
    values = [float(v) for arm in arms for v in arm]
    return dataset.startswith("antmaze") and bool(values) and max(values) <= ANTMAZE_FLOOR


def seed_status(e: Estimate, min_seeds: int) -> str | None:
    """"incomplete (n=k < m)" below the protocol's seed floor, else None."""
    return None if e.n >= min_seeds else f"incomplete (n={e.n} < {min_seeds})"


def analysis_parser(prog: str, doc: str | None, out_example: str, seeds: bool = True) -> argparse.ArgumentParser:
    """A protocol analysis CLI's parser with the options every one shares: --preset, --results,
    --out (whose help names ``out_example``, e.g. ``paper_tables/rows_protocol_cpu.md``) and, where
    the analysis may be cut to some seeds (``seeds``), --seeds."""
    p = argparse.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="cpu", choices=PRESETS)
    p.add_argument("--results", type=Path, default=rec.DEFAULT_ROOT, help="results root (default: results/ or $ODT_RESULTS)")
    if seeds:
        p.add_argument("--seeds", type=int, nargs="+", default=None,
                       help="only these seeds (e.g. a protocol's fresh seeds: --seeds 5 6 7 8 9)")
    p.add_argument("--out", type=Path, default=None, help=f"also write the text here, e.g. {out_example}")
    return p


# A line in a generated report below which the text is written by hand: regenerating the report
# keeps it (and everything after it) as it stands, after the new generated text.
HAND_WRITTEN = "<!-- written by hand below this line: kept when the report above is regenerated -->"


def hand_written_tail(out: Path) -> str:
    """The hand-written end of the report at ``out``, from the :data:`HAND_WRITTEN` line on;
    "" when there is no such file or line."""
    if not out.is_file():
        return ""
    text = out.read_text()
    at = text.find(HAND_WRITTEN)
    return "" if at < 0 else text[at:]


def emit(text: str, out: Path | None) -> int:
    """A protocol analysis CLI's ending: print the report, also write it to ``out`` if given,
    keeping that file's hand-written end (:data:`HAND_WRITTEN`); exit 0."""
    print(text)
    if out:
        tail = hand_written_tail(out)
        write_text(out, f"{text.rstrip()}\n\n{tail}" if tail else text)
    return 0


class MixedContents(ValueError):
    """A row whose runs were made on two different data files (content hashes)."""


def missing_arm(runs: pd.DataFrame, method: str, preset: str, results) -> bool:
    """True (after saying so on stderr) when ``runs`` hold no run of ``method``: the arm a
    comparison cannot be read without."""
    if runs.empty or not (runs.method == method).any():
        print(f"error: no {method} runs at preset {preset!r} under {results}", file=sys.stderr)
        return True
    return False


def emit_report(lines: Callable[[], list[str]], out: Path | None) -> int:
    """A comparison CLI's ending: :func:`emit` the report ``lines()`` builds, or exit 2 naming the
    row and its files where that row's runs span two data files (:class:`MixedContents`)."""
    try:
        text = "\n".join(lines())
    except MixedContents as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return emit(text, out)


def curve_report_main(argv: list[str] | None, prog: str, doc: str | None, experiment: str,
                      report_lines: Callable[[pd.DataFrame, pd.DataFrame], list[str]]) -> int:
    """The whole CLI of a tuning protocol read from its runs and their curves (``dt_sizing``,
    ``antmaze_sizing``): the shared options plus --out, then ``report_lines(runs, curve rows)``."""
    args = analysis_parser(prog, doc, f"paper_tables/{experiment}_cpu.md").parse_args(argv)
    runs = analysis_runs(args, experiment)
    if runs is None:
        return 1
    rows = agg.load_results(args.results, args.preset, experiment)
    return emit("\n".join(report_lines(runs, rows)), args.out)


def analysis_runs(args: argparse.Namespace, experiment: str) -> pd.DataFrame | None:
    """A protocol analysis CLI's runs: ``experiment``'s at ``args.preset`` under ``args.results``,
    only ``args.seeds`` if given; None (with the error printed) when there are none at all."""
    runs = agg.load_runs(args.results, args.preset, experiment)
    if runs.empty:
        print(f"error: no {experiment} runs at preset {args.preset!r} under {args.results}", file=sys.stderr)
        return None
    return runs[runs.seed.isin(args.seeds)] if args.seeds else runs


def complete_runs(runs: pd.DataFrame, method: str, dataset: str) -> pd.DataFrame:
    """The complete runs of one (method, dataset) cell."""
    return runs[(runs.method == method) & (runs.dataset == dataset) & (runs.status == "complete")]


def per_seed_difference(left: pd.DataFrame, right: pd.DataFrame, value: str) -> pd.Series:
    """Seed -> left − right ``value`` for the seeds both sets of runs have (each set one cell's
    complete runs, as :func:`complete_runs` gives them)."""
    return (left.set_index("seed")[value] - right.set_index("seed")[value]).dropna()


Groups = list[tuple[Sequence[float], float]]  # (values, sign): a signed mean of independent groups


def gain_in_run(runs: pd.DataFrame, method: str, dataset: str) -> np.ndarray:
    """Each complete run's final score minus its own end-of-pretraining (offline) score."""
    cell = complete_runs(runs, method, dataset)
    return (cell.final_score - cell.offline_score).to_numpy()


def online_evaluation_counts(curves: pd.DataFrame, runs: pd.DataFrame, method: str, dataset: str) -> pd.Series:
    """Seed -> how many online evaluations each complete run of the cell logged."""
    ok = complete_runs(runs, method, dataset).set_index("run_id").seed
    online = curves[curves.run_id.isin(ok.index) & (curves.phase == "online")]
    counts = online.groupby("run_id").size()
    return pd.Series({int(ok[rid]): int(counts.get(rid, 0)) for rid in ok.index}, dtype=int)


def row_k(curves: pd.DataFrame, runs: pd.DataFrame, dataset: str, methods: Sequence[str] = ("odt", "iql"),
          k: int = LAST_K) -> int:
    """The k a row's within-run deltas are read with (``PROTOCOL-reanalysis.md``): ``LAST_K``, or
    the fewest online evaluations any complete run of ``methods`` logged on the row if that is
    fewer (at least 1), so that every run of the row is read with the same k."""
    counts = [c for m in methods for c in online_evaluation_counts(curves, runs, m, dataset)]
    return max(1, min([k, *counts]))


def gain_last_k(curves: pd.DataFrame, runs: pd.DataFrame, method: str, dataset: str, k: int) -> pd.Series:
    """Seed -> the within-run delta: the mean of a complete run's last ``k`` online evaluations
    minus its own end-of-pretraining score (runs with fewer than ``k`` online evaluations are
    left out)."""
    last = last_evaluations_mean(curves, runs, dataset, method, k)
    pretrained = complete_runs(runs, method, dataset).set_index("seed").offline_score
    return (last - pretrained.reindex(last.index)).dropna().sort_index()


def delta_odt_groups(runs: pd.DataFrame, dataset: str) -> Groups:
    """Table 1's delta ODT: the ``odt`` runs' finals minus the ``odt-offline`` runs' (two sets of runs)."""
    odt, off = (complete_runs(runs, m, dataset).final_score.to_numpy() for m in ("odt", "odt-offline"))
    return [(odt, 1.0), (off, -1.0)]


def c1_groups(runs: pd.DataFrame, dataset: str) -> Groups:
    """Table 1's (the paper's) delta ODT minus delta IQL: IQL's final minus its offline score."""
    return delta_odt_groups(runs, dataset) + [(gain_in_run(runs, "iql", dataset), -1.0)]


def c1_within_run_groups(runs: pd.DataFrame, curves: pd.DataFrame, dataset: str) -> Groups:
    """delta ODT minus delta IQL, each read within its runs with the row's k (:func:`row_k`)."""
    k = row_k(curves, runs, dataset)
    return [(gain_last_k(curves, runs, "odt", dataset, k).to_numpy(), 1.0),
            (gain_last_k(curves, runs, "iql", dataset, k).to_numpy(), -1.0)]


def gains(runs: pd.DataFrame, curves: pd.DataFrame, dataset: str) -> dict[str, Estimate | int]:
    """The finetuning gains of one dataset (see the module docstring); ``k`` is the row's k."""
    k = row_k(curves, runs, dataset)
    return {
        "delta_odt": combination_estimate(delta_odt_groups(runs, dataset)),
        "delta_odt_within_run": combination_estimate([(gain_last_k(curves, runs, "odt", dataset, k), 1.0)]),
        "delta_iql": combination_estimate([(gain_last_k(curves, runs, "iql", dataset, k), 1.0)]),
        "delta_iql_final": combination_estimate([(gain_in_run(runs, "iql", dataset), 1.0)]),
        "delta_odt_minus_delta_iql": combination_estimate(c1_groups(runs, dataset)),
        "delta_odt_within_run_minus_delta_iql": combination_estimate(c1_within_run_groups(runs, curves, dataset)),
        "k": k,
    }


def paired_difference(runs: pd.DataFrame, dataset: str, a: str, b: str, value: str = "final_score") -> Estimate:
    """Mean over seeds of (method a - method b) on the same seed, with the paired t-interval of
    the per-seed differences; seeds missing from either method are left out."""
    diffs = per_seed_difference(complete_runs(runs, a, dataset), complete_runs(runs, b, dataset), value)
    return combination_estimate([(diffs.to_numpy(), 1.0)])


def control_comparison(runs: pd.DataFrame, dataset: str) -> dict[str, Estimate]:
    """ODT against its no-new-data control (``odt-control``): the two share each seed's
    pretraining, so ODT's gain over the control, paired by seed, is what online data adds; the
    control's own within-run gain is what the finetuning schedule does without new data."""
    odt, control = (complete_runs(runs, m, dataset) for m in ("odt", "odt-control"))
    return {
        "odt_final": combination_estimate([(odt.final_score, 1.0)]),
        "control_final": combination_estimate([(control.final_score, 1.0)]),
        "odt_minus_control": paired_difference(runs, dataset, "odt", "odt-control"),
        "odt_gain": combination_estimate([(odt.final_score - odt.offline_score, 1.0)]),
        "control_gain": combination_estimate([(control.final_score - control.offline_score, 1.0)]),
        "pretraining_mismatch": paired_difference(runs, dataset, "odt", "odt-control", "offline_score"),
    }


def pretraining_mismatches(runs: pd.DataFrame, dataset: str) -> dict[int, float]:
    """Seed -> (ODT - control) end-of-pretraining score, for the seeds where the two differ
    (they share each seed's pretraining, so any difference means they did not)."""
    diffs = per_seed_difference(complete_runs(runs, "odt", dataset), complete_runs(runs, "odt-control", dataset),
                                "offline_score")
    return {int(s): float(v) for s, v in diffs.items() if v != 0}


def control_cells(runs: pd.DataFrame, dataset: str) -> str:
    """One dataset's ODT-against-control cells, from "ODT final" to "samples ODT / control"."""
    c = control_comparison(runs, dataset)
    odt, control = (complete_runs(runs, m, dataset) for m in ("odt", "odt-control"))
    return (f"{c['odt_final'].text(False)} | {c['control_final'].text(False)} | "
            f"{c['odt_minus_control'].text()} | {c['odt_gain'].text()} | {c['control_gain'].text()} | "
            f"{odt.updates.mean():.0f} / {control.updates.mean():.0f} | "
            f"{odt.online_samples.mean():.0f} / {control.online_samples.mean():.0f}")


def control_datasets(runs: pd.DataFrame) -> list[str]:
    """The datasets with complete runs of both ``odt`` and ``odt-control``, in the paper's order."""
    return [d for d in dataset_order(runs) if not complete_runs(runs, "odt-control", d).empty
            and not complete_runs(runs, "odt", d).empty]


def control_lines(runs: pd.DataFrame) -> list[str]:
    """The control section (no lines if no dataset has both ``odt`` and ``odt-control`` runs)."""
    both = control_datasets(runs)
    if not both:
        return []
    lines = ["", "## What online data adds: ODT against its no-new-data control (`odt-control`)", "",
             "Paired by seed (the two share each seed's pretraining). Updates and online samples: "
             "mean per run.", "",
             "| dataset | ODT final | control final | ODT − control (paired) | ODT gain in run | "
             "control gain in run | updates ODT / control | samples ODT / control |",
             "|---|---|---|---|---|---|---|---|"]
    for d in both:
        lines.append(f"| {d} | {control_cells(runs, d)} |")
        if differing := pretraining_mismatches(runs, d):
            seeds = ", ".join(f"{s} ({diff:+.1f})" for s, diff in differing.items())
            lines.append(f"| {d}: WARNING | end-of-pretraining scores of ODT and control differ on seeds "
                         f"{seeds}: their pretraining was not one computation (a different commit or machine: "
                         f"see each run's environment.json) | | | | | | |")
    return lines + seed_projection_lines(runs, both)


Z_95, Z_POWER_80 = 1.959964, 0.841621  # standard normal quantiles: two-sided 95%, one-sided 80%


@dataclass(frozen=True)
class SeedProjection:
    """A planning projection from the spread of paired per-seed differences (not a result):
    the normal-approximation 95% half-width at a seed count, and the seeds that would give 80%
    power to exclude 0 if the true difference were the observed mean."""
    n: int
    mean: float
    sd: float

    def half_width(self, seeds: int) -> float:
        return Z_95 * self.sd / np.sqrt(seeds)

    def seeds_for_power(self) -> float:
        """Seeds for 80% power at the observed mean (inf when it is 0)."""
        if self.mean == 0:
            return float("inf")
        return float(np.ceil(((Z_95 + Z_POWER_80) * self.sd / abs(self.mean)) ** 2))


def seed_projection(diffs: Sequence[float]) -> SeedProjection | None:
    """From paired per-seed differences (None below 2 seeds: no spread to project from)."""
    x = np.asarray(diffs, dtype=float)
    if len(x) < 2:
        return None
    return SeedProjection(len(x), float(x.mean()), float(x.std(ddof=1)))


def number_cell(x: float | None, spec: str = ".0f") -> str:
    """A report's table cell: ``x`` formatted by ``spec`` (default a whole number), '—' where there
    is no number (None or nan: nothing gave one; inf: never)."""
    return format(x, spec) if x is not None and np.isfinite(x) else "—"


def mean_interval_cell(x: np.ndarray) -> str:
    """A report's cell for one arm's values: the mean and its 95% t-interval with n; the value
    alone at n = 1, '—' at n = 0."""
    if len(x) == 0:
        return "—"
    if len(x) < 2:
        return f"{x.mean():.1f} (n=1)"
    iv = mean_interval(x)
    return f"{x.mean():.1f} [{iv.low:.1f}, {iv.high:.1f}] (n={len(x)})"


def seed_projection_lines(runs: pd.DataFrame, datasets: Sequence[str]) -> list[str]:
    """How many seeds the paired ODT − control comparison would need on each dataset."""
    lines = ["", "Seeds needed (a projection from the spread so far, for planning; not a result): the "
             "normal-approximation 95% half-width of ODT − control at 10 and 20 seeds, and the seeds that "
             "would give 80% power to exclude 0 if the true difference were the mean so far.", "",
             "| dataset | seeds | mean | SD of the per-seed differences | half-width at 10 / 20 seeds "
             "| seeds for 80% power at this mean |", "|---|---|---|---|---|---|"]
    for d in datasets:
        diffs = per_seed_difference(complete_runs(runs, "odt", d), complete_runs(runs, "odt-control", d),
                                    "final_score")
        p = seed_projection(diffs.to_numpy())
        if p is None:
            continue
        lines.append(f"| {d} | {p.n} | {p.mean:+.1f} | {p.sd:.1f} | ±{p.half_width(10):.1f} / "
                     f"±{p.half_width(20):.1f} | {number_cell(p.seeds_for_power())} |")
    return lines


def per_seed_lines(runs: pd.DataFrame) -> list[str]:
    """Every seed's scores, one row per (dataset, seed): the numbers behind every mean."""
    cols = [("odt-offline", "final_score", "ODT offline"), ("odt", "offline_score", "ODT pretrained"),
            ("odt", "final_score", "ODT final"), ("odt-control", "final_score", "control final"),
            ("iql", "offline_score", "IQL offline"), ("iql", "final_score", "IQL final"),
            ("dt", "final_score", "DT"), ("sac", "final_score", "SAC")]
    ok = runs[runs.status == "complete"]
    lines = ["", "## Per-seed scores (complete runs)", "",
             "| dataset | seed | " + " | ".join(label for _, _, label in cols) + " |",
             "|---|---|" + "---|" * len(cols)]
    for d in dataset_order(ok):
        sel = ok[ok.dataset == d]
        for seed in sorted(sel.seed.unique()):
            cells = []
            for method, value, _ in cols:
                v = sel[(sel.method == method) & (sel.seed == seed)][value].dropna()
                cells.append(f"{v.iloc[0]:.1f}" if len(v) else "—")
            lines.append(f"| {d} | {seed} | " + " | ".join(cells) + " |")
    return lines


def early_gains(curves: pd.DataFrame, runs: pd.DataFrame, dataset: str, method: str) -> tuple[Estimate, float]:
    """(gain at the first online evaluation, mean online samples there) over complete runs."""
    ok = set(complete_runs(runs, method, dataset).run_id)
    e = curves[curves.run_id.isin(ok) & curves.phase.isin(["pretrain", "online"])].sort_values(["run_id", "step"])
    gains_, samples = [], []
    for _, run in e.groupby("run_id"):
        pre, online = run[run.phase == "pretrain"], run[run.phase == "online"]
        if len(pre) and len(online):
            gains_.append(online.score_mean.iloc[0] - pre.score_mean.iloc[-1])
            samples.append(online.online_samples.iloc[0])
    return combination_estimate([(gains_, 1.0)]), float(np.mean(samples)) if samples else float("nan")


POST_HOC_LAST_K = (1, 2, 3)  # k = 1 is the registered metric (the final evaluation)


def last_evaluations_mean(curves: pd.DataFrame, runs: pd.DataFrame, dataset: str, method: str,
                          k: int) -> pd.Series:
    """Seed -> the mean score of a complete run's last ``k`` online evaluations (runs with fewer
    than ``k`` are left out, so the number means one thing)."""
    ok = complete_runs(runs, method, dataset).set_index("run_id").seed
    online = curves[curves.run_id.isin(ok.index) & (curves.phase == "online")].sort_values(["run_id", "step"])
    means = {int(ok[rid]): float(run.score_mean.iloc[-k:].mean())
             for rid, run in online.groupby("run_id") if len(run) >= k}
    return pd.Series(means, dtype=float)


def last_evaluations_lines(curves: pd.DataFrame, runs: pd.DataFrame, datasets: Sequence[str]) -> list[str]:
    """ODT − control (paired) read from the mean of the last k online evaluations: exploratory."""
    lines = ["", "ODT − control (paired) by the mean of each run's last k online evaluations: **exploratory, "
             "post hoc** (the registered metric is k = 1, the final evaluation; a single evaluation "
             "catches the policy of one moment, and consecutive evaluations swing): mean [95% CI] (n), "
             "SD of the per-seed differences. No verdict is read from k > 1.", "",
             "| dataset | " + " | ".join(f"k = {k}" for k in POST_HOC_LAST_K) + " |",
             "|---|" + "---|" * len(POST_HOC_LAST_K)]
    for d in datasets:
        cells = []
        for k in POST_HOC_LAST_K:
            a, b = (last_evaluations_mean(curves, runs, d, m, k) for m in ("odt", "odt-control"))
            diffs = (a - b).dropna()
            sd = f", SD {diffs.std(ddof=1):.1f}" if len(diffs) > 1 else ""
            cells.append(combination_estimate([(diffs.to_numpy(), 1.0)]).text() + sd if len(diffs) else "—")
        lines.append(f"| {d} | " + " | ".join(cells) + " |")
    return lines


def rate_comparison(base: pd.DataFrame, other: pd.DataFrame, dataset: str) -> dict[str, Estimate]:
    """ODT's within-run gain (final - after pretraining) in ``base`` and ``other`` runs of one
    dataset, and their difference (other - base, independent groups)."""
    a, b = (complete_runs(runs, "odt", dataset) for runs in (base, other))
    gain_a, gain_b = a.final_score - a.offline_score, b.final_score - b.offline_score
    return {"base": combination_estimate([(gain_a, 1.0)]),
            "other": combination_estimate([(gain_b, 1.0)]),
            "difference": combination_estimate([(gain_b, 1.0), (gain_a, -1.0)]),
            "base_final": combination_estimate([(a.final_score, 1.0)]),
            "other_final": combination_estimate([(b.final_score, 1.0)])}


# Experiments whose runs are compared with Table 1's runs of the same dataset and seed
SIDE_EXPERIMENTS = ("finetune_lr", "iql_buffer", "control_pretraining")


def on_other_data(side: pd.DataFrame, table1: pd.DataFrame) -> pd.Series:
    """Per run of ``side``: True where it trained on another data file than every Table 1 run of
    its dataset (a remade medium-replay file is another dataset, so such runs are never paired
    with Table 1's). False where either side recorded no file (records from before content hashes)."""
    if "data_file" not in side or "data_file" not in table1:
        return pd.Series(False, index=side.index, dtype=bool)
    files = table1.dropna(subset=["data_file"]).groupby("dataset").data_file.agg(frozenset)
    return pd.Series([pd.notna(f) and d in files.index and f not in files[d]
                      for d, f in zip(side.dataset, side.data_file)], index=side.index, dtype=bool)


def side_runs(root: Path | str, preset: str, experiment: str, table1: pd.DataFrame,
              seeds: Sequence[int] | None = None, other_data: bool = False) -> pd.DataFrame:
    """An experiment's runs set beside Table 1's: those of the datasets (and, if given, the seeds)
    of the Table 1 runs summarised (--datasets, --seeds), on the data Table 1's runs used
    (``other_data``: only those on other data, which the comparisons leave out)."""
    runs = agg.load_runs(root, preset, experiment)
    if not runs.empty:
        runs = runs[runs.dataset.isin(set(table1.dataset))]
        if seeds:
            runs = runs[runs.seed.isin(list(seeds))]
        runs = runs[on_other_data(runs, table1) == other_data]
    return runs


def other_data_lines(root: Path | str, preset: str, table1: pd.DataFrame,
                     seeds: Sequence[int] | None = None) -> list[str]:
    """What the comparisons with Table 1 left out because it ran on another data file (no lines if nothing)."""
    left = []
    for experiment in SIDE_EXPERIMENTS:
        runs = side_runs(root, preset, experiment, table1, seeds, other_data=True)
        for dataset, group in runs.groupby("dataset"):
            theirs = ", ".join(sorted(set(group.data_file)))
            ours = ", ".join(sorted(set(table1[table1.dataset == dataset].data_file.dropna())))
            left.append(f"- `{experiment}` on {dataset}: {len(group)} run(s) on data file {theirs}, "
                        f"Table 1's runs on {ours}")
    if not left:
        return []
    return ["", "## Runs left out of these comparisons: other data than Table 1's", "",
            "A remade medium-replay file is another dataset (`paper_tables/datasets/README.md`); these runs "
            "are not paired with Table 1's runs of the same name:", "", *left]


def finetune_lr_lines(root: Path | str, preset: str, table1: pd.DataFrame) -> list[str]:
    """The ``finetune_lr`` diagnostic against table1's ODT runs (no lines if it has no runs)."""
    other = side_runs(root, preset, "finetune_lr", table1)
    if other.empty:
        return []
    lines = ["", "## ODT finetuned at the paper's learning rate (`finetune_lr`) against Table 1's ODT", "",
             "Since 409e3c6 the `cpu` preset itself finetunes at the paper's rate, so Table 1's ODT runs made "
             "after it repeat `finetune_lr`'s configuration (the runs made before it are in "
             "`results/archive/cpu/table1-odt-finetuned-at-floor/`).", "",
             "| dataset | Table 1 ODT: final | gain in run | `finetune_lr`: final | gain in run | difference of gains |",
             "|---|---|---|---|---|---|"]
    for dataset in dataset_order(other):
        c = rate_comparison(table1, other, dataset)
        lines.append(f"| {dataset} | {c['base_final'].text(False)} | {c['base'].text()} | {c['other_final'].text(False)} | "
                     f"{c['other'].text()} | {c['difference'].text()} |")
    return lines


def buffer_comparison(table1: pd.DataFrame, published: pd.DataFrame, dataset: str) -> dict[str, Estimate]:
    """IQL's two online buffers on one dataset (protocol S4): ``share`` is Table 1's ``iql``,
    ``published`` the ``iql_buffer`` experiment's. δ IQL of each (final - offline score, within
    run), their difference paired by seed (final scores: a seed's two runs share the offline
    phase), and P2 with the published buffer (δ ODT of Table 1 - δ IQL published)."""
    share, pub = complete_runs(table1, "iql", dataset), complete_runs(published, "iql", dataset)
    odt, odt_off = complete_runs(table1, "odt", dataset), complete_runs(table1, "odt-offline", dataset)
    pub_gain = pub.final_score - pub.offline_score
    paired = per_seed_difference(pub, share, "final_score")
    offline_gap = per_seed_difference(pub, share, "offline_score")
    return {
        "delta_share": combination_estimate([(share.final_score - share.offline_score, 1.0)]),
        "delta_published": combination_estimate([(pub_gain, 1.0)]),
        "published_minus_share": combination_estimate([(paired.to_numpy(), 1.0)]),
        "offline_gap": combination_estimate([(offline_gap.to_numpy(), 1.0)]),
        "p2_published": combination_estimate(
            [(odt.final_score, 1.0), (odt_off.final_score, -1.0), (pub_gain, -1.0)]),
    }


def buffer_lines(root: Path | str, preset: str, table1: pd.DataFrame,
                 seeds: Sequence[int] | None = None) -> list[str]:
    """The S4 section: IQL's ``published`` buffer against ``share`` (no lines without ``iql_buffer`` runs)."""
    published = side_runs(root, preset, "iql_buffer", table1, seeds)
    if published.empty:
        return []
    lines = ["", "## IQL's published buffer against the `share` window (protocol S4, experiment `iql_buffer`)", "",
             "A seed's two IQL runs share the offline phase (the `published` run starts from the `share` run's "
             "end-of-offline state where one was saved; `pretraining_from` in its record), so the offline gap "
             "should be 0 and the final difference is what the buffer does.", "",
             "| dataset | δ IQL share | δ IQL published | published − share (final, paired) | offline gap "
             "| P2 with published: δ ODT − δ IQL |", "|---|---|---|---|---|---|"]
    for dataset in dataset_order(published):
        c = buffer_comparison(table1, published, dataset)
        lines.append(f"| {dataset} | {c['delta_share'].text()} | {c['delta_published'].text()} | "
                     f"{c['published_minus_share'].text()} | {c['offline_gap'].text()} | {c['p2_published'].text()} |")
    return lines


def pretraining_length_comparison(table1: pd.DataFrame, longer: pd.DataFrame, dataset: str) -> dict[str, Estimate]:
    """P1 after the preset's pretraining (``table1``) and after a longer one (``longer``, protocol
    P1m): ODT − control paired by seed in each, and the longer minus the shorter (independent
    groups); the end-of-pretraining score of the seeds in both, longer minus shorter (paired)."""
    p1, p1m = (per_seed_difference(complete_runs(r, "odt", dataset), complete_runs(r, "odt-control", dataset),
                                   "final_score") for r in (table1, longer))
    pretrained = per_seed_difference(complete_runs(longer, "odt", dataset), complete_runs(table1, "odt", dataset),
                                     "offline_score")
    return {"p1": combination_estimate([(p1.to_numpy(), 1.0)]),
            "p1m": combination_estimate([(p1m.to_numpy(), 1.0)]),
            "p1m_minus_p1": combination_estimate([(p1m.to_numpy(), 1.0), (p1.to_numpy(), -1.0)]),
            "pretrained_gain": combination_estimate([(pretrained.to_numpy(), 1.0)])}


def control_pretraining_lines(root: Path | str, preset: str, table1: pd.DataFrame) -> list[str]:
    """Protocol P1m (experiment ``control_pretraining``) beside Table 1's P1: no lines without its runs."""
    longer = side_runs(root, preset, "control_pretraining", table1)
    if longer.empty:
        return []
    lines = ["", "## P1 after the paper's amount of pretraining (protocol P1m, `control_pretraining`)", "",
             "The same ODT and control as Table 1's, pretrained for 20k updates of 64 sequences (the paper's "
             "5000 of 256) instead of 2500; verdict at 10 seeds (`PROTOCOL-control-pretraining-cpu.md`).", "",
             "| dataset | runs | ODT final | control final | ODT − control (paired) | ODT gain in run "
             "| control gain in run | updates ODT / control | samples ODT / control |",
             "|---|---|---|---|---|---|---|---|---|"]
    for dataset in dataset_order(longer):
        for label, runs in (("Table 1 (the preset's pretraining)", table1), ("P1m (the paper's amount)", longer)):
            lines.append(f"| {dataset} | {label} | {control_cells(runs, dataset)} |")
    lines += ["", "| dataset | P1m − P1 (independent groups) | end of pretraining: P1m − Table 1 (ODT, paired by seed) |",
              "|---|---|---|"]
    for dataset in dataset_order(longer):
        c = pretraining_length_comparison(table1, longer, dataset)
        lines.append(f"| {dataset} | {c['p1m_minus_p1'].text()} | {c['pretrained_gain'].text()} |")
    return lines


# PROTOCOL-table1-cpu.md: the seeds each Hopper row's verdicts wait for; P1m's protocol: 10
TABLE1_PROTOCOL_SEEDS = {"hopper-medium": 10, "hopper-medium-replay": 5}
P1M_SEEDS = 10


def p1_estimate(runs: pd.DataFrame, dataset: str) -> tuple[Estimate, pd.Series]:
    """P1 (and P1m): ``odt`` final − ``odt-control`` final, paired by seed; and the per-seed differences."""
    diffs = per_seed_difference(complete_runs(runs, "odt", dataset), complete_runs(runs, "odt-control", dataset),
                                "final_score")
    return combination_estimate([(diffs.to_numpy(), 1.0)]), diffs


def table1_protocol_comparisons(runs: pd.DataFrame, curves: pd.DataFrame) -> list[Registered]:
    """``PROTOCOL-table1-cpu.md``'s P1 and P2 on its Hopper rows, as ``PROTOCOL-reanalysis.md``
    reads them: P2 within run; on hopper-medium both are primary (the question names P1 first
    and P2 second), on hopper-medium-replay both are the family."""
    out = []
    for dataset, seeds in TABLE1_PROTOCOL_SEEDS.items():
        if complete_runs(runs, "odt", dataset).empty:
            continue
        p1, _ = p1_estimate(runs, dataset)
        p2 = combination_estimate(c1_within_run_groups(runs, curves, dataset))
        primary = dataset == "hopper-medium"
        out += [Registered(f"P1 {dataset}", p1, +1, margin_for(dataset), primary, seed_status(p1, seeds)),
                Registered(f"P2 {dataset}", p2, +1, margin_for(dataset), primary, seed_status(p2, seeds))]
    return out


def registered_lines(root: Path | str, preset: str, runs: pd.DataFrame, curves: pd.DataFrame) -> list[str]:
    """The registered verdicts this report carries: P1 and P2 (``PROTOCOL-table1-cpu.md``) and,
    where its runs exist, P1m (``PROTOCOL-control-pretraining-cpu.md``)."""
    comparisons = table1_protocol_comparisons(runs, curves)
    lines = ["## Registered readings (`PROTOCOL-table1-cpu.md`, `PROTOCOL-control-pretraining-cpu.md`)", "",
             f"Read under `PROTOCOL-reanalysis.md`: {INTERVAL_METHOD}; each protocol's primary comparisons "
             "read alone, its others as one family with Holm's correction (Holm-adjusted p beside the "
             f"uncorrected one); equivalence by two one-sided tests against ±{LOCOMOTION_MARGIN:g} normalised "
             "points (the 90% interval inside the margin). Verdicts: supports, contradicts, equivalent, "
             "inconclusive. P1 = ODT − `odt-control` final, paired by seed (claim: > 0); P2 = δ ODT − δ IQL "
             "read within each run (claim: > 0); P1m = P1 after 20k pretraining updates.", "",
             "| comparison | estimate [95% CI] (n) | verdict |", "|---|---|---|"]
    for c, v in zip(comparisons, read_protocol(comparisons).values()):
        lines.append(f"| {c.key} | {c.estimate.text()} | {v.text()} |")
    longer = side_runs(root, preset, "control_pretraining", runs)
    if not longer.empty and not complete_runs(longer, "odt", "hopper-medium").empty:
        p1m, _ = p1_estimate(longer, "hopper-medium")
        (v,) = read_protocol([Registered("P1m", p1m, +1, LOCOMOTION_MARGIN, True, seed_status(p1m, P1M_SEEDS))]).values()
        lines.append(f"| P1m hopper-medium | {p1m.text()} | {v.text()} |")
    return lines


def wall_times(runs: pd.DataFrame) -> pd.DataFrame:
    """Minutes per complete run by method and dataset: mean, min, max, count."""
    ok = runs[runs.status == "complete"].assign(minutes=lambda d: d.wall_time / 60.0)
    table = ok.groupby(["method", "dataset"]).minutes.agg(["mean", "min", "max", "count"])
    return table.reset_index()


def summary_text(root: Path | str, preset: str, datasets: Sequence[str] | None = None, seeds: Sequence[int] | None = None) -> str:
    runs = agg.load_runs(root, preset, "table1")
    if datasets:
        runs = runs[runs.dataset.isin(list(datasets))]
    if seeds:
        runs = runs[runs.seed.isin(list(seeds))]
    if runs.empty:
        return f"No table1 runs at preset {preset!r} under {root}.\n"
    curves = agg.load_results(root, preset, "table1")
    lines = registered_lines(root, preset, runs, curves)
    lines += ["", f"## Finetuning gains at the `{preset}` preset (mean [95% t-interval] over seeds)", "",
              f"Within run: a run's mean of its last k online evaluations minus its own end of pretraining "
              f"(k = {LAST_K}, or the fewest online evaluations of the row's ODT and IQL runs if fewer; "
              "`PROTOCOL-reanalysis.md`). Table 1's columns (described): δ ODT = mean ODT final − mean "
              "ODT offline-protocol final (two sets of runs), δ IQL = IQL final − its offline score.", "",
              "| dataset | k | δ ODT (within run) | δ IQL (within run) | δ ODT − δ IQL (within run) "
              "| δ ODT (Table 1) | δ IQL (Table 1: final) | δ ODT − δ IQL (Table 1) |",
              "|---|---|---|---|---|---|---|---|"]
    for dataset in dataset_order(runs):
        g = gains(runs, curves, dataset)
        lines.append(f"| {dataset} | {g['k']} | {g['delta_odt_within_run'].text()} | {g['delta_iql'].text()} | "
                     f"{g['delta_odt_within_run_minus_delta_iql'].text()} | {g['delta_odt'].text()} | "
                     f"{g['delta_iql_final'].text()} | {g['delta_odt_minus_delta_iql'].text()} |")
    lines += ["", "## Gain at the first online evaluation (within run, mean [95% CI])", "",
              "| dataset | ODT | ODT: online samples there | IQL | IQL: online samples there |",
              "|---|---|---|---|---|"]
    for dataset in dataset_order(runs):
        (odt, odt_n), (iql, iql_n) = (early_gains(curves, runs, dataset, m) for m in ("odt", "iql"))
        lines.append(f"| {dataset} | {odt.text()} | {number_cell(odt_n)} | {iql.text()} | {number_cell(iql_n)} |")
    lines += control_lines(runs)
    if both := control_datasets(runs):
        lines += last_evaluations_lines(curves, runs, both)
    lines += finetune_lr_lines(root, preset, runs)
    lines += buffer_lines(root, preset, runs, seeds)
    lines += control_pretraining_lines(root, preset, runs)
    lines += other_data_lines(root, preset, runs, seeds)
    lines += ["", "## Wall time per run (minutes; one CPU thread each, two runs at once)", "",
              "| method | dataset | mean | min | max | runs |", "|---|---|---|---|---|---|"]
    for _, r in wall_times(runs).iterrows():
        lines.append(f"| {r.method} | {r.dataset} | {r['mean']:.1f} | {r['min']:.1f} | {r['max']:.1f} | {int(r['count'])} |")
    lines += per_seed_lines(runs)
    done = runs[runs.status == "complete"]
    status = runs.status.value_counts().to_dict()
    lines += ["", f"Runs: {len(runs)} ({', '.join(f'{v} {k}' for k, v in sorted(status.items()))}); "
                  f"compute of the complete runs: {agg.core_hours_cell(done)} CPU core-hours "
                  f"({done.wall_time.sum() / 3600.0:.2f} wall-clock hours summed over runs); "
                  f"data: {', '.join(sorted(set(done.data_source.dropna())))}.", ""]
    return "\n".join(lines)


def dataset_order(runs: pd.DataFrame) -> list[str]:
    """Datasets in the paper's row order, then any others alphabetically."""
    present = list(runs.dataset.unique())
    return [d for d in TABLE1_DATASETS if d in present] + sorted(d for d in present if d not in TABLE1_DATASETS)


def main(argv: list[str] | None = None) -> int:
    p = analysis_parser("python -m benchmarks.reproduction", __doc__, "paper_tables/reproduction_cpu.md")
    p.add_argument("--datasets", nargs="+", default=None, help="only these datasets")
    args = p.parse_args(argv)
    return emit(summary_text(args.results, args.preset, args.datasets, args.seeds), args.out)


if __name__ == "__main__":
    sys.exit(main())
