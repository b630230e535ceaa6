"""The table of an experiment's runs on Minari datasets (``minari:<id>``), with their scoring.

The paper's tables have D4RL rows only, scored by D4RL's normalization. A Minari dataset is
scored with the reference scores of its own metadata, or reported as its raw return where the
metadata has none; this table puts that statement beside every number (the ``scoring`` column of
``aggregate.load_runs``, from each run's provenance). Written as ``<experiment>_minari.md`` next to
the experiment's other tables, only when the experiment has Minari runs.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from benchmarks import aggregate as agg
from benchmarks.datasets.minari_spec import PREFIX, hyperparameter_dataset
from benchmarks.tables import write_text

HEADER = ["dataset", "method", "variant", "seeds", "final score", "offline score", "scoring", "hyperparameters of"]


def _cell(values: pd.Series) -> str:
    v = values.dropna().to_numpy(dtype=float)
    if len(v) == 0:
        return "—"
    return f"{v.mean():.2f} ± {v.std():.2f}" if len(v) > 1 else f"{v[0]:.2f}"


def minari_rows(runs: pd.DataFrame) -> list[list[str]]:
    """One row per (Minari dataset, method, variant) of complete runs."""
    done = runs[runs.dataset.astype(str).str.startswith(PREFIX) & (runs.status == "complete")]
    rows = []
    for (dataset, method, variant), group in done.groupby(["dataset", "method", "variant"], sort=True):
        scoring = "; ".join(sorted({str(s) for s in group.scoring.dropna()})) or "unknown"
        rows.append([dataset, method, variant, str(len(group)), _cell(group.final_score),
                     _cell(group.offline_score), scoring, hyperparameter_dataset(dataset)])
    return rows


def minari_text(runs: pd.DataFrame, experiment: str, preset: str) -> str | None:
    """The Markdown table, or None when the experiment has no complete Minari run."""
    rows = minari_rows(runs)
    if not rows:
        return None
    lines = [f"# {experiment} on Minari datasets (preset {preset})", "",
             "Mean ± std (ddof=0) over seeds of complete runs. Scores are NOT D4RL normalized scores: "
             "each is normalized with its Minari dataset's own reference scores, or is the raw return where "
             "the dataset has none (column `scoring`). Hyperparameters come from the paper's row named in the "
             "last column; data and scores are the Minari dataset's.", "",
             "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def write_minari_table(experiment: str, root: Path | str, preset: str, out_dir: Path | str) -> list[Path]:
    """Write ``<out_dir>/<experiment>_minari.md`` if the experiment has Minari runs; the paths written."""
    text = minari_text(agg.load_runs(root, preset, experiment), experiment, preset)
    return [] if text is None else [write_text(Path(out_dir) / f"{experiment}_minari.md", text)]
