"""How every figure looks alike: one colour per method and per seed, panels in the paper's
order, legends that count their runs, axis names and scales shared across a domain."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter
from matplotlib.transforms import ScaledTranslation

from benchmarks.experiments import TABLE1_DATASETS
from benchmarks.plots.data import _natural
from rlbase.protocol import is_antmaze

MIN_SPAN = 20.0  # the least height of a score axis (normalized points): a sub-point gap stays small

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


def seed_colors(seeds) -> dict:
    """One colour per seed, the same in every panel of a figure (not the arms' palette)."""
    order = sorted({int(s) for s in seeds})
    return dict(zip(order, sns.color_palette("Dark2", n_colors=max(len(order), 3))))


def seed_legend(fig: plt.Figure, colors: dict) -> None:
    """The seeds' colours, under the panels. Anchored just below the laid-out canvas rather than
    at the figure's edge ("outside lower center"): a tight save moves that edge down to the
    caption, and the legend with it."""
    fig.legend(handles=[Line2D([], [], color=c, marker="o", label=f"seed {s}") for s, c in colors.items()],
               loc="upper center", bbox_to_anchor=(0.5, 0.0), bbox_transform=fig.transFigure, ncol=len(colors),
               frameon=False)


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


LEGEND_DROP = 0.45  # inches from an axes' bottom to a legend put under it: below its tick labels and x label


def legend_below(ax: plt.Axes, ncol: int = 3) -> None:
    """The axes' legend moved under it, past its x label, so it covers no line or band."""
    if ax.get_legend() is None:
        return
    below = ax.transAxes + ScaledTranslation(0, -LEGEND_DROP, ax.figure.dpi_scale_trans)
    sns.move_legend(ax, "upper center", bbox_to_anchor=(0.5, 0.0), bbox_transform=below, ncol=ncol,
                    title=None, frameon=False, fontsize="small", handlelength=1.5, columnspacing=1.0)


def _y_label(y: str, dataset: str | None = None) -> str:
    """An axis's name: on AntMaze D4RL's normalized return is the success rate in percent (its
    reference scores are 0 and 1), so its panels say so."""
    if y != "score_mean":
        return "return"
    return "success rate (%)" if dataset is not None and is_antmaze(str(dataset)) else "normalized return"


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


def _plain_log_y(ax: plt.Axes) -> None:
    """A log y axis labelled 0.4, 1, 2 rather than 4 x 10^-1; the minor ticks are labelled only
    while the axis spans less than a decade (wider, their labels would overlap)."""
    def minor(v, _):
        low, high = ax.get_ylim()
        return f"{v:g}" if high < 10 * low else ""

    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(minor))


# solid first, then dash patterns (on, off, ... in line widths) that let a line drawn earlier show
# through the gaps of one drawn over it at the same values
ARM_DASHES = ("", (4, 2), (1, 1.5), (6, 2, 1.5, 2), (2, 3))


def arm_dashes(arms: list[str]) -> dict[str, str | tuple]:
    """{arm: dash pattern}, ``ARM_DASHES`` in the arms' order (cycled past five)."""
    return {arm: ARM_DASHES[i % len(ARM_DASHES)] for i, arm in enumerate(arms)}
