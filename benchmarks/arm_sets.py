"""Arms of a protocol read as sets: each a (method, dataset, experiment) cell of the records,
checked against the data file (content hash) the protocol names.

The AntMaze protocols compare new runs with Table 1's cells on another file or configuration,
so no two arms share random streams: each arm is a set of per-seed scores, read with a Welch
interval. This module loads those cells from their experiments, refuses a record made on a file
the protocol does not name, and gives an arm's complete scores on the seeds asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from benchmarks import aggregate as agg
from benchmarks.reproduction import MixedContents, complete_runs


@dataclass(frozen=True)
class Arm:
    name: str
    method: str
    dataset: str
    experiment: str
    content: str  # the data file's content hash (its first 8 hex digits) the protocol names


def load(results, preset: str, arms: Iterable[Arm]) -> pd.DataFrame:
    """The arms' runs (every status), from each arm's experiment; a run belongs to an arm by its
    experiment, method and dataset."""
    arms = list(arms)
    frames = []
    for experiment in sorted({a.experiment for a in arms}):
        runs = agg.load_runs(results, preset, experiment)
        if runs.empty:
            continue
        keep = np.zeros(len(runs), dtype=bool)
        for a in (a for a in arms if a.experiment == experiment):
            keep |= ((runs.method == a.method) & (runs.dataset == a.dataset)).to_numpy()
        frames.append(runs[keep])
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["experiment", "method", "dataset", "seed"])


def _cell(runs: pd.DataFrame, arm: Arm) -> pd.DataFrame:
    return runs[(runs.experiment == arm.experiment) & (runs.method == arm.method) & (runs.dataset == arm.dataset)]


def check_contents(runs: pd.DataFrame, arms: Mapping[str, Arm]) -> None:
    """Raise :class:`MixedContents` naming the runs of an arm made on a file other than its own."""
    if runs.empty or "data_file" not in runs:
        return
    for arm in arms.values():
        cell = _cell(runs, arm)
        stray = cell[cell.data_file.notna() & (cell.data_file != arm.content)]
        if not stray.empty:
            raise MixedContents(f"arm {arm.name} ({arm.dataset}) is not read: runs {', '.join(sorted(stray.run_id))} "
                                f"name {', '.join(sorted(set(stray.data_file)))}, the protocol's file is {arm.content}")


def values(runs: pd.DataFrame, arm: Arm, seeds, metric: str = "offline_score") -> np.ndarray:
    """An arm's complete scores on ``seeds``, in seed order."""
    cell = complete_runs(_cell(runs, arm), arm.method, arm.dataset)
    return cell[cell.seed.isin(list(seeds))].sort_values("seed")[metric].dropna().to_numpy(dtype=float)
