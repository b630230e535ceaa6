"""Datasets: the registry (names -> environments and reference scores), loaders for D4RL hdf5
files and local Minari datasets, normalized scores, and the forge that makes D4RL-style
datasets with SAC (``python -m benchmarks.datasets make|list``).

    from benchmarks.datasets import get_spec, load_dataset, DATASETS
    data = load_dataset("hopper-medium", size="smoke")   # or size="full"
    data.trajectories, data.spec.make_env(), data.score_fn(returns), data.provenance
"""

from benchmarks.datasets.loading import SIZES, LoadedDataset, load_dataset
from benchmarks.datasets.registry import (
    DATASETS,
    TABLE1_DATASETS,
    DatasetSpec,
    DatasetUnavailable,
    UnknownDataset,
    data_dir,
    get_spec,
    normalized_score,
)
from rlbase.trajectories import DatasetError

__all__ = [
    "DATASETS", "TABLE1_DATASETS", "SIZES", "DatasetSpec", "DatasetError", "DatasetUnavailable",
    "LoadedDataset", "UnknownDataset", "data_dir", "get_spec", "load_dataset", "normalized_score",
]
