"""The figures of the project's own protocols and tuning studies (``paper_tables/PROTOCOL-*``):
ODT against its control at the paper's pretraining and at several buffer sizes, the offline
references trained longer, AntMaze's offline phase, and the sizing curves the presets were
tuned from."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.ticker import FuncFormatter

from benchmarks.plots.data import BAND, _order, _y, evals
from benchmarks.plots.panels import _curves, _means_with_seeds
from benchmarks.plots.style import _facet_order, _legend_with_seed_counts, arm_dashes, hue_colors
from rlbase.protocol import is_antmaze

ANTMAZE_LEARNED = 30.0  # the antmaze_sizing figure's dashed line: PROTOCOL-antmaze-sizing-cpu.md's 'learned'

LENGTH_ARMS = {"offline_length": "offline protocol, 5000 updates (offline_length)",
               "odt-offline": "offline protocol, 2500 updates (Table 1)",
               "odt": "ODT's pretraining (Table 1's odt runs)"}

C3_ARMS = {("offline_length_c3", "odt-offline"): "ODT offline, 1e4 updates (offline_length_c3)",
           ("offline_length_c3", "dt"): "DT, 1e4 updates (offline_length_c3)",
           ("table1", "odt-offline"): "ODT offline, 2500 updates (Table 1)",
           ("table1", "dt"): "DT, 2500 updates (Table 1)"}
# one hue per method, dark at the amendment's length and light at Table 1's (matplotlib's tab20 pairs)
C3_COLORS = dict(zip(C3_ARMS.values(), ("#2ca02c", "#d62728", "#98df8a", "#ff9896")))

ANTMAZE_ARMS = {"dt": "DT", "odt-offline": "ODT offline", "odt": "ODT's pretraining", "iql": "IQL's offline phase"}


# ----- ODT against its no-new-data control, read at the final score ------------------------------
def _odt_against_control(df: pd.DataFrame, fig: plt.Figure, x: str, xlabel: str, paired_label: str,
                         band: tuple[float, float] | None = None) -> pd.DataFrame:
    """Final score of ODT and its control at each ``x`` (left), and ODT minus control paired by
    seed (right), each seed a dot, the mean with its 95% t-interval (paired: over the per-seed
    differences), and the protocol's no-effect ``band`` where it has one."""
    e = evals(df[df.method.isin(["odt", "odt-control"])])
    y = _y(e)
    last = e.sort_values("step").groupby("run_id").tail(1)[["run_id", "method", "seed", "dataset", "variant", y]]
    order = _order(last[x])
    left, right = fig.subplots(1, 2)
    _means_with_seeds(left, last, x, y, order, hue="method", hue_order=["odt", "odt-control"], dodge=0.3)
    _legend_with_seed_counts(left, last, "method", per=x)
    sns.move_legend(left, "lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, title=None, frameon=False)  # off the dots
    left.set_ylabel("final normalized return")
    left.set_xlabel(xlabel)
    wide = last.pivot_table(index=[x, "seed"], columns="method", values=y).dropna().reset_index()
    wide["odt_minus_control"] = wide["odt"] - wide["odt-control"]
    if band is not None:
        right.axhspan(*band, color="grey", alpha=0.15, lw=0)
    right.axhline(0, color="grey", lw=0.8)
    _means_with_seeds(right, wide, x, "odt_minus_control", order, color="black")
    pairs = wide.groupby(x).seed.nunique()
    right.set_xticks(range(len(order)), [f"{v}\n({pairs.get(v, 0)} seeds paired)" for v in order])
    right.set_ylabel(paired_label)
    right.set_xlabel(xlabel)
    return wide


def draw_buffer_size(df, fig):
    """The buffer protocol (PROTOCOL-buffer-cpu.md) at each buffer size; its B1 band [-3, +3]."""
    return _odt_against_control(df, fig, "variant", "replay buffer (trajectories)",
                                "ODT − control, paired by seed (B1)", band=(-3, 3))


def draw_control_pretraining(df, fig):
    """Protocol P1m (PROTOCOL-control-pretraining-cpu.md): ODT and its control after 20k
    pretraining updates; ODT − control paired by seed is the protocol's comparison."""
    return _odt_against_control(df, fig, "dataset", "dataset", "ODT − control, paired by seed (P1m)")


# ----- offline references: score at each evaluation, per arm --------------------------------------
def _offline_arm_curves(e: pd.DataFrame, arms: list[str], fig, colors: dict[str, str] | None = None,
                        x: str = "updates", xlabel: str = "gradient updates"):
    """Score against ``x`` (default updates) per ``arm`` (mean and band over seeds), one panel per
    dataset; ``colors`` maps each arm to its colour (default: one per arm from the shared palette)."""
    y = _y(e)
    facets = _facet_order(e.dataset, "dataset")
    axes = fig.subplots(1, len(facets), squeeze=False).ravel()
    fig.set_figwidth(min(fig.get_figwidth(), 3.0 + 4.0 * len(facets)))
    colors = colors or hue_colors(arms, "arm")  # one colour per arm in every panel
    dashes = arm_dashes(arms)  # and one dash pattern: arms at the same values (0% at every point) stay visible
    for ax, dataset in zip(axes, facets):
        sub = e[e.dataset == dataset]
        present = [a for a in arms if a in set(sub.arm)]
        sns.lineplot(sub, x=x, y=y, hue="arm", hue_order=present, palette=colors, style="arm",
                     style_order=present, dashes=dashes, marker="o", errorbar=BAND, ax=ax)
        _legend_with_seed_counts(ax, sub, "arm")
        sns.move_legend(ax, "upper left", bbox_to_anchor=(0.0, -0.18), title=None, frameon=False)  # off the curves
        ax.set_title(dataset)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("normalized return" if y == "score_mean" else "return")
    return e[["run_id", "experiment", "method", "dataset", "seed", "arm", *dict.fromkeys(["updates", x]), y]]


def offline_length_runs(df: pd.DataFrame) -> pd.DataFrame:
    """PROTOCOL-offline-length-cpu.md's three offline references on the rows ``offline_length``
    has runs of: its longer offline protocol, Table 1's offline protocol, and the pretraining of
    Table 1's ``odt`` runs (their pretraining rows only: nothing online is drawn)."""
    rows = df.dataset.isin(set(df.dataset[df.experiment == "offline_length"]))
    table1 = (df.experiment == "table1") & ((df.method == "odt-offline")
                                            | ((df.method == "odt") & (df.phase == "pretrain")))
    return df[rows & ((df.experiment == "offline_length") | table1)]


def draw_offline_length(df, fig):
    """Each offline reference's score at each evaluation (every 1000 updates, and Table 1's offline
    protocol's last at 2500), one panel per dataset; not interpolated: every arm evaluates there."""
    e = evals(df)
    e = e.assign(arm=np.where(e.experiment == "offline_length", LENGTH_ARMS["offline_length"],
                              e.method.map(LENGTH_ARMS)))
    return _offline_arm_curves(e, list(LENGTH_ARMS.values()), fig)


def offline_length_c3_runs(df: pd.DataFrame) -> pd.DataFrame:
    """The arms of the amendment of 2026-11-29 (DT and the offline protocol at 1e4 updates) and Table 1's
    DT and offline protocol on the rows ``offline_length_c3`` has runs of."""
    rows = df.dataset.isin(set(df.dataset[df.experiment == "offline_length_c3"]))
    arms = pd.Series(list(zip(df.experiment, df.method)), index=df.index).isin(set(C3_ARMS))
    return df[rows & arms]


def draw_offline_length_c3(df, fig):
    """C3 read at two lengths: DT and ODT's offline protocol at each evaluation, Table 1's (to 2500
    updates) and the amendment's (to 1e4), one panel per dataset."""
    e = evals(df)
    e = e.assign(arm=[C3_ARMS[k] for k in zip(e.experiment, e.method)])
    return _offline_arm_curves(e, list(C3_ARMS.values()), fig, C3_COLORS)


def antmaze_offline_runs(df: pd.DataFrame) -> pd.DataFrame:
    """Table 1's AntMaze runs, their offline phase only: DT, ODT's offline protocol, ODT's
    pretraining (its ``odt`` runs; ``odt-control`` shares each seed's) and IQL's offline phase."""
    keep = df.dataset.map(is_antmaze) & df.method.isin(set(ANTMAZE_ARMS))
    return df[keep & (df.phase == "pretrain")]


def draw_antmaze_offline(df, fig):
    """How each method's AntMaze success grows over its offline phase, at each evaluation, one
    panel per dataset. x is the share of the method's own offline updates, so that IQL's 1.8e5
    and the others' 2e4 end at the same place; the dashed line is the sizing protocol's 30%."""
    e = evals(df)
    e = e.assign(arm=e.method.map(ANTMAZE_ARMS),
                 offline_share=100.0 * e.updates / e.groupby("run_id").updates.transform("max"))
    drawn = _offline_arm_curves(e, [a for a in ANTMAZE_ARMS.values() if a in set(e.arm)], fig,
                                x="offline_share", xlabel="share of the method's offline updates (%)")
    for ax in fig.axes:
        ax.axhline(ANTMAZE_LEARNED, color="grey", ls="--", lw=0.8)
        ax.set_ylabel("success rate (%)")
    return drawn


# ----- tuning curves the presets were sized from --------------------------------------------------
def draw_offline_curve(df, fig):
    """IQL's offline score against its updates (the cpu preset's tuning curve)."""
    return _curves(df, fig, hue="dataset", x="updates")


def draw_variant_curves_by_updates(df, fig):
    """Offline-only runs' curves against their gradient updates, one panel per dataset."""
    return _curves(df, fig, hue="variant", facet="dataset", x="updates")


def draw_antmaze_sizing(df, fig):
    """The AntMaze sizing protocol's curves: each tuning seed's success rate at each of its
    evaluations (markers, not interpolated: the rule reads these points), one panel per method on
    one y scale (IQL's curve runs 9x longer than the others), the 'learned' line dashed."""
    e = evals(df)
    y = _y(e)
    e = e.assign(seed=e["seed"].map(lambda s: f"seed {s}"))
    methods = _order(e["method"])
    axes = fig.subplots(1, max(1, len(methods)), squeeze=False, sharey=True)[0]
    for ax, m in zip(axes, methods):
        sub = e[e["method"] == m]
        sns.lineplot(sub, x="updates", y=y, hue="seed", hue_order=_order(sub["seed"]), marker="o",
                     estimator=None, errorbar=None, ax=ax)
        ax.axhline(ANTMAZE_LEARNED, color="grey", ls="--", lw=0.8)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1000:g}k"))  # 180000 -> 180k
        ax.set_title(m)
        ax.set_ylabel("success rate (%)")
    return e[["run_id", "method", "seed", "updates", y]]
