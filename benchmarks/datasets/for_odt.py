"""The harness's dataset loader for ``python -m odt`` (entry point ``odt_bench.dataset_loaders``).

odt imports nothing of the harness; it finds this function through the entry point that
pyproject.toml registers, so ``python -m odt --dataset hopper-medium`` reads the registry's
datasets (D4RL files, forged ones, ``minari:<id>``) after ``pip install -e .``.
"""

from __future__ import annotations

from benchmarks.datasets.loading import load_dataset
from benchmarks.datasets.minari_spec import hyperparameter_dataset


def load_for_odt(name: str):
    """(trajectories, make_env, score_fn, the paper's table row) of dataset ``name``. The row comes
    first, so a name without hyperparameters fails before any data is read."""
    row = hyperparameter_dataset(name)
    loaded = load_dataset(name)
    return loaded.trajectories, loaded.spec.make_env, loaded.score_fn, row
