"""The ablation figures of the paper (Figs. 3-10, 12 and Appendices D and F): variants' curves
and final scores, the g_eval sweeps, and the comparisons the protocol reads paired by seed
(Figs. 6 and 7), drawn as each seed's difference with their mean and its t-interval."""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns

from benchmarks.experiments import target_entropy
from benchmarks.plots.data import (
    BAND,
    _order,
    _split_variant,
    _y,
    evals,
    latest_per_x,
    on_grid,
    paired_differences,
    pretraining_end,
)
from benchmarks.plots.panels import (
    _curves,
    _final,
    _finals_by_seed,
    _metric_panels,
    _paired_panel,
    _panel_on_grid,
)
from benchmarks.plots.style import _legend_with_seed_counts, _y_label, seed_colors, seed_legend

HINDSIGHT_ARMS = {"relabel=False": "relabel off", "relabel=True": "relabel on"}
CURRICULUM_PAIRS = {"D7: fixed − q=90": ("fixed", "q=90"), "D8: q=90 − q=10": ("q=90", "q=10")}


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
    """Every variant's mean curve over online samples on one axes."""
    return _curves(df, fig, hue="variant")


def draw_variant_curves_by_dataset(df, fig):
    """Every variant's mean curve over online samples, one panel per dataset."""
    return _curves(df, fig, hue="variant", facet="dataset")


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


def draw_grid_final(df, fig):
    """Final scores of a factor (the variant's first field) at each setting of the others."""
    return _final(_split_variant(df), fig, x="setting", hue="factor")


def draw_variant_final(df, fig):
    """Final scores per variant."""
    return _final(df, fig, x="variant", hue="variant")


def draw_table_rtg(df, fig):
    """Final scores per dataset, one arm per variant (Appendix D's g_online)."""
    return _final(df, fig, x="dataset", hue="variant")


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
