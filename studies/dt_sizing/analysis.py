"""``python -m studies.dt_sizing.analysis``: the decision of ``PROTOCOL-dt-sizing-cpu.md``.

From the ``dt_sizing`` runs (DT at the ``cpu`` preset's 2500 updates, AdamW rates 1e-4, 3e-4 and
1e-3, seeds 100-101; tuning, never a Table 1 result):

* S(r) = the mean over the datasets of the seeds' mean final score at rate r;
* r* = the smallest rate whose S is within ``TIE`` of the largest S (nearer the paper's rate);
* the preset adopts r* only if S(r*) − S(1e-4) >= ``MIN_GAIN`` and on no dataset r*'s mean is
  more than ``MAX_LOSS`` below 1e-4's; otherwise it keeps 1e-4.

Described beside it: each run's score at 1000 and 2000 updates and its change over the last 500.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import pandas as pd

from benchmarks.experiments import EXPERIMENTS
from benchmarks.reproduction import curve_report_main

PAPER_RATE = 1e-4
MIN_GAIN = 3.0
MAX_LOSS = 5.0
TIE = 1.0
SEEDS = EXPERIMENTS["dt_sizing"].seeds  # the protocol's seeds 100 and 101
CHECKPOINTS = (1000, 2000)  # updates at which each run's score is described


@dataclass(frozen=True)
class Decision:
    rate: float  # the rate the preset takes
    best: float  # r*, the rule's candidate
    s: dict[float, float]  # S(r)
    per_dataset: pd.DataFrame  # rate x dataset: mean final score over seeds
    why: str


def rate_of(variant: str) -> float:
    """'lr=0.0003' -> 3e-4."""
    key, _, value = variant.partition("=")
    if key != "lr" or not value:
        raise ValueError(f"variant {variant!r} is not a dt_sizing rate ('lr=<rate>')")
    return float(value)


def decide(finals: pd.DataFrame, seeds: int = SEEDS) -> Decision:
    """The protocol's rule on a frame with columns rate, dataset, seed, final_score; every
    (rate, dataset) cell needs ``seeds`` complete seeds."""
    counts = finals.groupby(["rate", "dataset"]).seed.nunique().unstack("dataset")
    if counts.isna().any().any() or PAPER_RATE not in counts.index or counts.min().min() < seeds:
        raise ValueError(f"every rate needs {seeds} seeds on every dataset, the paper's rate included")
    per_dataset = finals.groupby(["rate", "dataset"]).final_score.mean().unstack("dataset")
    s = per_dataset.mean(axis=1).to_dict()
    top = max(s.values())
    best = min(r for r, v in s.items() if v >= top - TIE)
    gain = s[best] - s[PAPER_RATE]
    worst = (per_dataset.loc[best] - per_dataset.loc[PAPER_RATE]).min()
    if best == PAPER_RATE:
        return Decision(PAPER_RATE, best, s, per_dataset, "the paper's rate has the largest S (within the tie margin)")
    if gain < MIN_GAIN:
        return Decision(PAPER_RATE, best, s, per_dataset,
                        f"S({best:g}) − S({PAPER_RATE:g}) = {gain:+.1f} < {MIN_GAIN:g}: the preset keeps {PAPER_RATE:g}")
    if worst < -MAX_LOSS:
        return Decision(PAPER_RATE, best, s, per_dataset,
                        f"{best:g} loses {-worst:.1f} > {MAX_LOSS:g} on a dataset: the preset keeps {PAPER_RATE:g}")
    return Decision(best, best, s, per_dataset,
                    f"S({best:g}) − S({PAPER_RATE:g}) = {gain:+.1f} >= {MIN_GAIN:g} and no dataset loses more "
                    f"than {MAX_LOSS:g} (worst {worst:+.1f}): the preset adopts {best:g}")


def score_at(curves: pd.DataFrame, updates: int) -> pd.Series:
    """run_id -> the score of its last evaluation at or before ``updates``."""
    e = curves[curves.updates.notna() & (curves.updates <= updates) & curves.score_mean.notna()]
    return e.sort_values("updates").groupby("run_id").score_mean.last()


def report_lines(runs: pd.DataFrame, curves: pd.DataFrame) -> list[str]:
    done = runs[runs.status == "complete"].copy()
    done["rate"] = done.variant.map(rate_of)
    for u in CHECKPOINTS:
        done[f"at {u}"] = done.run_id.map(score_at(curves, u))
    lines = ["# DT's rate at the `cpu` preset (`PROTOCOL-dt-sizing-cpu.md`; tuning seeds, not results)", "",
             f"{len(done)} complete of {len(runs)} runs; data generated here by the project's forge (not D4RL).", "",
             "| dataset | rate | seed | at 1000 | at 2000 | final (2500) | last 500 |", "|---|---|---|---|---|---|---|"]
    for _, r in done.sort_values(["dataset", "rate", "seed"]).iterrows():
        lines.append(f"| {r.dataset} | {r.rate:g} | {r.seed} | {r['at 1000']:.1f} | {r['at 2000']:.1f} | "
                     f"{r.final_score:.1f} | {r.final_score - r['at 2000']:+.1f} |")
    try:
        d = decide(done)
    except ValueError as err:
        return lines + ["", f"No decision yet: {err}."]
    lines += ["", "| rate | " + " | ".join(d.per_dataset.columns) + " | S(r) |",
              "|---|" + "---|" * (len(d.per_dataset.columns) + 1)]
    for rate, row in d.per_dataset.iterrows():
        lines.append(f"| {rate:g} | " + " | ".join(f"{v:.1f}" for v in row) + f" | {d.s[rate]:.1f} |")
    lines += ["", f"**Decision:** r* = {d.best:g}; {d.why}."]
    return lines


def main(argv: list[str] | None = None) -> int:
    return curve_report_main(argv, "python -m studies.dt_sizing.analysis", __doc__, "dt_sizing", report_lines)


if __name__ == "__main__":
    sys.exit(main())
