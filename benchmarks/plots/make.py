"""``make plots`` / ``python -m benchmarks.plots``: every figure of the catalogue drawn from the
runs under a results root, each saved as PNG and PDF beside the CSV of exactly the data drawn and
a JSON sidecar of its provenance, under ``<out>/<preset>/``; Appendix F's figure from the datasets.
A figure with no run to draw is skipped (``--missing`` writes it, saying which experiment to run);
rerunning on unchanged records changes no byte."""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from benchmarks import aggregate as agg
from benchmarks import outputs
from benchmarks import records as rec
from benchmarks.plots import provenance as prov
from benchmarks.plots.catalogue import FIGURES, Figure
from rlbase.checkpoint import atomic_write_bytes
from rlbase.presets import PRESETS

SAMPLING_TITLE = "Appendix F: sampling probability by length vs by return"


def save_figure(fig: plt.Figure, data: pd.DataFrame, out: Path, name: str) -> list[Path]:
    """``name``.png, .pdf and the plotted numbers as .csv in ``out``, each written atomically; closes ``fig``."""
    paths = []
    for fmt in ("png", "pdf"):
        buf = io.BytesIO()
        # no creation date in the PDF: the same records give the same bytes, so a rerun of
        # ``make plots`` leaves committed figures unchanged unless their data changed
        meta = {"CreationDate": None} if fmt == "pdf" else {}
        fig.savefig(buf, format=fmt, dpi=120, bbox_inches="tight", metadata=meta)
        path = out / f"{name}.{fmt}"
        atomic_write_bytes(path, buf.getvalue())
        paths.append(path)
    path = out / f"{name}.csv"
    atomic_write_bytes(path, data.to_csv(index=False).encode())
    paths.append(path)
    plt.close(fig)
    return paths


def _runs_of(spec: Figure, df: pd.DataFrame) -> pd.DataFrame:
    """The rows of the runs a figure draws: its experiment's (and its ``also``'s), narrowed by its ``select``."""
    runs = df[df.experiment.isin((spec.experiment, *spec.also))]
    return spec.select(runs) if spec.select is not None else runs


def _facts(spec: Figure, runs: pd.DataFrame, complete: pd.DataFrame, preset: str, root: Path | str,
           codes: pd.Series | None) -> dict:
    """The sidecar's provenance of one figure (``codes``: each run's code version, by experiment and run id)."""
    keys = pd.MultiIndex.from_frame(complete[["experiment", "run_id"]].drop_duplicates())
    ran = codes.reindex(keys) if codes is not None else pd.Series(index=keys, dtype=object)
    updates = complete.groupby("run_id").updates.max().dropna() if "updates" in complete else pd.Series()
    return {"figure": spec.name, "preset": preset, "smoke": preset == "smoke",
            "experiments": [spec.experiment, *spec.also], "records": [prov.records_path(root, preset, e) for e in (spec.experiment, *spec.also)],
            "runs": {str(s): int(n) for s, n in runs.drop_duplicates("run_id").status.value_counts().items()},
            "seeds": prov._ranges(complete.seed) if not complete.empty else None,
            "online_samples_used": prov.samples_used(complete) if not complete.empty else None,
            "updates_per_run": prov._span(updates) if not updates.empty else None,
            "data": prov.data_sources(complete) if not complete.empty else None,
            "code_versions": prov.code_versions(ran) if not complete.empty else {},
            "command": prov.command(root, preset, spec.name)}


def render(spec: Figure, df: pd.DataFrame, preset: str, out: Path, root: Path | str = rec.DEFAULT_ROOT,
           codes: pd.Series | None = None) -> list[Path]:
    """One figure of the catalogue: PNG, PDF, CSV and its sidecar JSON in ``out``."""
    runs = _runs_of(spec, df)
    complete = runs[runs.status == "complete"]
    fig = plt.figure(figsize=spec.size, layout="constrained")
    facts = _facts(spec, runs, complete, preset, root, codes)
    lines = prov.title_lines(spec.title, preset, runs)
    if complete.empty:
        why = (f"no complete runs ({prov._status_note(runs)})" if not runs.empty else "no runs found")
        if spec.select is not None:
            why += " among the runs this figure draws"
        fig.text(0.5, 0.5, f"{why} for experiment '{spec.experiment}'\n"
                 f"run: python -m benchmarks.run {spec.experiment} --preset {preset}",
                 ha="center", va="center", fontsize=11, color="darkred")
        data, caption = pd.DataFrame({"missing": [why]}), [f"preset {preset}; {why}"]
    else:
        data = spec.draw(complete, fig)
        sidecar = f"{spec.name}.json"
        caption = [spec.reading, f"preset {preset}; {prov._status_note(runs)}; {prov.provenance_note(complete)}; "
                                 f"{prov.code_note(facts['code_versions'], sidecar)}; full record: {sidecar}"]
    prov.draw_header(fig, lines, caption)
    facts |= {"title": lines, "caption": [c for c in caption if c]}
    sidecar = prov.write_sidecar(out, spec.name, facts)
    return [*save_figure(fig, data, out, spec.name), sidecar]


def render_sampling_probabilities(preset: str, out: Path, partial: bool = True) -> list[Path]:
    """Appendix F's figure: per trajectory of each dense-reward dataset, the probability of
    being sampled proportional to its length (ODT) against proportional to its return. Drawn
    from the datasets themselves (size ``smoke`` for the smoke preset), not from runs. With
    ``partial=False`` nothing is written unless every dataset is on disk (a figure that would
    depend on which datasets this machine happens to hold)."""
    from benchmarks.datasets import load_dataset
    from benchmarks.experiments import LOCOMOTION, TABLE1_DATASETS
    from benchmarks.job import dataset_size

    rows, missing = [], []
    for name in [d for d in TABLE1_DATASETS if d in LOCOMOTION]:
        try:
            traj = load_dataset(name, size=dataset_size(preset)).trajectories
        except Exception as exc:  # not on disk here: say so on the figure
            missing.append(f"{name}: {type(exc).__name__}")
            if not partial:
                return []
            continue
        lengths = traj.lengths.astype(float)
        returns = np.clip(traj.returns().astype(float), 0.0, None)
        rows.append(pd.DataFrame({"dataset": name, "p_length": lengths / lengths.sum(),
                                  "p_return": returns / max(returns.sum(), 1e-12)}))
    fig = plt.figure(figsize=(14, 7), layout="constrained")
    caption = ["each dot one trajectory; dashed: equal probability either way",
               f"preset {preset}; datasets of size {dataset_size(preset)}, read from disk, not from runs"
               + (f"; missing: {', '.join(missing)}" if missing else "")]
    data = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame({"missing": missing or ["none"]})
    if not rows:
        fig.text(0.5, 0.5, "no dataset available:\n" + "\n".join(missing), ha="center", va="center",
                 color="darkred")
    else:
        _sampling_panels(fig, data)
    lines = prov.title_lines(SAMPLING_TITLE, preset)
    prov.draw_header(fig, lines, caption)
    sidecar = prov.write_sidecar(out, "sampling_probabilities", {
        "figure": "sampling_probabilities", "preset": preset, "smoke": preset == "smoke", "title": lines,
        "caption": caption, "dataset_size": dataset_size(preset), "missing": missing,
        "command": f"python -m benchmarks.plots --preset {preset} --only sampling_probabilities"})
    return [*save_figure(fig, data, out, "sampling_probabilities"), sidecar]


def _sampling_panels(fig: plt.Figure, data: pd.DataFrame) -> None:
    names = list(dict.fromkeys(data.dataset))
    axes = fig.subplots(2, 4, squeeze=False).ravel()
    for ax, name in zip(axes, names):
        d = data[data.dataset == name]
        ax.scatter(d.p_length, d.p_return, s=6, alpha=0.6)
        top = float(max(d.p_length.max(), d.p_return.max()))
        ax.plot([0, top], [0, top], color="grey", lw=0.8, ls="--")
        ax.set_title(name)
        ax.set_xlabel("P(trajectory) by length")
        ax.set_ylabel("by return")
    for ax in axes[len(names):]:
        ax.set_visible(False)


def _codes(root: Path, preset: str) -> pd.Series:
    """Each run's code version (short git sha), by experiment and run id."""
    return agg.load_runs(root, preset).set_index(["experiment", "run_id"])["code"]


def make_plots(root: Path | str, out: Path | str | None = None, presets: list[str] | None = None,
               names: list[str] | None = None, missing: bool = False) -> list[Path]:
    """Figures of each preset (default: every preset with runs under ``root``; none if it has none)
    under ``<out>/<preset>/`` (default ``out``: :func:`benchmarks.outputs.figures_root`).

    A figure with no run to draw (none of its experiment, or none its ``select`` keeps) is skipped,
    and Appendix F's figure is skipped unless every dataset is on disk, so that regenerating the
    committed figures adds no stray files; ``missing=True`` writes those too, each saying on its
    face what is missing."""
    root = Path(root)
    out = Path(out) if out is not None else outputs.figures_root(root)
    if not presets:
        presets = sorted({d.parent.parent.name for d in rec.iter_run_dirs(root)})
    written = []
    sns.set_theme(style="whitegrid", context="paper")
    for preset in presets:
        df = agg.load_results(root, preset)
        codes = _codes(root, preset) if not df.empty else None
        for spec in FIGURES:
            if names and spec.name not in names:
                continue
            if not missing and _runs_of(spec, df).empty:
                continue
            written += render(spec, df, preset, out / preset, root, codes)
        if not names or "sampling_probabilities" in names:
            written += render_sampling_probabilities(preset, out / preset, partial=missing)
    return written


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.plots", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", type=Path, default=rec.DEFAULT_ROOT, help="results root (default results/)")
    p.add_argument("--out", type=Path, default=None,
                   help="figures go to <out>/<preset>/ (default: paper_tables/figures/ for the repository's "
                        "results/, else <results>/paper_tables/figures/)")
    p.add_argument("--preset", nargs="*", default=None,
                   help=f"presets to plot ({', '.join(PRESETS)}; default: every preset with runs under --results)")
    p.add_argument("--missing", action="store_true",
                   help="also write figures whose experiment has no runs (each says what to run) and Appendix F's "
                        "figure when some datasets are not on disk")
    p.add_argument("--only", nargs="*", default=None, help="figure names: " + ", ".join(f.name for f in FIGURES))
    args = p.parse_args(argv)
    known = {f.name for f in FIGURES} | {"sampling_probabilities"}
    for name in args.only or ():
        if name not in known:
            p.error(f"unknown figure {name!r}; known: {', '.join(sorted(known))}")
    for preset in args.preset or ():
        if preset not in PRESETS:
            p.error(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
    out = args.out if args.out is not None else outputs.figures_root(args.results)
    try:
        paths = make_plots(args.results, out, args.preset, args.only, args.missing)
    except rec.CorruptRecord as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not paths:
        print(f"no runs under {args.results}: no figures written (run an experiment first, e.g. "
              f"python -m benchmarks.run table1 --preset smoke --seeds 1 --datasets hopper-medium)")
        return 0
    print(f"wrote {len([q for q in paths if q.suffix == '.png'])} figures (png + pdf + csv + json) under {out}")
    return 0
