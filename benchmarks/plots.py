"""``make plots`` / ``python -m benchmarks.plots``: every figure of the paper from ``results/``.

Each figure is one groupby over the tidy frame of :func:`benchmarks.aggregate.load_results`,
drawn with seaborn and saved as PNG and PDF next to a CSV of exactly the data it was drawn
from, under ``<out>/<preset>/``. Learning curves put every run of a curve on a common grid of
online samples (linear interpolation of its evaluation rows), ending where the curve's first run
ends, and show the mean with its 95% t-interval over runs as a band (none where a curve has one
run); Table 1's curves show a curve with a run of three evaluations or fewer as its start and final
means, not a line, on one y scale per domain. Every band and bar is that Student t-interval
(:func:`benchmarks.intervals.mean_interval`), never seaborn's default percentile bootstrap, which
covers far less than 95% at 3-10 seeds (issue 84). A comparison its protocol reads paired by
seed (Figs. 6, 7) is drawn as each seed's difference with their mean and its 95% t-interval. A
figure with no run to draw is skipped (``--missing`` writes it, saying on its face which
experiment to run and with which command); a figure with failed or unfinished runs says how many.
Figures go next to the results they come from (:mod:`benchmarks.outputs`).
"""

from __future__ import annotations

import argparse
import io
import re
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from benchmarks import aggregate as agg  # noqa: E402
from benchmarks import intervals, outputs  # noqa: E402
from benchmarks import records as rec  # noqa: E402
from benchmarks.experiments import ACTION_DIMS, TABLE1_DATASETS, target_entropy  # noqa: E402
from odt.checkpoint import atomic_write_bytes  # noqa: E402
from odt.config import PRESETS, is_antmaze  # noqa: E402

EVAL_PHASES = ("pretrain", "online")
ANTMAZE_LEARNED = 30.0  # the antmaze_sizing figure's dashed line: PROTOCOL-antmaze-sizing-cpu.md's 'learned'
CURVE_BAND = " (line: mean over seeds; band: its 95% t-interval over the n seeds, none where n = 1)"
FINAL_BARS = " (point: mean over seeds; bar: its 95% t-interval over the n seeds; faint dots: one seed each)"
FEW_EVALS = 3  # a curve with a run of at most this many evaluations shows where it starts and ends, no line
ENDS = ("start mean", "final mean")
MIN_SPAN = 20.0  # the least height of a score axis (normalized points): a sub-point gap stays small
CURVE_ENDS = CURVE_BAND[:-1] + (f"; a curve with a run of at most {FEW_EVALS} evaluations: points at its "
                                f"start and final means, bar: their 95% t-interval; one y scale per "
                                f"domain, at least {MIN_SPAN:g} points tall)")


@dataclass(frozen=True)
class Figure:
    name: str
    experiment: str
    title: str
    draw: Callable[[pd.DataFrame, plt.Figure], pd.DataFrame]  # returns the data drawn
    size: tuple[float, float] = (7.0, 4.0)
    select: Callable[[pd.DataFrame], pd.DataFrame] | None = None  # the experiment's runs the figure uses
    also: tuple[str, ...] = ()  # other experiments whose runs ``select`` may keep (it must be given)


# ----- data helpers --------------------------------------------------------------------------
def _y(df: pd.DataFrame) -> str:
    return "score_mean" if "score_mean" in df and df["score_mean"].notna().any() else "return_mean"


def evals(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["phase"].isin(EVAL_PHASES)] if "phase" in df else df.iloc[0:0]


def common_end(df: pd.DataFrame, x: str) -> float:
    """The largest x every complete run reaches (runs stop at the first round past the budget,
    each at its own count; averaging beyond the first to stop makes the mean jump)."""
    done = df[df["status"] == "complete"] if "status" in df and (df["status"] == "complete").any() else df
    return float(done.groupby("run_id")[x].max().min())


def on_grid(df: pd.DataFrame, x: str, y: str, by: list[str], points: int = 40,
            common: bool = False, common_start: bool = False) -> pd.DataFrame:
    """Each run's (x, y) curve interpolated onto one grid of x, so runs can be averaged;
    ``common``: the grid ends where the first complete run ends, so every point averages every run;
    ``common_start``: it starts where the last run starts (runs whose first row comes at
    different x, as the exploration RTG does online, would make the mean jump as each enters)."""
    df = df.dropna(subset=[x, y])
    if df.empty:
        return pd.DataFrame(columns=[*by, "run_id", x, y])
    # each run is drawn from its own first evaluation (no flat extrapolation before it) to its last
    start = float(df.groupby("run_id")[x].min().max()) if common_start else float(df[x].min())
    grid = np.linspace(start, common_end(df, x) if common else float(df[x].max()), points)
    out = []
    for keys, g in df.groupby([*by, "run_id"], sort=True):
        # one value per x: the latest evaluation there (pretraining's rows all sit at 0 online samples,
        # and the curve starts where pretraining ended)
        g = g.sort_values([x, "step"] if "step" in g else [x], kind="stable").drop_duplicates(x, keep="last")
        xs, ys = g[x].to_numpy(float), g[y].to_numpy(float)
        inside = grid[(grid >= xs.min()) & (grid <= xs.max())]
        vals = np.interp(inside, xs, ys)
        keys = keys if isinstance(keys, tuple) else (keys,)
        out.append(pd.DataFrame({**dict(zip([*by, "run_id"], keys)), x: inside, y: vals}))
    return pd.concat(out, ignore_index=True)


def _natural(text) -> tuple:
    """Sort key that orders 'g_online=2x' before 'g_online=10x'."""
    return tuple((0, float(t), "") if t.replace(".", "", 1).isdigit() else (1, 0.0, t)
                 for t in re.split(r"(\d+(?:\.\d+)?)", str(text)) if t)


def _order(values) -> list:
    return sorted(pd.unique(pd.Series(values)), key=_natural)


def _split_variant(df: pd.DataFrame) -> pd.DataFrame:
    """Variant 'a,b,c' -> factor 'a' (what the figure compares) and setting 'b,c' (the rest)."""
    df = df.copy()
    parts = df["variant"].astype(str).str.split(",", n=1)
    df["factor"] = parts.str[0]
    df["setting"] = parts.str[1].fillna("")
    return df


def _factor_name(values: list) -> str:
    """The legend title of a compared factor: its field when every value names the same one
    ('pos=False', 'pos=True' -> 'pos'), else 'factor'."""
    names = {str(v).split("=", 1)[0] for v in values if "=" in str(v)}
    return names.pop() if len(names) == 1 and all("=" in str(v) for v in values) else "factor"


def _facet_order(values, facet: str, first: Sequence[str] = ()) -> list:
    """Panels in the order ``first`` gives (the paper's), then the others by name; datasets in
    Table 1's order (others after it, by name)."""
    first = TABLE1_DATASETS if facet == "dataset" else first
    rank = {d: i for i, d in enumerate(first)}
    return sorted(pd.unique(pd.Series(values)), key=lambda d: (rank.get(d, len(rank)), _natural(d)))


def _legend_with_seed_counts(ax: plt.Axes, data: pd.DataFrame, hue: str, per: str | None = None) -> None:
    """Each legend entry says how many runs its line averages: 'odt (n=10)'; with ``per`` (the
    x categories, each its own mean) how many each point averages: 'odt (n=5 per dataset)'."""
    legend = ax.get_legend()
    if legend is None:
        return
    if per is None or per == hue:
        counts = {str(k): v for k, v in data.groupby(hue)["run_id"].nunique().items()}
    else:
        n = data.groupby([hue, per])["run_id"].nunique()
        counts = {str(k): (f"{g.min()}" if g.min() == g.max() else f"{g.min()}-{g.max()}") + f" per {per}"
                  for k, g in n.groupby(level=0)}
    for text in legend.get_texts():
        if text.get_text() in counts:
            text.set_text(f"{text.get_text()} (n={counts[text.get_text()]})")


# one colour per method in every figure (ODT is the same orange in Table 1's curves and beside its
# control); other hues (variants, datasets, settings) take the default palette in their order
METHOD_COLORS = dict(zip(("iql", "odt", "sac", "dt", "odt-control", "odt-offline"),
                         sns.color_palette("deep", n_colors=6)))


def hue_colors(order: list, hue: str) -> dict:
    """{hue value: colour}: the fixed METHOD_COLORS where ``hue`` is the method, else the default
    palette in ``order``."""
    if hue == "method" and all(h in METHOD_COLORS for h in order):
        return {h: METHOD_COLORS[h] for h in order}
    return dict(zip(order, sns.color_palette(n_colors=len(order))))


def _curves(df: pd.DataFrame, fig: plt.Figure, hue: str, facet: str | None = None,
            x: str = "online_samples", facet_order: Sequence[str] = (), sharey: bool = False,
            ends_only: bool = False) -> pd.DataFrame:
    """Each ``hue``'s mean curve with its band, a panel per ``facet``. ``ends_only`` (Table 1's
    figures, read at the final score): a curve with a run of at most ``FEW_EVALS`` evaluations
    is drawn as its start and final means, not as a line through them, and the panels of each
    domain share one y scale at least ``MIN_SPAN`` tall."""
    e = evals(df)
    y = _y(e)
    facets = _facet_order(e[facet], facet, facet_order) if facet else [None]
    parts = [_panel_on_grid(e if f is None else e[e[facet] == f], x, y, hue, [hue] + ([facet] if facet else []),
                            ends_only) for f in facets]
    data = pd.concat(parts, ignore_index=True)
    cols = min(4, max(1, len(facets)))
    rows = -(-len(facets) // cols)
    if rows > 1:
        fig.set_size_inches(3.5 * cols, 3.0 * rows + 0.8)
    else:  # fewer panels than the figure was sized for: no stretched curves
        fig.set_figwidth(min(fig.get_figwidth(), 3.0 + 3.5 * cols))
    axes = fig.subplots(rows, cols, squeeze=False, sharey=sharey).ravel()
    for ax in axes[len(facets):]:
        ax.set_visible(False)
    order = _order(data[hue])
    colors = hue_colors(order, hue)  # one colour per hue in every panel
    for ax, f, sub in zip(axes, facets, parts):
        present = [h for h in order if h in set(sub[hue])]  # a panel's legend names only what it draws
        if ends_only:
            _lines_and_ends(ax, sub, x, y, hue, present, colors)
        else:
            sns.lineplot(sub, x=x, y=y, hue=hue, hue_order=present, palette={h: colors[h] for h in present},
                         errorbar=BAND, ax=ax)
            _legend_with_seed_counts(ax, sub, hue)
        ax.set_title(str(f) if f is not None else "")
        ax.set_xlabel("" if ends_only else x.replace("_", " "))  # ends_only: the legend sits there
        ax.set_ylabel(_y_label(y, f if facet == "dataset" else None))
    if ends_only:
        fig.supxlabel(x.replace("_", " "), fontsize="medium")
        if facet == "dataset":
            share_y_per_domain(axes[:len(facets)], facets)
    return data


def _panel_on_grid(e: pd.DataFrame, x: str, y: str, hue: str, by: list[str], ends_only: bool = False) -> pd.DataFrame:
    """One panel's curves on grids of x: one grid per curve (``hue``), ending where that curve's
    first run ends, so each point averages all of the curve's runs and no curve is cut where
    another stopped (ODT's AntMaze runs end at 5,600 samples, IQL's at 5,000). ``ends_only``:
    a curve with a run of few evaluations is its start and final means (:func:`start_and_final`)."""
    def one(g):
        if not ends_only:
            return on_grid(g, x, y, by, common=True)
        # one run with few evaluations makes the mean between them mostly straight-line interpolation
        few = g.dropna(subset=[x, y]).groupby("run_id")[x].nunique().min() <= FEW_EVALS
        return start_and_final(g, x, y, by) if few else on_grid(g, x, y, by, common=True).assign(drawn="grid")
    parts = [one(g) for _, g in e.groupby(hue, sort=False)]
    return pd.concat(parts, ignore_index=True) if parts else on_grid(e, x, y, by, common=True)


def latest_per_x(e: pd.DataFrame, x: str) -> pd.DataFrame:
    """Each run's evaluations, one per x (the latest there: pretraining's all sit at 0 online
    samples, and a run's online course starts where its pretraining ended), sorted by x."""
    keys = ["run_id", x, "step"] if "step" in e else ["run_id", x]
    return e.sort_values(keys, kind="stable").drop_duplicates(["run_id", x], keep="last")


def start_and_final(g: pd.DataFrame, x: str, y: str, by: list[str]) -> pd.DataFrame:
    """A curve's runs' first and last evaluations: each end's mean x, mean ``y`` and its 95%
    t-interval over the ``n`` runs (NaN, no bar, for one run)."""
    runs = latest_per_x(g.dropna(subset=[x, y]), x).groupby("run_id")
    rows = []
    for drawn, ends in zip(ENDS, (runs.head(1), runs.tail(1))):
        low, high = t_band(ends[y])
        rows.append({**ends[by].iloc[0].to_dict(), "drawn": drawn, x: ends[x].mean(), y: ends[y].mean(),
                     "n": len(ends), "low": low, "high": high})
    return pd.DataFrame(rows)


def _lines_and_ends(ax, sub: pd.DataFrame, x: str, y: str, hue: str, present: list, colors: dict) -> None:
    """A panel of :func:`_curves` with ``ends_only``: curves as lines with bands, curves with few
    evaluations as their start and final means with bars (nudged apart where arms share a start);
    the legend counts each curve's runs."""
    ends = sub[sub["drawn"].isin(ENDS)]
    lines = sub[~sub["drawn"].isin(ENDS)]
    line_hues = [h for h in present if h in set(lines[hue])]
    if line_hues:
        sns.lineplot(lines, x=x, y=y, hue=hue, hue_order=line_hues, palette={h: colors[h] for h in line_hues},
                     errorbar=BAND, legend=False, ax=ax)
    end_hues = [h for h in present if h in set(ends[hue])]
    for i, h in enumerate(end_hues):
        p = ends[ends[hue] == h]
        nudge = (i - (len(end_hues) - 1) / 2) * 0.02 * sub[x].max()
        ax.errorbar(p[x] + nudge, p[y], yerr=[p[y] - p["low"], p["high"] - p[y]], fmt="o", ms=5, capsize=3,
                    color=colors[h])
    counts = {h: lines.loc[lines[hue] == h, "run_id"].nunique() for h in line_hues}
    counts |= {h: int(ends.loc[ends[hue] == h, "n"].max()) for h in end_hues}
    ax.legend(handles=[Line2D([], [], color=colors[h], marker="o" if h in end_hues else None,
                              ls="none" if h in end_hues else "-", label=f"{h} (n={counts[h]})") for h in present],
              loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=len(present), frameon=False, fontsize="small",
              handlelength=1.5, columnspacing=1.0)  # under the panel, off its data


def bounded_span(low: float, high: float, span: float, floor: float | None = None) -> tuple[float, float]:
    """(low, high) widened about its middle to at least ``span``, not below ``floor`` (where it
    would be, the widening goes up instead)."""
    pad = max(0.0, span - (high - low)) / 2
    low, high = low - pad, high + pad
    if floor is not None and low < floor:
        low, high = floor, high + (floor - low)
    return low, high


def share_y_per_domain(axes, datasets) -> None:
    """The panels of one domain (hopper, walker2d, antmaze, ...) on one y scale that covers all of
    them, at least ``MIN_SPAN`` tall and below 0 only where the data go there: a free scale per
    panel magnifies gaps of a fraction of a point into trends."""
    groups: dict[str, list] = {}
    for ax, dataset in zip(axes, datasets):
        groups.setdefault(str(dataset).split("-")[0], []).append(ax)
    for group in groups.values():
        low, high = min(a.get_ylim()[0] for a in group), max(a.get_ylim()[1] for a in group)
        limits = bounded_span(low, high, MIN_SPAN, floor=min(low, 0.0))
        for a in group:
            a.set_ylim(*limits)


def _y_label(y: str, dataset: str | None = None) -> str:
    """An axis's name: on AntMaze D4RL's normalized return is the success rate in percent (its
    reference scores are 0 and 1), so its panels say so."""
    if y != "score_mean":
        return "return"
    return "success rate (%)" if dataset is not None and is_antmaze(str(dataset)) else "normalized return"


STRIP_SEED = 0  # the seeds' dots' horizontal jitter: fixed, so regenerating a figure changes no byte


def _means_with_seeds(ax, data: pd.DataFrame, x: str, y: str, order: list, hue: str | None = None,
                      hue_order: list | None = None, dodge: float = 0.0, color: str | None = None) -> None:
    """Each arm's mean with its 95% t-interval, and beside it every seed as a faint dot.
    seaborn jitters the dots with numpy's global generator; it is seeded here and put back after,
    so the figure's bytes depend on the data only and nothing else's randomness is touched."""
    palette = hue_colors(hue_order, hue) if hue == "method" and hue_order else None
    sns.pointplot(data, x=x, y=y, hue=hue, order=order, hue_order=hue_order, errorbar=BAND, ax=ax,
                  dodge=dodge or False, linestyle="none", color=color, palette=palette)
    state = np.random.get_state()
    try:
        np.random.seed(STRIP_SEED)
        sns.stripplot(data, x=x, y=y, hue=hue, order=order, hue_order=hue_order, dodge=hue is not None,
                      alpha=0.4, legend=False, palette=palette, color=color, ax=ax)
    finally:
        np.random.set_state(state)


def _final(df: pd.DataFrame, fig: plt.Figure, x: str, hue: str) -> pd.DataFrame:
    e = evals(df)
    y = _y(e)
    last = e.sort_values("step").groupby("run_id").tail(1)
    ax = fig.subplots()
    order, hue_order = _order(last[x]), _order(last[hue])
    _means_with_seeds(ax, last, x, y, order, hue=hue, hue_order=hue_order, dodge=0.4)
    _legend_with_seed_counts(ax, last, hue, per=x)
    if ax.get_legend() is not None:  # beside the axes: inside, it covered seeds' dots
        sns.move_legend(ax, "upper left", bbox_to_anchor=(1.01, 1.0), frameon=False,
                        title=_factor_name(hue_order) if hue == "factor" else hue)
    ax.set_xlim(-0.5, len(order) - 0.5)  # one category: keep the arms next to their tick
    fig.set_figwidth(min(fig.get_figwidth(), 4.0 + 2.5 * len(order)))  # few categories: no wide void
    ax.set_ylabel("final normalized return" if y == "score_mean" else "final return")
    ax.tick_params(axis="x", rotation=20)
    return last[["run_id", "dataset", "variant", x, hue, y]] if x != hue else last


def last_evaluations(df: pd.DataFrame) -> pd.DataFrame:
    """Each run's last evaluation: the final score the protocols read."""
    return evals(df).sort_values("step").groupby("run_id").tail(1)


def paired_differences(df: pd.DataFrame, a: str, b: str, y: str) -> pd.DataFrame:
    """Per seed that ran both variants, the final ``y`` of variant ``a``, of ``b``, and a − b."""
    wide = last_evaluations(df).pivot_table(index="seed", columns="variant", values=y)
    if a not in wide or b not in wide:
        return pd.DataFrame(columns=["seed", "a", "b", "difference"])
    wide = wide[[a, b]].dropna().reset_index().set_axis(["seed", "a", "b"], axis=1)
    return wide.assign(difference=wide["a"] - wide["b"])


def t_interval(values) -> tuple[float, float, float]:
    """Mean and 95% t-interval (:func:`benchmarks.intervals.mean_interval`); one value: no interval."""
    values = np.asarray(values, float)
    if len(values) < 2:
        return float(values.mean()) if len(values) else np.nan, np.nan, np.nan
    i = intervals.mean_interval(values)
    return i.estimate, i.low, i.high


def t_band(values) -> tuple[float, float]:
    """(low, high) of the 95% t-interval of the mean of ``values`` over seeds: every band and bar of
    the figures (seaborn's ``errorbar``, which leaves a single value without one); NaN for one value."""
    _, low, high = t_interval(values)
    return low, high


BAND = t_band  # seaborn's default errorbar and ("ci", 95) are percentile bootstraps: never used here


def seed_colors(seeds) -> dict:
    """One colour per seed, the same in every panel of a figure (not the arms' palette)."""
    order = sorted({int(s) for s in seeds})
    return dict(zip(order, sns.color_palette("Dark2", n_colors=max(len(order), 3))))


def seed_legend(fig: plt.Figure, colors: dict) -> None:
    """The seeds' colours, beside the panels."""
    fig.legend(handles=[Line2D([], [], color=c, marker="o", label=f"seed {s}") for s, c in colors.items()],
               loc="outside lower center", ncol=len(colors), frameon=False)


def _finals_by_seed(ax, df: pd.DataFrame, arms: list[str], y: str, colors: dict, labels: list[str] | None = None):
    """Each seed's final score in every arm, joined across the arms in its colour (which arm is
    ahead on each seed, and how much the seeds differ), each arm's mean a black bar."""
    last = last_evaluations(df)
    wide = last.pivot_table(index="seed", columns="variant", values=y).reindex(columns=arms)
    for seed, row in wide.iterrows():
        ax.plot(range(len(arms)), row.to_numpy(), marker="o", ms=4, lw=1, color=colors[int(seed)])
    ax.scatter(range(len(arms)), wide.mean().to_numpy(), marker="_", s=500, lw=2, color="black", zorder=3)
    ax.set_xticks(range(len(arms)), labels or arms)
    ax.set_xlim(-0.4, len(arms) - 0.6)
    ax.set_ylabel("final normalized return" if y == "score_mean" else "final return")
    return last[last.variant.isin(arms)][["run_id", "variant", "seed", y]].rename(columns={y: "value"})


def _paired_panel(ax, paired: pd.DataFrame, colors: dict, ylabel: str) -> pd.DataFrame:
    """Per ``comparison``, each seed's paired difference (a dot in its colour) and their mean
    (black diamond) with its 95% t-interval, beside the line of no difference."""
    ax.axhline(0, color="grey", lw=0.8)
    comparisons, out = list(dict.fromkeys(paired["comparison"])), []
    for i, name in enumerate(comparisons):
        d = paired[paired["comparison"] == name].sort_values("seed")
        mean, low, high = t_interval(d["difference"])
        ax.scatter(i - 0.3 + 0.08 * np.arange(len(d)), d["difference"], color=[colors[int(s)] for s in d.seed],
                   zorder=3)
        ax.errorbar(i + 0.2, mean, yerr=None if np.isnan(low) else [[mean - low], [high - mean]], fmt="D",
                    color="black", capsize=4)
        ax.annotate(f"{mean:+.1f}" + ("" if np.isnan(low) else f"\n[{low:+.1f}, {high:+.1f}]"), (i + 0.2, mean),
                    xytext=(6, 0), textcoords="offset points", va="center", fontsize="small")
        out.append(d.assign(mean=mean, low=low, high=high))
    ax.set_xticks(range(len(comparisons)),
                  [f"{c}\n({len(d)} seeds paired)" for c, d in zip(comparisons, out)])
    ax.set_xlim(-0.6, len(comparisons) - 0.4)
    ax.set_ylabel(ylabel)
    return pd.concat(out, ignore_index=True) if out else paired


# ----- the figures ---------------------------------------------------------------------------
def online_runs(df: pd.DataFrame) -> pd.DataFrame:
    """Table 1's methods with an online phase: the runs the learning curves draw (and count in
    their caption; the offline-only methods have no curve there)."""
    return df[df.method.isin(["odt", "iql", "sac"])]


def draw_learning_curves(df, fig):
    """Table 1's learning curves, one panel per dataset, from the runs ``online_runs`` selects."""
    return _curves(df, fig, hue="method", facet="dataset", ends_only=True)


def convergence_runs(df: pd.DataFrame) -> pd.DataFrame:
    """Fig. 2 from Table 1's ``odt`` runs on hopper-medium (reused, never rerun)."""
    return df[(df.method == "odt") & (df.dataset == "hopper-medium")]


HOPPER_BETA = target_entropy("hopper-medium")


NLL_LINEAR = 2.0  # the NLL axis is linear within ±2 nats (it turns negative), logarithmic beyond


def pretraining_end(e: pd.DataFrame) -> float:
    """The updates of the last pretraining evaluation (NaN when there is none)."""
    return e.loc[e["phase"] == "pretrain", "updates"].max() if {"phase", "updates"} <= set(e) else np.nan


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


def draw_stoch(df, fig):
    """Fig. 4: a panel per model size, small left and large right as in the paper, on one y scale
    (the paper reads both arms as improving with the larger model)."""
    return _curves(_split_variant(df), fig, hue="setting", facet="factor", facet_order=("small", "large"),
                   sharey=True)


def draw_g_eval(df, fig):
    """Figs. 3 / 5 (L): the return of each run's sweep over g_eval, after pretraining and after
    finetuning, on one y axis so the two sensitivities compare; each seed a thin grey line, the
    mean with its 95% t-interval band over seeds, g* (the sweep's 1x point) dashed."""
    s = df[df["phase"].isin(["sweep-pretrained", "sweep-finetuned"])] if "phase" in df else df.iloc[0:0]
    y = _y(s)
    axes = fig.subplots(1, 2, squeeze=False, sharey=True)[0]
    ones = s[np.isclose(s["g_eval_multiple"].astype(float), 1.0)] if "g_eval_multiple" in s else s.iloc[0:0]
    for ax, phase in zip(axes, ["sweep-pretrained", "sweep-finetuned"]):
        d = s[s.phase == phase]
        if d.empty:
            continue
        sns.lineplot(d, x="g_eval", y=y, units="run_id", estimator=None, color="grey", alpha=0.4, lw=0.8, ax=ax)
        sns.lineplot(d, x="g_eval", y=y, errorbar=BAND, marker="o", ax=ax)
        for g in sorted(ones["g_eval"].unique()):
            ax.axvline(g, color="grey", ls="--", lw=0.8)
        ax.set_title(phase.replace("sweep-", "after ").replace("pretrained", "pretraining")
                     .replace("finetuned", "finetuning") + " (grey: one seed each)")
        ax.set_xlabel("g_eval, the return-to-go evaluated at (dashed: g*)")
        ax.set_ylabel("normalized return" if y == "score_mean" else "return")
    cols = [c for c in ("run_id", "phase", "g_eval", "g_eval_multiple", y) if c in s]
    return s[cols] if not s.empty else s


def draw_variant_curves(df, fig):
    return _curves(df, fig, hue="variant")


HINDSIGHT_ARMS = {"relabel=False": "relabel off", "relabel=True": "relabel on"}


def draw_hindsight(df, fig):
    """Fig. 7 as D9 reads it, paired by seed: each seed's final score with relabeling off and on
    (left), and relabel on − off per seed with their mean and its 95% t-interval (right)."""
    e = evals(df)
    y = _y(e)
    colors = seed_colors(e["seed"])
    left, right = fig.subplots(1, 2)
    finals = _finals_by_seed(left, e, list(HINDSIGHT_ARMS), y, colors, list(HINDSIGHT_ARMS.values()))
    left.set_title("final score, each seed (black: mean)")
    paired = paired_differences(e, "relabel=True", "relabel=False", y).assign(comparison="relabel on − off")
    drawn = _paired_panel(right, paired, colors, "relabel on − off, paired by seed (D9)")
    right.set_title("on − off per seed (black: mean, 95% t-interval)")
    seed_legend(fig, colors)
    return pd.concat([finals.assign(panel="each seed"), drawn.assign(panel="paired")], ignore_index=True)


def draw_seed_curves(df, fig, reference: str | None = None):
    """A panel per variant on one y scale: each seed's evaluations (thin, in its colour), the
    variant's mean over seeds (black, to where its first run ends) and ``reference``'s mean
    (dashed grey) in the other panels: no overlapping bands, and which seed drives what shows."""
    e = evals(df)
    x, y, arms = "online_samples", _y(e), _order(e["variant"])
    colors = seed_colors(e["seed"])
    means = _panel_on_grid(e, x, y, "variant", ["variant"]).groupby(["variant", x])[y].mean()
    axes = fig.subplots(1, len(arms), squeeze=False, sharey=True)[0]
    runs = latest_per_x(e.dropna(subset=[x, y]), x)
    for ax, arm in zip(axes, arms):
        for seed, r in runs[runs["variant"] == arm].groupby("seed"):
            ax.plot(r[x], r[y], marker="o", ms=3, lw=0.8, color=colors[int(seed)])
        if reference in means and arm != reference:
            ax.plot(means[reference].index, means[reference].to_numpy(), color="grey", ls="--", lw=1.2)
        ax.plot(means[arm].index, means[arm].to_numpy(), color="black", lw=2)
        ax.set(title=f"{arm} (n={runs.loc[runs['variant'] == arm, 'run_id'].nunique()})", xlabel="online samples",
               ylabel=_y_label(y) if ax is axes[0] else "")
    seed_legend(fig, colors)
    return pd.concat([runs[["run_id", "variant", "seed", x, y]].assign(drawn="seed"),
                      means.reset_index().assign(drawn="mean over seeds")], ignore_index=True)


def draw_g_online_curves(df, fig):
    """Fig. 5 (R)'s runs over online samples, a panel per g_online; dashed: 2x, ODT's default,
    which D5 and D6 compare against."""
    return draw_seed_curves(df, fig, reference="g_online=2x")


def draw_variant_curves_by_dataset(df, fig):
    return _curves(df, fig, hue="variant", facet="dataset")


def draw_variant_curves_by_updates(df, fig):
    """Offline-only runs' curves against their gradient updates, one panel per dataset."""
    return _curves(df, fig, hue="variant", facet="dataset", x="updates")


def draw_grid_final(df, fig):
    return _final(_split_variant(df), fig, x="setting", hue="factor")


def draw_variant_final(df, fig):
    return _final(df, fig, x="variant", hue="variant")


def draw_table_rtg(df, fig):
    return _final(df, fig, x="dataset", hue="variant")


def _metric_panels(fig, e, x: str, metrics, titles: dict | None = None, xlabel: str | None = None,
                   log_y: tuple = (), common_start: tuple = (), end_per_variant: bool = False,
                   each_run: bool = False) -> pd.DataFrame:
    """One panel per metric (columns of ``e`` missing are left empty): variants' curves against ``x``.
    The grid ends where the first run ends (runs that stop at different x would make the mean jump
    as they drop out); ``end_per_variant``: each variant's where its own first run ends, for
    variants whose runs last very different lengths (Fig. 12's initial lambdas). ``each_run``:
    every run also drawn thin in its variant's colour to its own end, so what a longer run does
    after the mean stops stays visible."""
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    parts = []
    for ax, c in zip(axes, metrics):
        if c not in e:
            continue
        groups = [g for _, g in e.groupby("variant")] if end_per_variant else [e]
        d = pd.concat([on_grid(g, x, c, ["variant"], common=True, common_start=c in common_start) for g in groups],
                      ignore_index=True)
        order = _order(d["variant"])
        sns.lineplot(d, x=x, y=c, hue="variant", hue_order=order, errorbar=BAND, ax=ax)
        if each_run:
            runs = e[e["variant"].isin(order)].dropna(subset=[x, c])
            sns.lineplot(runs, x=x, y=c, hue="variant", hue_order=order, units="run_id", estimator=None,
                         lw=0.7, alpha=0.45, legend=False, ax=ax)
        _legend_with_seed_counts(ax, d, "variant")  # the caption's "n in the legends"
        ax.set_title((titles or {}).get(c, c))
        ax.set_ylabel((titles or {}).get(c, c))
        if xlabel:
            ax.set_xlabel(xlabel)
        if c in log_y:
            _plain_log_y(ax)
        parts.append(d.assign(metric=c).rename(columns={c: "value"}))
    return pd.concat(parts, ignore_index=True) if parts else e


def _plain_log_y(ax: plt.Axes) -> None:
    """A log y axis labelled 0.4, 1, 2 rather than 4 x 10^-1; the minor ticks are labelled only
    while the axis spans less than a decade (wider, their labels would overlap)."""
    def minor(v, _):
        low, high = ax.get_ylim()
        return f"{v:g}" if high < 10 * low else ""

    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(minor))


def draw_lambda(df, fig):
    """Fig. 12: entropy and lambda from each initial lambda; the entropy panel marks beta = -|A|
    (dashed), the value the claim says every run's entropy reaches whatever its lambda0."""
    e = evals(df)
    datasets = e["dataset"].dropna().unique() if "dataset" in e else []
    betas = sorted({b for d in datasets if (b := target_entropy(d)) is not None})
    beta_text = ", ".join(f"−{-b:g}" for b in betas)
    titles = {"entropy": f"policy entropy (dashed: β = −|A| = {beta_text})" if betas else "policy entropy",
              "lambda": "λ (temperature)"}
    data = _metric_panels(fig, e, "updates", ("entropy", "lambda"), titles=titles, log_y=("lambda",),
                          xlabel="gradient updates (dotted: end of pretraining)", end_per_variant=True,
                          each_run=True)
    entropy_ax, lambda_ax = fig.axes[:2]
    entropy_ax.set_ylabel("entropy (nats)")
    lambda_ax.set_ylabel("λ")
    for b in betas if "entropy" in e else []:
        entropy_ax.axhline(b, color="grey", ls="--", lw=0.8)
    switch = pretraining_end(e)
    for ax in (entropy_ax, lambda_ax) if pd.notna(switch) else ():
        ax.axvline(switch, color="grey", ls=":", lw=0.8)
    return data


CURRICULUM_PAIRS = {"D7: fixed − q=90": ("fixed", "q=90"), "D8: q=90 − q=10": ("q=90", "q=10")}


def draw_curriculum(df, fig):
    """Fig. 6 as the protocol reads it: the exploration RTG each arm conditioned on (left, mean
    over seeds, from where every run has logged one), each seed's final score in every arm
    (middle), and D7 and D8 paired by seed (right)."""
    e = evals(df)
    y, arms = _y(e), _order(e["variant"])
    colors = seed_colors(e["seed"])
    rtg_ax, final_ax, paired_ax = fig.subplots(1, 3, width_ratios=(1.3, 1.3, 1))
    parts = []
    if "exploration_rtg" in e and e["exploration_rtg"].notna().any():
        rtg = on_grid(e, "online_samples", "exploration_rtg", ["variant"], common=True, common_start=True)
        qs = [a for a in arms if a.startswith("q=")]  # percentiles light to dark, the others black: not seeds' hues
        palette = {a: "black" for a in arms} | dict(zip(qs, sns.color_palette("Blues", n_colors=len(qs) + 1)[1:]))
        sns.lineplot(rtg, x="online_samples", y="exploration_rtg", hue="variant", hue_order=arms, palette=palette,
                     errorbar=None, ax=rtg_ax)
        _legend_with_seed_counts(rtg_ax, rtg, "variant")
        sns.move_legend(rtg_ax, "upper left", bbox_to_anchor=(0.0, -0.2), ncol=3, title=None, frameon=False)
        parts.append(rtg.assign(metric="exploration_rtg").rename(columns={"exploration_rtg": "value"}))
    rtg_ax.set(title="exploration RTG (mean over seeds)", xlabel="online samples", ylabel="exploration RTG")
    parts.append(_finals_by_seed(final_ax, e, arms, y, colors).assign(metric=y))
    final_ax.set_title("final score, each seed (black: mean)")
    final_ax.tick_params(axis="x", rotation=30)
    paired = [paired_differences(e, a, b, y).assign(comparison=name) for name, (a, b) in CURRICULUM_PAIRS.items()]
    paired = pd.concat([p for p in paired if not p.empty] or paired, ignore_index=True)
    parts.append(_paired_panel(paired_ax, paired, colors, "paired difference of final scores").assign(
        metric=f"paired final {y}"))
    paired_ax.set_title("D7, D8 per seed (black: mean, 95% t-interval)")
    seed_legend(fig, colors)
    return pd.concat([p for p in parts if not p.empty], ignore_index=True)


def control_runs(df: pd.DataFrame) -> pd.DataFrame:
    """Table 1's ``odt`` and ``odt-control`` runs (the figure has nothing to draw without them)."""
    return df[df.method.isin(["odt", "odt-control"])]


def draw_control(df, fig):
    """ODT against its no-new-data control over online samples, one panel per dataset."""
    return _curves(df, fig, hue="method", facet="dataset", ends_only=True)


def _odt_against_control(df: pd.DataFrame, fig: plt.Figure, x: str, xlabel: str, paired_label: str,
                         band: tuple[float, float] | None = None) -> pd.DataFrame:
    """Final score of ODT and its control at each ``x`` (left), and ODT minus control paired by
    seed (right), each seed a dot, the mean with its 95% t-interval (paired: over the per-seed
    differences), and the protocol's
    no-effect ``band`` where it has one."""
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


LENGTH_ARMS = {"offline_length": "offline protocol, 5000 updates (offline_length)",
               "odt-offline": "offline protocol, 2500 updates (Table 1)",
               "odt": "ODT's pretraining (Table 1's odt runs)"}


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


C3_ARMS = {("offline_length_c3", "odt-offline"): "ODT offline, 1e4 updates (offline_length_c3)",
           ("offline_length_c3", "dt"): "DT, 1e4 updates (offline_length_c3)",
           ("table1", "odt-offline"): "ODT offline, 2500 updates (Table 1)",
           ("table1", "dt"): "DT, 2500 updates (Table 1)"}
# one hue per method, dark at the amendment's length and light at Table 1's (matplotlib's tab20 pairs)
C3_COLORS = dict(zip(C3_ARMS.values(), ("#2ca02c", "#d62728", "#98df8a", "#ff9896")))


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


ANTMAZE_ARMS = {"dt": "DT", "odt-offline": "ODT offline", "odt": "ODT's pretraining", "iql": "IQL's offline phase"}


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


# solid first, then dash patterns (on, off, ... in line widths) that let a line drawn earlier show
# through the gaps of one drawn over it at the same values
ARM_DASHES = ("", (4, 2), (1, 1.5), (6, 2, 1.5, 2), (2, 3))


def arm_dashes(arms: list[str]) -> dict[str, str | tuple]:
    """{arm: dash pattern}, ``ARM_DASHES`` in the arms' order (cycled past five)."""
    return {arm: ARM_DASHES[i % len(ARM_DASHES)] for i, arm in enumerate(arms)}


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


def draw_buffer_size(df, fig):
    """The buffer protocol (PROTOCOL-buffer-cpu.md) at each buffer size; its B1 band [-3, +3]."""
    return _odt_against_control(df, fig, "variant", "replay buffer (trajectories)",
                                "ODT − control, paired by seed (B1)", band=(-3, 3))


def draw_control_pretraining(df, fig):
    """Protocol P1m (PROTOCOL-control-pretraining-cpu.md): ODT and its control after 20k
    pretraining updates; ODT − control paired by seed is the protocol's comparison."""
    return _odt_against_control(df, fig, "dataset", "dataset", "ODT − control, paired by seed (P1m)")


def draw_offline_curve(df, fig):
    """IQL's offline score against its updates (the cpu preset's tuning curve)."""
    return _curves(df, fig, hue="dataset", x="updates")


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


def stability_runs(df: pd.DataFrame) -> pd.DataFrame:
    """Fig. 11 from Table 1's hopper-medium runs (the protocol reuses them, never reruns them)."""
    online = online_runs(df)
    return online[online.dataset == "hopper-medium"]


def draw_stability(df, fig):
    return _curves(df, fig, hue="method")


FIGURES = [
    Figure("learning_curves", "table1", "Table 1 runs: normalized return during online finetuning" + CURVE_ENDS,
           draw_learning_curves, (14, 3.5), select=online_runs),
    Figure("odt_vs_control", "table1", "ODT against its no-new-data control (odt-control) during finetuning"
           + CURVE_ENDS, draw_control, (10, 4), select=control_runs),
    Figure("control_pretraining", "control_pretraining", "Protocol P1m: ODT against its no-new-data control "
           "after the paper's amount of pretraining (20k updates of 64 sequences)" + FINAL_BARS,
           draw_control_pretraining, (9, 4)),
    Figure("buffer_size", "buffer_size", "Protocol PROTOCOL-buffer-cpu.md: what online data adds at three buffer sizes (hopper-medium)", draw_buffer_size, (11, 4)),
    Figure("offline_length", "offline_length", "PROTOCOL-offline-length-cpu.md: the offline protocol trained "
           "as long as ODT's pretraining, beside Table 1's offline protocol and ODT's own pretraining" + CURVE_BAND,
           draw_offline_length, (12, 5), select=offline_length_runs, also=("table1",)),
    Figure("offline_length_c3", "offline_length_c3", "PROTOCOL-offline-length-cpu.md, 2026-11-29 amendment: DT and "
           "ODT's offline protocol at 1e4 updates beside Table 1's (2500)" + CURVE_BAND,
           draw_offline_length_c3, (7, 5), select=offline_length_c3_runs, also=("table1",)),
    Figure("iql_offline_curve", "iql_offline_curve", "Tuning (seed 100): IQL's offline score over 2e5 updates", draw_offline_curve),
    Figure("dt_sizing", "dt_sizing", "Tuning (seeds 100-101): DT's score against its updates at three AdamW rates" + CURVE_BAND,
           draw_variant_curves_by_updates, (14, 3.5)),
    Figure("antmaze_sizing", "antmaze_sizing", "Tuning (seeds 100-101): success rate on antmaze-umaze against updates "
           "(dashed: 30%, the protocol's 'learned')", draw_antmaze_sizing, (14, 3.5)),
    Figure("antmaze_offline", "table1", "Table 1's AntMaze rows: success rate over each method's offline phase "
           "(DT, ODT offline, ODT's pretraining: 2e4 updates; IQL: 1.8e5; grey dashed line: 30%; each point 20 episodes, "
           "the last 100)" + CURVE_BAND,
           draw_antmaze_offline, (12, 5), select=antmaze_offline_runs),
    Figure("convergence", "table1", "Fig. 2: ODT on hopper-medium (Table 1's runs), return, NLL, entropy and lambda"
           + CURVE_BAND,
           draw_convergence, (14, 3.5), select=convergence_runs),
    Figure("stoch_vs_det", "stoch_vs_det", "Fig. 4: stochastic vs deterministic policy, a panel per model size that has runs (paper: small, large)" + CURVE_BAND, draw_stoch, (10, 4)),
    Figure("g_eval", "g_eval", "Fig. 3 / 5 (L): return against g_eval (line: mean over seeds; band: its 95% "
           "t-interval over the n seeds; grey: one seed each)", draw_g_eval, (10, 4)),
    Figure("g_online", "g_online", "Fig. 5 (R): final return against g_online" + FINAL_BARS, draw_variant_final),
    Figure("g_online_curves", "g_online", "g_online: learning curves, a panel per g_online (thin: one seed each, "
           "at its evaluations; black: mean over seeds; dashed grey: 2x, ODT's default, which D5 and D6 compare against)",
           draw_g_online_curves, (14, 3.6)),
    Figure("curriculum", "curriculum", "Fig. 6: curriculum exploration RTG vs fixed g_online, read as D7 = fixed − q=90 "
           "and D8 = q=90 − q=10, final scores paired by seed", draw_curriculum, (14, 4.6)),
    Figure("hindsight", "hindsight", "Fig. 7: hindsight return relabeling on / off, read as D9 = on − off, final scores "
           "paired by seed", draw_hindsight, (9, 4.2)),
    Figure("buffer_init", "buffer_init", "Fig. 8: replay buffer initialisation, top-N vs random" + CURVE_BAND, draw_variant_curves_by_dataset, (14, 3.5)),
    Figure("eval_context", "eval_context", "Fig. 9: evaluation context length 1 vs 5 (ant-medium-replay)" + FINAL_BARS, draw_grid_final, (9, 4)),
    Figure("pos_embedding", "pos_embedding", "Fig. 10: positional embedding on / off (walker2d-medium)" + FINAL_BARS, draw_grid_final, (9, 4)),
    Figure("lambda", "lambda", "Fig. 12: entropy and lambda from several initial lambdas (line: mean over seeds to "
           "where a variant's first run ends; band: its 95% t-interval over the n seeds; thin: one run each, to its end)",
           draw_lambda, (10, 4)),
    Figure("sampling", "sampling", "Appendix F runs (exploratory, not a figure of the paper): finetuning with trajectories sampled by length vs by return" + CURVE_BAND, draw_variant_curves),
    Figure("stability", "table1", "Fig. 11: stability of ODT, IQL and SAC (hopper-medium, Table 1's runs)" + CURVE_BAND,
           draw_stability, select=stability_runs),
    Figure("table_rtg", "table_rtg", "Appendix D: g_online = 2g* vs g*" + FINAL_BARS, draw_table_rtg, (12, 4)),
]


# ----- rendering -----------------------------------------------------------------------------
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


def _status_note(runs: pd.DataFrame) -> str:
    counts = runs.drop_duplicates("run_id").status.value_counts()
    return ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))


def _ranges(values) -> str:
    """[20, 21, 22, 24] -> '20-22, 24'."""
    vals, parts = sorted({int(v) for v in values}), []
    for v in vals:
        if parts and v == parts[-1][1] + 1:
            parts[-1][1] = v
        else:
            parts.append([v, v])
    return ", ".join(f"{a}-{b}" if b > a else f"{a}" for a, b in parts)


DATA_SOURCES = {"generated": "generated here by the project's forge (D4RL's recipe), not D4RL's files",
                "generated-smoke": "tiny generated smoke data", "d4rl": "D4RL's files"}


CURVE_KEYS = ("experiment", "dataset", "method", "variant")


def _seeds_per_curve(complete: pd.DataFrame) -> pd.Series | None:
    """How many seeds each (dataset, method, variant) has, or None when the frame does not say."""
    keys = [k for k in CURVE_KEYS if k in complete]
    if not keys:
        return None
    return complete.drop_duplicates([*keys, "seed"]).groupby(keys, dropna=False).seed.size()


def provenance_note(complete: pd.DataFrame) -> str:
    """What a reader needs beside the curves: seeds, the online samples the runs actually used
    (each stops at the first round past the budget), and where the data came from."""
    parts = [f"{'seed' if complete.seed.nunique() == 1 else 'seeds'} {_ranges(complete.seed)}"]
    per_curve = _seeds_per_curve(complete)
    if per_curve is not None and per_curve.min() != per_curve.max():  # not every curve has every seed
        parts[0] += f" ({per_curve.min()}-{per_curve.max()} seeds per curve: n in the legends)"
    if "online_samples" in complete and complete.online_samples.notna().any():
        used = complete.groupby("run_id").online_samples.max()
        used = used[used > 0]  # runs with an online phase (offline-only methods have none)
        if not used.empty:
            span = f"{used.min():,.0f}" if used.min() == used.max() else f"{used.min():,.0f}-{used.max():,.0f}"
            parts.append(f"online samples used {span} " + ("by the one online run" if len(used) == 1 else "per online run"))
    if "data_source" in complete:
        sources = sorted({str(s) for s in complete.data_source.dropna()})
        parts.append("data " + "; ".join(DATA_SOURCES.get(s, s) for s in sources) if sources else "data source unrecorded")
    return ", ".join(parts)


def _runs_of(spec: Figure, df: pd.DataFrame) -> pd.DataFrame:
    """The rows of the runs a figure draws: its experiment's (and its ``also``'s), narrowed by its ``select``."""
    runs = df[df.experiment.isin((spec.experiment, *spec.also))]
    return spec.select(runs) if spec.select is not None else runs


def render(spec: Figure, df: pd.DataFrame, preset: str, out: Path) -> list[Path]:
    runs = _runs_of(spec, df)
    complete = runs[runs.status == "complete"]
    fig = plt.figure(figsize=spec.size, layout="constrained")
    title = f"{spec.title}\n[preset {preset}]"
    if preset == "smoke":
        title += " SMOKE: plumbing check, not a result"
    if complete.empty:
        why = (f"no complete runs ({_status_note(runs)})" if not runs.empty else "no runs found")
        if spec.select is not None:
            why += " among the runs this figure draws"
        fig.text(0.5, 0.5, f"{why} for experiment '{spec.experiment}'\n"
                 f"run: python -m benchmarks.run {spec.experiment} --preset {preset}",
                 ha="center", va="center", fontsize=11, color="darkred")
        fig.suptitle(title, fontsize=10)
        return save_figure(fig, pd.DataFrame({"missing": [why]}), out, spec.name)
    data = spec.draw(complete, fig)
    note = _status_note(runs)
    if set(runs.status.unique()) - {"complete"}:
        note = "INCOMPLETE: " + note
    fig.suptitle(_wrapped(f"{title}\n{note}; {provenance_note(complete)}", fig), fontsize=10)
    return save_figure(fig, data, out, spec.name)


def _wrapped(title: str, fig: plt.Figure) -> str:
    """Each line of a suptitle wrapped to the figure's width (about 13 characters an inch at
    font size 10), so a narrow figure's caption is not cut at its edges."""
    width = max(40, int(fig.get_figwidth() * 13))
    return "\n".join(textwrap.fill(line, width) for line in title.split("\n"))


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
    title = f"Appendix F: sampling probability by length vs by return [preset {preset}, data {dataset_size(preset)}]"
    if not rows:
        fig.text(0.5, 0.5, "no dataset available:\n" + "\n".join(missing), ha="center", va="center",
                 color="darkred")
        fig.suptitle(title, fontsize=10)
        return save_figure(fig, pd.DataFrame({"missing": missing or ["none"]}), out, "sampling_probabilities")
    data = pd.concat(rows, ignore_index=True)
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
    note = f"; missing: {', '.join(missing)}" if missing else ""
    fig.suptitle(title + note, fontsize=10)
    return save_figure(fig, data, out, "sampling_probabilities")


def make_plots(root: Path | str, out: Path | str | None = None, presets: list[str] | None = None,
               names: list[str] | None = None, missing: bool = False) -> list[Path]:
    """Figures of each preset (default: every preset with runs under ``root``; none if it has none)
    under ``<out>/<preset>/`` (default ``out``: :func:`benchmarks.outputs.figures_root`).

    A figure with no run to draw (none of its experiment, or none its ``select`` keeps) is skipped,
    and Appendix F's figure is skipped
    unless every dataset is on disk, so that regenerating the committed figures adds no stray
    files; ``missing=True`` writes those too, each saying on its face what is missing."""
    root = Path(root)
    out = Path(out) if out is not None else outputs.figures_root(root)
    if not presets:
        presets = sorted({d.parent.parent.name for d in rec.iter_run_dirs(root)})
    written = []
    sns.set_theme(style="whitegrid", context="paper")
    for preset in presets:
        df = agg.load_results(root, preset)
        for spec in FIGURES:
            if names and spec.name not in names:
                continue
            if not missing and _runs_of(spec, df).empty:
                continue
            written += render(spec, df, preset, out / preset)
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
    print(f"wrote {len([q for q in paths if q.suffix == '.png'])} figures (png + pdf + csv) under {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
