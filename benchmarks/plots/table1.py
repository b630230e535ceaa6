"""Table 1's figures: the learning curves of every method per dataset, ODT against its
no-new-data control, and the paper's Figs. 2 (convergence) and 11 (stability), which reuse
Table 1's runs rather than running their own."""

from __future__ import annotations

import pandas as pd
import seaborn as sns
from matplotlib.ticker import FuncFormatter

from benchmarks.experiments import ACTION_DIMS, target_entropy
from benchmarks.plots.data import BAND, _y, evals, on_grid, pretraining_end
from benchmarks.plots.panels import _curves

HOPPER_BETA = target_entropy("hopper-medium")
NLL_LINEAR = 2.0  # the NLL axis is linear within ±2 nats (it turns negative), logarithmic beyond


def online_runs(df: pd.DataFrame) -> pd.DataFrame:
    """Table 1's methods with an online phase: the runs the learning curves draw (and count in
    their caption; the offline-only methods have no curve there)."""
    return df[df.method.isin(["odt", "iql", "sac"])]


def draw_learning_curves(df, fig):
    """Table 1's learning curves, one panel per dataset, from the runs ``online_runs`` selects."""
    return _curves(df, fig, hue="method", facet="dataset", ends_only=True)


def control_runs(df: pd.DataFrame) -> pd.DataFrame:
    """Table 1's ``odt`` and ``odt-control`` runs (the figure has nothing to draw without them)."""
    return df[df.method.isin(["odt", "odt-control"])]


def draw_control(df, fig):
    """ODT against its no-new-data control over online samples, one panel per dataset."""
    return _curves(df, fig, hue="method", facet="dataset", ends_only=True)


def convergence_runs(df: pd.DataFrame) -> pd.DataFrame:
    """Fig. 2 from Table 1's ``odt`` runs on hopper-medium (reused, never rerun)."""
    return df[(df.method == "odt") & (df.dataset == "hopper-medium")]


def draw_convergence(df, fig):
    """Fig. 2: each quantity against the gradient updates, pretraining then online (the switch
    dotted in every panel); the NLL on a symmetric log scale, since it falls from thousands
    below zero."""
    e = evals(df)
    cols = [c for c in (_y(e), "nll", "entropy", "lambda") if c in e]
    axes = fig.subplots(1, len(cols), squeeze=False)[0]
    titles = {"score_mean": "normalized return", "return_mean": "return",
              "nll": f"NLL (symlog: linear within ±{NLL_LINEAR:g}, log beyond)",
              "entropy": f"policy entropy (dashed: β = −|A| = −{ACTION_DIMS['hopper']})", "lambda": "λ (temperature)"}
    switch, parts = pretraining_end(e), []
    for ax, c in zip(axes, cols):
        d = on_grid(e, "updates", c, ["method"], common=True)  # every point averages every run
        sns.lineplot(d, x="updates", y=c, errorbar=BAND, ax=ax)
        if c == "nll":
            ax.set_yscale("symlog", linthresh=NLL_LINEAR)
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        if c == "entropy":
            ax.axhline(HOPPER_BETA, color="grey", ls="--", lw=0.8)
        if c == "lambda":
            ax.set_ylim(bottom=0)
        if pd.notna(switch):
            ax.axvline(switch, color="grey", ls=":", lw=0.8)
        ax.set_title(titles.get(c, c))
        ax.set_ylabel("")
        ax.set_xlabel("gradient updates (dotted: end of pretraining)")
        parts.append(d.assign(metric=c).rename(columns={c: "value"}))
    return pd.concat(parts, ignore_index=True) if parts else e


def stability_runs(df: pd.DataFrame) -> pd.DataFrame:
    """Fig. 11 from Table 1's hopper-medium runs (the protocol reuses them, never reruns them)."""
    online = online_runs(df)
    return online[online.dataset == "hopper-medium"]


def draw_stability(df, fig):
    """Fig. 11: ODT, IQL and SAC's mean curves with their bands on one axes."""
    return _curves(df, fig, hue="method")
