"""``python -m studies.antmaze_sizing.analysis``: the decision of ``PROTOCOL-antmaze-sizing-cpu.md``.

From the ``antmaze_sizing`` runs (learning curves on antmaze-umaze, seeds 100-101; tuning, never a
Table 1 result): IQL over the cpu preset's 1.8e5 offline updates, ODT's pretraining, ODT's offline
protocol and DT over 2e4 updates.

* A method learns umaze at n updates if every tuning seed scores >= ``LEARNED`` at n and at the
  next evaluation after n (at the last evaluation, at n alone); U(m) is the smallest such n.
* The issue's criterion is met if some method learns within ``MINUTES`` of one core (the record's
  wall time x U(m) / its updates).
* The cpu preset's AntMaze budgets: DT and ODT offline share U_off = the smaller U of the two;
  without one they move to the curve's end if either gains >= ``GAIN`` points there over 2500,
  else keep 2500. ODT's pretraining takes U(odt); without it the curve's end on the same gain
  rule, else 3500. IQL keeps its 1.8e5 (its curve is described, not deciding).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import pandas as pd

from benchmarks.experiments import EXPERIMENTS
from benchmarks.reproduction import curve_report_main, number_cell

LEARNED = 30.0  # success rate (%) that counts as learning umaze (the example)
MINUTES = 40.0  # "about 30 minutes of one core per run", with its margin written down
GAIN = 10.0  # points a curve must gain from 2500 updates to its end to move a budget without U
PRESET_OFFLINE = 2500  # the cpu preset's offline-only updates (DT, ODT's offline protocol)
PRESET_PRETRAIN = 3500  # the cpu preset's AntMaze pretraining before finetuning (7000 / 2)
SEEDS = EXPERIMENTS["antmaze_sizing"].seeds  # the protocol's seeds 100 and 101


@dataclass(frozen=True)
class Decision:
    learned: dict[str, int | None]  # method -> U(m)
    minutes: dict[str, float]  # method -> one core's minutes to U(m) (where U exists)
    criterion_met: bool
    offline_updates: int  # DT and ODT's offline protocol
    pretrain_updates: int  # ODT before finetuning
    why: list[str]


def learns_at(scores: pd.DataFrame, seeds: int = SEEDS) -> int | None:
    """U: the smallest evaluated update count n at which every one of ``seeds`` seeds scores >=
    LEARNED, at n and at the next evaluation (the last evaluation counts alone); None if none.
    ``scores``: columns updates, seed, score (one method's curve rows)."""
    wide = scores.pivot_table(index="updates", columns="seed", values="score", aggfunc="last").sort_index()
    wide = wide.dropna()  # only points every seed has reached
    if wide.shape[1] < seeds:
        return None
    above = (wide >= LEARNED).all(axis=1).tolist()
    for i, n in enumerate(wide.index):
        if above[i] and (i + 1 == len(above) or above[i + 1]):
            return int(n)
    return None


def mean_at(scores: pd.DataFrame, updates: int) -> float:
    """The seeds' mean score at the last evaluation at or before ``updates``."""
    e = scores[scores.updates <= updates].sort_values("updates")
    return float(e.groupby("seed").score.last().mean()) if not e.empty else float("nan")


def _gains(scores: pd.DataFrame) -> bool:
    end = int(scores.updates.max())
    return mean_at(scores, end) - mean_at(scores, PRESET_OFFLINE) >= GAIN


def decide(curves: dict[str, pd.DataFrame], minutes_per_update: dict[str, float], seeds: int = SEEDS) -> Decision:
    """The protocol's rule. ``curves``: method -> its rows (updates, seed, score), complete runs
    only; ``minutes_per_update``: method -> one core's minutes per update (record wall time /
    updates, the seeds' mean)."""
    missing = [m for m in ("odt", "odt-offline", "dt", "iql") if m not in curves
               or curves[m].seed.nunique() < seeds]
    if missing:
        raise ValueError(f"every method needs {seeds} complete seeds; short: {', '.join(missing)}")
    learned = {m: learns_at(c, seeds) for m, c in curves.items()}
    minutes = {m: u * minutes_per_update[m] for m, u in learned.items() if u is not None}
    met = any(v <= MINUTES for v in minutes.values())
    why = []
    offline = [learned[m] for m in ("dt", "odt-offline") if learned[m] is not None]
    if offline:
        off = min(offline)
        why.append(f"DT / ODT offline: learned at {off} updates: both take {off}")
    elif _gains(curves["dt"]) or _gains(curves["odt-offline"]):
        off = int(max(curves["dt"].updates.max(), curves["odt-offline"].updates.max()))
        why.append(f"DT / ODT offline: neither learned; a curve gains >= {GAIN:g} from {PRESET_OFFLINE}: both take {off}")
    else:
        off = PRESET_OFFLINE
        why.append(f"DT / ODT offline: neither learned nor gained {GAIN:g}: both keep {PRESET_OFFLINE}")
    if learned["odt"] is not None:
        pre = learned["odt"]
        why.append(f"ODT pretraining: learned at {pre} updates")
    elif _gains(curves["odt"]):
        pre = int(curves["odt"].updates.max())
        why.append(f"ODT pretraining: not learned; gains >= {GAIN:g} from {PRESET_OFFLINE}: {pre}")
    else:
        pre = PRESET_PRETRAIN
        why.append(f"ODT pretraining: neither learned nor gained {GAIN:g}: keeps {PRESET_PRETRAIN}")
    return Decision(learned, minutes, met, off, pre, why)


def method_curves(runs: pd.DataFrame, rows: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """method -> (updates, seed, score) of its complete runs' offline evaluations."""
    done = runs[runs.status == "complete"]
    e = rows[rows.run_id.isin(done.run_id) & (rows.phase == "pretrain") & rows.score_mean.notna()]
    return {m: g[["updates", "seed", "score_mean"]].rename(columns={"score_mean": "score"})
            for m, g in e.groupby("method")}


def report_lines(runs: pd.DataFrame, rows: pd.DataFrame) -> list[str]:
    curves = method_curves(runs, rows)
    done = runs[runs.status == "complete"]
    lines = ["# AntMaze budgets at the `cpu` preset (`PROTOCOL-antmaze-sizing-cpu.md`; tuning seeds, not results)", "",
             f"{len(done)} complete of {len(runs)} runs on antmaze-umaze, data generated here by the project's forge "
             "(not D4RL). Score: 100 x success rate over 100 episodes.", ""]
    for m, c in sorted(curves.items()):
        wide = c.pivot_table(index="updates", columns="seed", values="score", aggfunc="last")
        lines += [f"## {m}", "", "| updates | " + " | ".join(f"seed {s}" for s in wide.columns) + " |",
                  "|---|" + "---|" * len(wide.columns)]
        lines += [f"| {int(n)} | " + " | ".join(number_cell(v) for v in row) + " |"
                  for n, row in wide.iterrows()]
        lines.append("")
    per_update = (done.wall_time / done.updates / 60.0).groupby(done.method).mean().dropna().to_dict()
    try:
        d = decide(curves, per_update)
    except (ValueError, KeyError) as err:
        return lines + [f"No decision yet: {err}."]
    for m, u in sorted(d.learned.items()):
        lines.append(f"- U({m}) = {u if u is not None else 'none'}"
                     + (f" (~{d.minutes[m]:.0f} min of one core)" if m in d.minutes else ""))
    lines += ["", f"**The issue's criterion** (an offline method learns umaze within {MINUTES:g} min of one core): "
              + ("met" if d.criterion_met else "not met") + ".",
              f"**Decision:** DT and ODT offline {d.offline_updates} updates; ODT pretraining {d.pretrain_updates}; "
              "IQL keeps 1.8e5. " + "; ".join(d.why) + "."]
    return lines


def main(argv: list[str] | None = None) -> int:
    return curve_report_main(argv, "python -m studies.antmaze_sizing.analysis", __doc__, "antmaze_sizing", report_lines)


if __name__ == "__main__":
    sys.exit(main())
