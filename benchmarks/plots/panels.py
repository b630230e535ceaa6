"""The panels the figures are made of: mean curves with their bands, final scores with every
seed beside the mean, each seed's finals joined across arms, paired differences, and one panel
per logged metric. Each draws onto a figure or axes and returns the data it drew."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.lines import Line2D

from benchmarks.plots.data import (
    BAND,
    ENDS,
    FEW_EVALS,
    _order,
    _y,
    evals,
    last_evaluations,
    on_grid,
    start_and_final,
    t_interval,
)
from benchmarks.plots.style import (
    _facet_order,
    _factor_name,
    _legend_with_seed_counts,
    _plain_log_y,
    _y_label,
    hue_colors,
    legend_below,
    share_y_per_domain,
)

STRIP_SEED = 0  # the seeds' dots' horizontal jitter: fixed, so regenerating a figure changes no byte


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
            legend_below(ax, ncol=min(len(present), 3))
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
    """Each run's final score per ``x`` category and ``hue`` arm: the arms' means with their
    t-intervals and each seed's dot, the legend beside the axes."""
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
        legend_below(ax, ncol=min(len(order), 3))
        ax.set_title((titles or {}).get(c, c))
        ax.set_ylabel((titles or {}).get(c, c))
        if xlabel:
            ax.set_xlabel(xlabel)
        if c in log_y:
            _plain_log_y(ax)
        parts.append(d.assign(metric=c).rename(columns={c: "value"}))
    return pd.concat(parts, ignore_index=True) if parts else e
