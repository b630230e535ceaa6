"""``python -m benchmarks.reproduction``: the numbers behind a reproduction report.

Table 1 (``benchmarks.tables``) gives mean +- std per cell. A reproduction also has to say
whether the paper's claim held: after pretraining, ODT gains more from the online budget than
IQL does. This module computes, from the ``table1`` runs of one preset:

* the finetuning gains with 95% bootstrap confidence intervals over seeds:
  - delta ODT as in Table 1: ODT (0.2m) minus ODT (offline), two separate sets of runs
    (the online protocol's final score against the offline protocol's), resampled separately;
  - delta ODT within a run: each ``odt`` run's final score minus its own score after
    pretraining (paired by run);
  - delta IQL: each ``iql`` run's final score minus its score after offline training (paired);
  - delta ODT minus delta IQL (Table 1 style), with its interval, and the within-run delta ODT
    minus delta IQL (two independent groups of paired gains);
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

Bootstrap: percentile intervals from resampling seeds with replacement, seeded, so the same
results tree always gives the same text. Written by hand (a few lines of numpy) because the
deltas mix paired and unpaired groups, which rliable's per-task score matrices do not express.
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
from benchmarks.tables import write_text
from odt.config import PRESETS

CI_LEVEL = 0.95
BOOTSTRAP_REPS = 10_000
MIN_SEEDS_FOR_INTERVAL = 2  # a group of one seed resamples to itself: its interval would hide its spread


@dataclass(frozen=True)
class Estimate:
    mean: float
    lo: float
    hi: float
    n: int

    def text(self, signed: bool = True, digits: int = 1) -> str:
        """'mean [lo, hi] (n=k)' to ``digits`` decimals; ``signed`` puts + on positive numbers (gains,
        differences), not on scores. With one seed (in the smallest group) the bootstrap cannot see
        that group's spread, so no interval is printed."""
        if self.n == 0:
            return "—"
        f = f"{'+' if signed else ''}.{digits}f"
        if self.n < MIN_SEEDS_FOR_INTERVAL:
            return f"{self.mean:{f}} (n={self.n}: no interval from one seed)"
        return f"{self.mean:{f}} [{self.lo:{f}}, {self.hi:{f}}] (n={self.n})"


def bootstrap_combination(groups: Sequence[tuple[Sequence[float], float]], reps: int = BOOTSTRAP_REPS,
                          seed: int = 0, level: float = CI_LEVEL) -> Estimate:
    """sum(sign * mean(values)) over independent groups, with a percentile bootstrap interval
    from resampling each group with replacement; n is the smallest group's size."""
    arrays = [(np.asarray(v, dtype=float), sign) for v, sign in groups]
    if not arrays or any(a.size == 0 for a, _ in arrays):
        return Estimate(float("nan"), float("nan"), float("nan"), 0)
    rng = np.random.default_rng(seed)
    boot = sum(sign * a[rng.integers(0, a.size, size=(reps, a.size))].mean(axis=1) for a, sign in arrays)
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(boot, [tail, 100.0 - tail])
    point = sum(sign * a.mean() for a, sign in arrays)
    return Estimate(float(point), float(lo), float(hi), min(a.size for a, _ in arrays))


def directional_verdict(e: Estimate, equivalence: float | None = None) -> str:
    """The protocols' rule for the interval of a difference the paper says is positive:
    **supports** if it lies above 0, **contradicts** if it lies below 0 or (given an
    ``equivalence`` band) inside [-equivalence, +equivalence], otherwise **inconclusive**."""
    if e.lo > 0:
        return "supports"
    if e.hi < 0 or (equivalence is not None and e.lo >= -equivalence and e.hi <= equivalence):
        return "contradicts"
    return "inconclusive"


def bootstrap_reps(text: str) -> int:
    """--reps' type: an integer >= 100, enough resamples for a 95% percentile interval."""
    reps = int(text)
    if reps < 100:
        raise argparse.ArgumentTypeError(f"{reps} is out of range: >= 100")
    return reps


def analysis_parser(prog: str, doc: str | None, out_example: str, seeds: bool = True) -> argparse.ArgumentParser:
    """A protocol analysis CLI's parser with the options every one shares: --preset, --results,
    --reps, --out (whose help names ``out_example``, e.g. ``paper_tables/rows_protocol_cpu.md``)
    and, where the analysis may be cut to some seeds (``seeds``), --seeds."""
    p = argparse.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="cpu", choices=PRESETS)
    p.add_argument("--results", type=Path, default=rec.DEFAULT_ROOT, help="results root (default: results/ or $ODT_RESULTS)")
    if seeds:
        p.add_argument("--seeds", type=int, nargs="+", default=None,
                       help="only these seeds (e.g. a protocol's fresh seeds: --seeds 5 6 7 8 9)")
    p.add_argument("--reps", type=bootstrap_reps, default=BOOTSTRAP_REPS, help="bootstrap resamples (>= 100)")
    p.add_argument("--out", type=Path, default=None, help=f"also write the text here, e.g. {out_example}")
    return p


def emit(text: str, out: Path | None) -> int:
    """A protocol analysis CLI's ending: print the report, also write it to ``out`` if given; exit 0."""
    print(text)
    if out:
        write_text(out, text)
    return 0


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


def delta_odt_groups(runs: pd.DataFrame, dataset: str) -> Groups:
    """Table 1's delta ODT: the ``odt`` runs' finals minus the ``odt-offline`` runs' (two sets of runs)."""
    odt, off = (complete_runs(runs, m, dataset).final_score.to_numpy() for m in ("odt", "odt-offline"))
    return [(odt, 1.0), (off, -1.0)]


def c1_groups(runs: pd.DataFrame, dataset: str) -> Groups:
    """Table 1's delta ODT minus delta IQL (IQL's gain read within each run)."""
    return delta_odt_groups(runs, dataset) + [(gain_in_run(runs, "iql", dataset), -1.0)]


def c1_within_run_groups(runs: pd.DataFrame, dataset: str) -> Groups:
    """delta ODT read within each ODT run, minus delta IQL (within each IQL run)."""
    return [(gain_in_run(runs, "odt", dataset), 1.0), (gain_in_run(runs, "iql", dataset), -1.0)]


def gains(runs: pd.DataFrame, dataset: str, reps: int = BOOTSTRAP_REPS) -> dict[str, Estimate]:
    """The finetuning gains of one dataset (see the module docstring)."""
    return {
        "delta_odt": bootstrap_combination(delta_odt_groups(runs, dataset), reps),
        "delta_odt_within_run": bootstrap_combination([(gain_in_run(runs, "odt", dataset), 1.0)], reps),
        "delta_iql": bootstrap_combination([(gain_in_run(runs, "iql", dataset), 1.0)], reps),
        "delta_odt_minus_delta_iql": bootstrap_combination(c1_groups(runs, dataset), reps),
        "delta_odt_within_run_minus_delta_iql": bootstrap_combination(c1_within_run_groups(runs, dataset), reps),
    }


def paired_difference(runs: pd.DataFrame, dataset: str, a: str, b: str, value: str = "final_score",
                      reps: int = BOOTSTRAP_REPS) -> Estimate:
    """Mean over seeds of (method a - method b) on the same seed, with a bootstrap interval over
    the per-seed differences; seeds missing from either method are left out."""
    diffs = per_seed_difference(complete_runs(runs, a, dataset), complete_runs(runs, b, dataset), value)
    return bootstrap_combination([(diffs.to_numpy(), 1.0)], reps)


def control_comparison(runs: pd.DataFrame, dataset: str, reps: int = BOOTSTRAP_REPS) -> dict[str, Estimate]:
    """ODT against its no-new-data control (``odt-control``): the two share each seed's
    pretraining, so ODT's gain over the control, paired by seed, is what online data adds; the
    control's own within-run gain is what the finetuning schedule does without new data."""
    odt, control = (complete_runs(runs, m, dataset) for m in ("odt", "odt-control"))
    return {
        "odt_final": bootstrap_combination([(odt.final_score, 1.0)], reps),
        "control_final": bootstrap_combination([(control.final_score, 1.0)], reps),
        "odt_minus_control": paired_difference(runs, dataset, "odt", "odt-control", reps=reps),
        "odt_gain": bootstrap_combination([(odt.final_score - odt.offline_score, 1.0)], reps),
        "control_gain": bootstrap_combination([(control.final_score - control.offline_score, 1.0)], reps),
        "pretraining_mismatch": paired_difference(runs, dataset, "odt", "odt-control", "offline_score", reps),
    }


def pretraining_mismatches(runs: pd.DataFrame, dataset: str) -> dict[int, float]:
    """Seed -> (ODT - control) end-of-pretraining score, for the seeds where the two differ
    (they share each seed's pretraining, so any difference means they did not)."""
    diffs = per_seed_difference(complete_runs(runs, "odt", dataset), complete_runs(runs, "odt-control", dataset),
                                "offline_score")
    return {int(s): float(v) for s, v in diffs.items() if v != 0}


def control_cells(runs: pd.DataFrame, dataset: str, reps: int = BOOTSTRAP_REPS) -> str:
    """One dataset's ODT-against-control cells, from "ODT final" to "samples ODT / control"."""
    c = control_comparison(runs, dataset, reps)
    odt, control = (complete_runs(runs, m, dataset) for m in ("odt", "odt-control"))
    return (f"{c['odt_final'].text(False)} | {c['control_final'].text(False)} | "
            f"{c['odt_minus_control'].text()} | {c['odt_gain'].text()} | {c['control_gain'].text()} | "
            f"{odt.updates.mean():.0f} / {control.updates.mean():.0f} | "
            f"{odt.online_samples.mean():.0f} / {control.online_samples.mean():.0f}")


def control_datasets(runs: pd.DataFrame) -> list[str]:
    """The datasets with complete runs of both ``odt`` and ``odt-control``, in the paper's order."""
    return [d for d in dataset_order(runs) if not complete_runs(runs, "odt-control", d).empty
            and not complete_runs(runs, "odt", d).empty]


def control_lines(runs: pd.DataFrame, reps: int = BOOTSTRAP_REPS) -> list[str]:
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
        lines.append(f"| {d} | {control_cells(runs, d, reps)} |")
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


def early_gains(curves: pd.DataFrame, runs: pd.DataFrame, dataset: str, method: str,
                reps: int = BOOTSTRAP_REPS) -> tuple[Estimate, float]:
    """(gain at the first online evaluation, mean online samples there) over complete runs."""
    ok = set(complete_runs(runs, method, dataset).run_id)
    e = curves[curves.run_id.isin(ok) & curves.phase.isin(["pretrain", "online"])].sort_values(["run_id", "step"])
    gains_, samples = [], []
    for _, run in e.groupby("run_id"):
        pre, online = run[run.phase == "pretrain"], run[run.phase == "online"]
        if len(pre) and len(online):
            gains_.append(online.score_mean.iloc[0] - pre.score_mean.iloc[-1])
            samples.append(online.online_samples.iloc[0])
    return bootstrap_combination([(gains_, 1.0)], reps), float(np.mean(samples)) if samples else float("nan")


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


def last_evaluations_lines(curves: pd.DataFrame, runs: pd.DataFrame, datasets: Sequence[str],
                           reps: int = BOOTSTRAP_REPS) -> list[str]:
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
            cells.append(bootstrap_combination([(diffs.to_numpy(), 1.0)], reps).text() + sd if len(diffs) else "—")
        lines.append(f"| {d} | " + " | ".join(cells) + " |")
    return lines


def rate_comparison(base: pd.DataFrame, other: pd.DataFrame, dataset: str,
                    reps: int = BOOTSTRAP_REPS) -> dict[str, Estimate]:
    """ODT's within-run gain (final - after pretraining) in ``base`` and ``other`` runs of one
    dataset, and their difference (other - base, independent groups)."""
    a, b = (complete_runs(runs, "odt", dataset) for runs in (base, other))
    gain_a, gain_b = a.final_score - a.offline_score, b.final_score - b.offline_score
    return {"base": bootstrap_combination([(gain_a, 1.0)], reps),
            "other": bootstrap_combination([(gain_b, 1.0)], reps),
            "difference": bootstrap_combination([(gain_b, 1.0), (gain_a, -1.0)], reps),
            "base_final": bootstrap_combination([(a.final_score, 1.0)], reps),
            "other_final": bootstrap_combination([(b.final_score, 1.0)], reps)}


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


def finetune_lr_lines(root: Path | str, preset: str, table1: pd.DataFrame, reps: int = BOOTSTRAP_REPS) -> list[str]:
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
        c = rate_comparison(table1, other, dataset, reps)
        lines.append(f"| {dataset} | {c['base_final'].text(False)} | {c['base'].text()} | {c['other_final'].text(False)} | "
                     f"{c['other'].text()} | {c['difference'].text()} |")
    return lines


def buffer_comparison(table1: pd.DataFrame, published: pd.DataFrame, dataset: str,
                      reps: int = BOOTSTRAP_REPS) -> dict[str, Estimate]:
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
        "delta_share": bootstrap_combination([(share.final_score - share.offline_score, 1.0)], reps),
        "delta_published": bootstrap_combination([(pub_gain, 1.0)], reps),
        "published_minus_share": bootstrap_combination([(paired.to_numpy(), 1.0)], reps),
        "offline_gap": bootstrap_combination([(offline_gap.to_numpy(), 1.0)], reps),
        "p2_published": bootstrap_combination(
            [(odt.final_score, 1.0), (odt_off.final_score, -1.0), (pub_gain, -1.0)], reps),
    }


def buffer_lines(root: Path | str, preset: str, table1: pd.DataFrame, reps: int = BOOTSTRAP_REPS,
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
        c = buffer_comparison(table1, published, dataset, reps)
        lines.append(f"| {dataset} | {c['delta_share'].text()} | {c['delta_published'].text()} | "
                     f"{c['published_minus_share'].text()} | {c['offline_gap'].text()} | {c['p2_published'].text()} |")
    return lines


def pretraining_length_comparison(table1: pd.DataFrame, longer: pd.DataFrame, dataset: str,
                                  reps: int = BOOTSTRAP_REPS) -> dict[str, Estimate]:
    """P1 after the preset's pretraining (``table1``) and after a longer one (``longer``, protocol
    P1m): ODT − control paired by seed in each, and the longer minus the shorter (independent
    groups); the end-of-pretraining score of the seeds in both, longer minus shorter (paired)."""
    p1, p1m = (per_seed_difference(complete_runs(r, "odt", dataset), complete_runs(r, "odt-control", dataset),
                                   "final_score") for r in (table1, longer))
    pretrained = per_seed_difference(complete_runs(longer, "odt", dataset), complete_runs(table1, "odt", dataset),
                                     "offline_score")
    return {"p1": bootstrap_combination([(p1.to_numpy(), 1.0)], reps),
            "p1m": bootstrap_combination([(p1m.to_numpy(), 1.0)], reps),
            "p1m_minus_p1": bootstrap_combination([(p1m.to_numpy(), 1.0), (p1.to_numpy(), -1.0)], reps),
            "pretrained_gain": bootstrap_combination([(pretrained.to_numpy(), 1.0)], reps)}


def control_pretraining_lines(root: Path | str, preset: str, table1: pd.DataFrame,
                              reps: int = BOOTSTRAP_REPS) -> list[str]:
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
            lines.append(f"| {dataset} | {label} | {control_cells(runs, dataset, reps)} |")
    lines += ["", "| dataset | P1m − P1 (independent groups) | end of pretraining: P1m − Table 1 (ODT, paired by seed) |",
              "|---|---|---|"]
    for dataset in dataset_order(longer):
        c = pretraining_length_comparison(table1, longer, dataset, reps)
        lines.append(f"| {dataset} | {c['p1m_minus_p1'].text()} | {c['pretrained_gain'].text()} |")
    return lines


def wall_times(runs: pd.DataFrame) -> pd.DataFrame:
    """Minutes per complete run by method and dataset: mean, min, max, count."""
    ok = runs[runs.status == "complete"].assign(minutes=lambda d: d.wall_time / 60.0)
    table = ok.groupby(["method", "dataset"]).minutes.agg(["mean", "min", "max", "count"])
    return table.reset_index()


def summary_text(root: Path | str, preset: str, datasets: Sequence[str] | None = None,
                 reps: int = BOOTSTRAP_REPS, seeds: Sequence[int] | None = None) -> str:
    runs = agg.load_runs(root, preset, "table1")
    if datasets:
        runs = runs[runs.dataset.isin(list(datasets))]
    if seeds:
        runs = runs[runs.seed.isin(list(seeds))]
    if runs.empty:
        return f"No table1 runs at preset {preset!r} under {root}.\n"
    lines = [f"## Finetuning gains at the `{preset}` preset (mean [95% bootstrap CI] over seeds)", "",
             "| dataset | δ ODT (Table 1: online − offline-protocol runs) | δ ODT (within run) | δ IQL | δ ODT − δ IQL "
             "| δ ODT (within run) − δ IQL |",
             "|---|---|---|---|---|---|"]
    for dataset in dataset_order(runs):
        g = gains(runs, dataset, reps)
        lines.append(f"| {dataset} | {g['delta_odt'].text()} | {g['delta_odt_within_run'].text()} | "
                     f"{g['delta_iql'].text()} | {g['delta_odt_minus_delta_iql'].text()} | "
                     f"{g['delta_odt_within_run_minus_delta_iql'].text()} |")
    curves = agg.load_results(root, preset, "table1")
    lines += ["", "## Gain at the first online evaluation (within run, mean [95% CI])", "",
              "| dataset | ODT | ODT: online samples there | IQL | IQL: online samples there |",
              "|---|---|---|---|---|"]
    for dataset in dataset_order(runs):
        (odt, odt_n), (iql, iql_n) = (early_gains(curves, runs, dataset, m, reps) for m in ("odt", "iql"))
        lines.append(f"| {dataset} | {odt.text()} | {number_cell(odt_n)} | {iql.text()} | {number_cell(iql_n)} |")
    lines += control_lines(runs, reps)
    if both := control_datasets(runs):
        lines += last_evaluations_lines(curves, runs, both, reps)
    lines += finetune_lr_lines(root, preset, runs, reps)
    lines += buffer_lines(root, preset, runs, reps, seeds)
    lines += control_pretraining_lines(root, preset, runs, reps)
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
    return emit(summary_text(args.results, args.preset, args.datasets, args.reps, args.seeds), args.out)


if __name__ == "__main__":
    sys.exit(main())
