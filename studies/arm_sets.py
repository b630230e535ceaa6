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
from benchmarks.intervals import Interval, difference_interval, verdict
from benchmarks.reproduction import MixedContents, complete_runs, mean_interval_cell, p_cell


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


@dataclass(frozen=True)
class Outcomes:
    """A protocol's registered outcomes on the mean of its primary's left arm: ``high`` when the
    primary supports and that mean reaches ``high_from``; ``low`` when the mean is under
    ``low_below``; otherwise none of them. The texts take ``{mean}`` (that mean, in %), ``{word}``
    (the primary's verdict), ``{high_from}`` and ``{low_below}``."""
    high_from: float
    low_below: float
    high: str
    low: str


@dataclass(frozen=True)
class TwoComparisons:
    """A protocol read on complete arms of ``seeds``: a primary left - right read for an expected
    sign of +1, one secondary, two-sided and uncorrected (the only one), and the outcome the
    protocol registered for what the primary finds."""
    arms: Mapping[str, Arm]
    description: Mapping[str, str]  # arm name -> what it is, for the table
    primary: tuple[str, str]
    secondary: tuple[str, str]
    seeds: range
    outcomes: Outcomes
    metric: str = "offline_score"

    def load(self, results, preset: str) -> pd.DataFrame:
        """Every run of the arms' cells (any status)."""
        return load(results, preset, self.arms.values())

    def complete_values(self, runs: pd.DataFrame, arm: str) -> np.ndarray | None:
        """An arm's scores on the reading's seeds; None until all of them are complete."""
        x = values(runs, self.arms[arm], self.seeds, self.metric)
        return x if len(x) == len(self.seeds) else None

    def comparisons(self, runs: pd.DataFrame) -> dict[tuple[str, str], Interval | None]:
        """(left, right) -> the 95% Welch interval of left - right; None until both arms are complete."""
        out: dict[tuple[str, str], Interval | None] = {}
        for left, right in (self.primary, self.secondary):
            a, b = self.complete_values(runs, left), self.complete_values(runs, right)
            out[(left, right)] = None if a is None or b is None else difference_interval(a, b, paired=False)
        return out

    def outcome(self, runs: pd.DataFrame, primary: Interval | None) -> str:
        """The registered outcome the primary interval and its left arm's mean fall in."""
        left, right = self.primary
        x = self.complete_values(runs, left)
        if primary is None or x is None:
            return (f"not read yet (arm {left}'s or arm {right}'s seeds {self.seeds[0]}-{self.seeds[-1]} "
                    "are not all complete)")
        word, mean, o = verdict(primary, expected_sign=+1), float(x.mean()), self.outcomes
        fields = {"mean": mean, "word": word, "high_from": o.high_from, "low_below": o.low_below}
        if word == "supports" and mean >= o.high_from:
            return o.high.format(**fields)
        if mean < o.low_below:
            return o.low.format(**fields)
        return f"none of the registered branches ({left} {mean:.1f}%, primary {word}): reported as it is"


def arms_table(runs: pd.DataFrame, reading: TwoComparisons) -> list[str]:
    first, last = reading.seeds[0], reading.seeds[-1]
    lines = [f"| arm | what | file | end of offline, per seed ({first}-{last}) | mean [95% t] |", "|---|---|---|---|---|"]
    for name, arm in reading.arms.items():
        x = values(runs, arm, reading.seeds, reading.metric)
        per_seed = ", ".join(f"{v:g}" for v in x) or "—"
        lines.append(f"| {name} | {reading.description[name]} | {arm.dataset} ({arm.content}) | {per_seed} | "
                     f"{mean_interval_cell(x)} |")
    return lines


def comparison_table(found: Mapping[tuple[str, str], Interval | None], primary: tuple[str, str]) -> list[str]:
    lines = ["| comparison | difference, 95% Welch | p | reading |", "|---|---|---|---|"]
    for (left, right), iv in found.items():
        is_primary = (left, right) == primary
        label = f"{left} − {right}" + (" (primary)" if is_primary else " (secondary, two-sided)")
        if iv is None:
            lines.append(f"| {label} | — | — | not read yet (an arm is incomplete) |")
            continue
        word = (verdict(iv, expected_sign=+1) if is_primary
                else ("differ" if iv.low > 0 or iv.high < 0 else "not told apart"))
        lines.append(f"| {label} | {iv.estimate:+.1f} [{iv.low:+.1f}, {iv.high:+.1f}] | {p_cell(iv.p_value)} | **{word}** |")
    return lines


def report_lines(title: str, module: str, protocol: str, arms: list[str], comparisons: list[str],
                 outcome: str, budget: str = "1.8e5 updates") -> list[str]:
    """An arm-set reading's report: its title, how it was made, the arms, the comparisons, the outcome."""
    return [f"# {title}", "",
            f"Generated by `python -m {module}` from the records; the protocol is `{protocol}`. Data generated "
            "here by the project's forge (not D4RL). Success in % over 100 mean-action episodes at the end of "
            f"the offline phase ({budget}); arms compared as sets.", "",
            "## Arms", "", *arms, "", "## Comparisons", "", *comparisons, "", f"**Outcome:** {outcome}.", ""]
