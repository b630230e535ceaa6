"""Every figure ``make plots`` draws: its name, the experiment whose runs it reads, a title a
reader takes in at a glance (one line), how to read its marks (the caption's first line), the
function that draws it and which of the experiment's runs it keeps."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import matplotlib.pyplot as plt
import pandas as pd

from benchmarks.plots import ablations as abl
from benchmarks.plots import protocols as pro
from benchmarks.plots import table1 as t1
from benchmarks.plots.data import FEW_EVALS
from benchmarks.plots.style import MIN_SPAN

TITLE_CHARS = 72  # the longest title: one line at font size 11 on the narrowest figure (6.5 inches)

CURVE_BAND = "line: mean over seeds; band: its 95% t-interval over the n seeds, none where n = 1"
FINAL_BARS = "point: mean over seeds; bar: its 95% t-interval over the n seeds; faint dots: one seed each"
CURVE_ENDS = (f"{CURVE_BAND}; a curve with a run of at most {FEW_EVALS} evaluations: points at its start and "
              f"final means, bar: their 95% t-interval; one y scale per domain, at least {MIN_SPAN:g} points tall")
SEED_FINALS = "each seed's final score, joined across arms in its colour, black bar: the mean"
PAIRED_MEAN = "black diamond: their mean and its 95% t-interval"
AGAINST_CONTROL = ("left: final score, " + FINAL_BARS + "; right: ODT − control per seed (dots), their mean and "
                   "its 95% t-interval")


@dataclass(frozen=True)
class Figure:
    name: str
    experiment: str
    title: str  # one line, at most TITLE_CHARS: what the figure shows
    draw: Callable[[pd.DataFrame, plt.Figure], pd.DataFrame]  # returns the data drawn
    size: tuple[float, float] = (7.0, 4.0)
    select: Callable[[pd.DataFrame], pd.DataFrame] | None = None  # the experiment's runs the figure uses
    also: tuple[str, ...] = ()  # other experiments whose runs ``select`` may keep (it must be given)
    reading: str = ""  # how to read the marks: the caption's first line


FIGURES = [
    Figure("learning_curves", "table1", "Table 1: normalized return during online finetuning",
           t1.draw_learning_curves, (14, 3.5), select=t1.online_runs, reading=CURVE_ENDS),
    Figure("odt_vs_control", "table1", "ODT against its no-new-data control (odt-control) while finetuning",
           t1.draw_control, (10, 4), select=t1.control_runs, reading=CURVE_ENDS),
    Figure("control_pretraining", "control_pretraining", "P1m: ODT against its control after 20k pretraining updates",
           pro.draw_control_pretraining, (9, 4),
           reading="pretraining: the paper's 20k updates of 64 sequences; " + AGAINST_CONTROL),
    Figure("buffer_size", "buffer_size", "What online data adds at three buffer sizes (hopper-medium)",
           pro.draw_buffer_size, (11, 4),
           reading="PROTOCOL-buffer-cpu.md; " + AGAINST_CONTROL + "; grey band: B1's no-effect band [−3, +3]"),
    Figure("offline_length", "offline_length", "Offline protocol trained as long as ODT's pretraining",
           pro.draw_offline_length, (12, 5), select=pro.offline_length_runs, also=("table1",),
           reading="PROTOCOL-offline-length-cpu.md: beside Table 1's offline protocol and ODT's own pretraining; "
                   + CURVE_BAND),
    Figure("offline_length_c3", "offline_length_c3", "C3: DT and ODT offline at 1e4 updates and at Table 1's 2500",
           pro.draw_offline_length_c3, (7, 5), select=pro.offline_length_c3_runs, also=("table1",),
           reading="PROTOCOL-offline-length-cpu.md, amendment of 2026-11-29; " + CURVE_BAND),
    Figure("iql_offline_curve", "iql_offline_curve", "Tuning: IQL's offline score over 2e5 updates",
           pro.draw_offline_curve, reading=CURVE_BAND),
    Figure("dt_sizing", "dt_sizing", "Tuning: DT's score against its updates at three AdamW rates",
           pro.draw_variant_curves_by_updates, (14, 3.5), reading=CURVE_BAND),
    Figure("antmaze_sizing", "antmaze_sizing", "Tuning: antmaze-umaze success rate against updates",
           pro.draw_antmaze_sizing, (14, 3.5),
           reading=f"each seed's evaluations; dashed: {pro.ANTMAZE_LEARNED:g}%, the protocol's 'learned'"),
    Figure("antmaze_offline", "table1", "Table 1's AntMaze rows: success over each method's offline phase",
           pro.draw_antmaze_offline, (12, 5), select=pro.antmaze_offline_runs,
           reading=f"DT, ODT offline, ODT's pretraining: 2e4 updates; IQL: 1.8e5; dashed: {pro.ANTMAZE_LEARNED:g}%; "
                   "each point 20 episodes, the last 100; " + CURVE_BAND),
    Figure("convergence", "table1", "Fig. 2: ODT on hopper-medium: return, NLL, entropy and λ",
           t1.draw_convergence, (14, 3.5), select=t1.convergence_runs, reading="Table 1's runs; " + CURVE_BAND),
    Figure("stoch_vs_det", "stoch_vs_det", "Fig. 4: stochastic vs deterministic policy, by model size",
           abl.draw_stoch, (10, 4),
           reading="a panel per model size that has runs (paper: small, large); " + CURVE_BAND),
    Figure("g_eval", "g_eval", "Fig. 3 / 5 (L): return against g_eval", abl.draw_g_eval, (10, 4),
           reading=CURVE_BAND + "; grey: one seed each"),
    Figure("g_online", "g_online", "Fig. 5 (R): final return against g_online", abl.draw_variant_final,
           reading=FINAL_BARS),
    Figure("g_online_curves", "g_online", "g_online: learning curves, a panel per g_online",
           abl.draw_g_online_curves, (14, 3.6),
           reading="thin: one seed each, at its evaluations; black: mean over seeds; dashed grey: 2x, ODT's "
                   "default, which D5 and D6 compare against"),
    Figure("curriculum", "curriculum", "Fig. 6: curriculum exploration RTG vs fixed g_online",
           abl.draw_curriculum, (14, 4.6),
           reading=f"left: the exploration RTG, mean over seeds; middle: {SEED_FINALS}; right: D7 = fixed − q=90 "
                   f"and D8 = q=90 − q=10, final scores paired by seed, {PAIRED_MEAN}"),
    Figure("hindsight", "hindsight", "Fig. 7: hindsight return relabeling on / off", abl.draw_hindsight, (9, 4.2),
           reading=f"left: {SEED_FINALS}; right: D9 = on − off, final scores paired by seed, {PAIRED_MEAN}"),
    Figure("buffer_init", "buffer_init", "Fig. 8: replay buffer initialisation, top-N vs random",
           abl.draw_variant_curves_by_dataset, (14, 3.5), reading=CURVE_BAND),
    Figure("eval_context", "eval_context", "Fig. 9: evaluation context length 1 vs 5 (ant-medium-replay)",
           abl.draw_grid_final, (9, 4), reading=FINAL_BARS),
    Figure("pos_embedding", "pos_embedding", "Fig. 10: positional embedding on / off (walker2d-medium)",
           abl.draw_grid_final, (9, 4), reading=FINAL_BARS),
    Figure("lambda", "lambda", "Fig. 12: entropy and λ from several initial λ", abl.draw_lambda, (10, 4),
           reading="line: mean over seeds to where a variant's first run ends; band: its 95% t-interval over the "
                   "n seeds; thin: one run each, to its end"),
    Figure("sampling", "sampling", "Appendix F runs: trajectories sampled by length vs by return",
           abl.draw_variant_curves, reading="exploratory, not a figure of the paper; " + CURVE_BAND),
    Figure("stability", "table1", "Fig. 11: stability of ODT, IQL and SAC (hopper-medium)", t1.draw_stability,
           select=t1.stability_runs, reading="Table 1's runs; " + CURVE_BAND),
    Figure("table_rtg", "table_rtg", "Appendix D: g_online = 2g* vs g*", abl.draw_table_rtg, (12, 4),
           reading=FINAL_BARS),
]
