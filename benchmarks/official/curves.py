"""``python -m benchmarks.official.curves walker2d-medium``: the official comparison's runs read at
every evaluation of their curves, not only at the two the protocol registers. Exploratory: no
verdict (the readings were chosen after the registered ones were seen).

Ours (``odt`` in the experiments of ``comparison.EXPERIMENTS``; for ``comparison.REPLAY_ROWS``, only
in ``official_replay``, the experiment whose two arms share one data file) against the official code
(``official-odt``), complete runs, compared as sets: the Welch difference ours - official at
each pretraining evaluation both codes make, at the mean of those from ``--from-update`` on, at the first and last online evaluations and at the mean of all online
ones; beside them, how far one run's score moves between consecutive pretraining evaluations
and the spread of the episodes within one evaluation, the noise a single evaluation carries.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np
import pandas as pd

from benchmarks import aggregate as agg
from benchmarks.intervals import difference_interval
from benchmarks.official.comparison import (
    EXPERIMENTS,
    OFFICIAL,
    OURS,
    REPLAY_EXPERIMENT,
    REPLAY_ROWS,
)
from benchmarks.reproduction import analysis_parser, emit


def curves(results, preset: str, dataset: str, method: str, seeds: list[int] | None) -> dict[int, pd.DataFrame]:
    """seed -> the evaluation rows of that method's complete run of ``dataset`` (one per seed), from
    the experiments the comparison reads that row from."""
    experiments = (REPLAY_EXPERIMENT,) if dataset in REPLAY_ROWS else EXPERIMENTS
    frames = [agg.load_results(results, preset, e) for e in experiments]
    if all(f.empty for f in frames):
        return {}
    rows = pd.concat([f for f in frames if not f.empty], ignore_index=True)
    rows = rows[(rows.method == method) & (rows.dataset == dataset) & (rows.status == "complete")
                & (rows.step >= 0)]
    if seeds is not None:
        rows = rows[rows.seed.isin(seeds)]
    out = {}
    for (seed, _), run in rows.groupby(["seed", "experiment"]):
        out.setdefault(int(seed), run.sort_values("step"))
    return out


Reading = Callable[[pd.DataFrame], float]


def readings(pretrain_updates: list[int], from_update: int) -> dict[str, Reading]:
    """name -> the score of one run under that reading."""
    pre = lambda c: c[c.phase == "pretrain"]  # noqa: E731
    on = lambda c: c[c.phase == "online"]  # noqa: E731
    out: dict[str, Reading] = {
        f"pretraining, at {u} updates": (lambda c, u=u: float(pre(c).set_index("updates").score_mean.get(u, np.nan)))
        for u in pretrain_updates}
    kept = [u for u in pretrain_updates if u >= from_update]
    out[f"pretraining, mean of the evaluations at {', '.join(map(str, kept))} updates"] = (
        lambda c: float(pre(c)[pre(c).updates.isin(kept)].score_mean.mean()))
    out["online, first evaluation"] = lambda c: float(on(c).score_mean.iloc[0])
    out["online, last evaluation (the registered final)"] = lambda c: float(on(c).score_mean.iloc[-1])
    out["online, mean of its evaluations"] = lambda c: float(on(c).score_mean.mean())
    return out


def movement(runs: dict[int, pd.DataFrame], updates: list[int]) -> tuple[float, float]:
    """(mean |change| between consecutive pretraining evaluations at ``updates``, mean episode SD
    within those evaluations), in normalised points."""
    changes, spreads = [], []
    for c in runs.values():
        pre = c[(c.phase == "pretrain") & c.updates.isin(updates)].sort_values("updates")
        changes += list(np.abs(np.diff(pre.score_mean.to_numpy())))
        spreads += list(pre.score_std)
    return float(np.mean(changes)), float(np.mean(spreads))


def report(results, preset: str, dataset: str, from_update: int, seeds: list[int] | None) -> list[str]:
    ours, official = (curves(results, preset, dataset, m, seeds) for m in (OURS, OFFICIAL))
    if len(ours) < 2 or len(official) < 2:
        return [f"{dataset}: fewer than 2 complete runs in an arm (ours {len(ours)}, official {len(official)})"]
    shared = sorted(set.intersection(*(set(c[c.phase == "pretrain"].updates) for c in [*ours.values(), *official.values()])))
    lines = [f"# {dataset}: the official comparison at every evaluation (preset `{preset}`, exploratory)", "",
             f"Ours: `{OURS}` seeds {sorted(ours)}; official: `{OFFICIAL}` seeds {sorted(official)}; sets, not pairs. "
             "Scores normalised, each the mean of one evaluation's episodes.", "",
             "| reading | ours, mean ± SD | official, mean ± SD | ours − official, 95% Welch | p |", "|---|---|---|---|---|"]
    for name, read in readings(shared, from_update).items():
        a = np.array([read(c) for c in ours.values()])
        b = np.array([read(c) for c in official.values()])
        iv = difference_interval(a, b, paired=False)
        lines.append(f"| {name} | {a.mean():.1f} ± {a.std(ddof=1):.1f} | {b.mean():.1f} ± {b.std(ddof=1):.1f} | "
                     f"{iv.estimate:+.1f} [{iv.low:+.1f}, {iv.high:+.1f}] | {iv.p_value:.3f} |")
    kept = [u for u in shared if u >= from_update]
    lines += ["", f"Noise of one evaluation, pretraining evaluations at {', '.join(map(str, kept))} updates:", ""]
    for label, runs in (("ours", ours), ("official", official)):
        change, spread = movement(runs, kept)
        lines.append(f"- {label}: a run's score moves by {change:.1f} points between consecutive evaluations on "
                     f"average; the episodes of one evaluation spread with SD {spread:.1f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = analysis_parser("python -m benchmarks.official.curves", __doc__, "/tmp/curves.md")
    parser.add_argument("dataset", help="e.g. walker2d-medium")
    parser.add_argument("--from-update", type=int, default=3000,
                        help="pretraining evaluations from this update on are averaged (default %(default)s)")
    args = parser.parse_args(argv)
    return emit("\n".join(report(args.results, args.preset, args.dataset, args.from_update, args.seeds)), args.out)


if __name__ == "__main__":
    sys.exit(main())
