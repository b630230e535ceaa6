"""``make plots`` / ``python -m benchmarks.plots``: every figure of the paper from ``results/``.

Each figure is one groupby over the tidy frame of :func:`benchmarks.aggregate.load_results`,
drawn with seaborn and saved as PNG and PDF next to a CSV of exactly the data it was drawn
from and a JSON sidecar of its provenance, under ``<out>/<preset>/``. A figure's title is one
short line (and a warning line for the smoke preset or unfinished runs); how to read its marks
and where it comes from (preset, runs, seeds, online samples used, data source, code version)
are a small caption under the axes and, in full, ``<figure>.json``. Learning curves put every
run of a curve on a common grid of online samples, ending where the curve's first run ends,
with the mean and its 95% t-interval over runs as a band; every band and bar is that Student
t-interval, never seaborn's percentile bootstrap. A comparison its protocol reads paired by
seed (Figs. 6, 7) is drawn as each seed's difference with their mean and its t-interval. A
figure with no run to draw is skipped (``--missing`` writes it, saying which experiment to run).

Modules, one per figure family: :mod:`.table1` (Table 1's curves, Figs. 2 and 11),
:mod:`.ablations` (the paper's ablations), :mod:`.protocols` (the project's protocols and tuning
studies), over shared :mod:`.data` (grids, finals, intervals), :mod:`.style` (colours, legends,
scales), :mod:`.panels` (the panels figures are made of) and :mod:`.provenance` (title, caption,
sidecar); :mod:`.catalogue` lists the figures and :mod:`.make` draws and saves them.
"""

import matplotlib

matplotlib.use("Agg")

from benchmarks.plots.ablations import (  # noqa: E402
    CURRICULUM_PAIRS,
    HINDSIGHT_ARMS,
    draw_curriculum,
    draw_g_eval,
    draw_g_online_curves,
    draw_grid_final,
    draw_hindsight,
    draw_lambda,
    draw_seed_curves,
    draw_stoch,
    draw_table_rtg,
    draw_variant_curves,
    draw_variant_curves_by_dataset,
    draw_variant_final,
)
from benchmarks.plots.catalogue import FIGURES, Figure  # noqa: E402
from benchmarks.plots.data import (  # noqa: E402
    BAND,
    EVAL_PHASES,
    FEW_EVALS,
    common_end,
    evals,
    last_evaluations,
    latest_per_x,
    on_grid,
    paired_differences,
    pretraining_end,
    start_and_final,
    t_band,
    t_interval,
)
from benchmarks.plots.make import (  # noqa: E402
    _runs_of,
    main,
    make_plots,
    render,
    render_sampling_probabilities,
    save_figure,
)
from benchmarks.plots.protocols import (  # noqa: E402
    ANTMAZE_LEARNED,
    draw_antmaze_offline,
    draw_antmaze_sizing,
    draw_buffer_size,
    draw_control_pretraining,
    draw_offline_curve,
    draw_offline_length,
    draw_offline_length_c3,
    draw_variant_curves_by_updates,
)
from benchmarks.plots.provenance import provenance_note  # noqa: E402
from benchmarks.plots.style import (  # noqa: E402
    METHOD_COLORS,
    MIN_SPAN,
    _factor_name,
    _plain_log_y,
    bounded_span,
    hue_colors,
    seed_colors,
    share_y_per_domain,
)
from benchmarks.plots.table1 import (  # noqa: E402
    draw_control,
    draw_convergence,
    draw_learning_curves,
    draw_stability,
)

__all__ = [
    "ANTMAZE_LEARNED", "BAND", "CURRICULUM_PAIRS", "EVAL_PHASES", "FEW_EVALS", "FIGURES", "Figure",
    "HINDSIGHT_ARMS", "METHOD_COLORS", "MIN_SPAN", "_factor_name", "_plain_log_y", "_runs_of", "bounded_span",
    "common_end", "draw_antmaze_offline", "draw_antmaze_sizing", "draw_buffer_size", "draw_control",
    "draw_control_pretraining", "draw_convergence", "draw_curriculum", "draw_g_eval", "draw_g_online_curves",
    "draw_grid_final", "draw_hindsight", "draw_lambda", "draw_learning_curves", "draw_offline_curve",
    "draw_offline_length", "draw_offline_length_c3", "draw_seed_curves", "draw_stability", "draw_stoch",
    "draw_table_rtg", "draw_variant_curves", "draw_variant_curves_by_dataset", "draw_variant_curves_by_updates",
    "draw_variant_final", "evals", "hue_colors", "last_evaluations", "latest_per_x", "main", "make_plots",
    "on_grid", "paired_differences", "pretraining_end", "provenance_note", "render",
    "render_sampling_probabilities", "save_figure", "seed_colors", "share_y_per_domain", "start_and_final",
    "t_band", "t_interval",
]
