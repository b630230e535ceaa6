"""``python -m benchmarks.buffer_protocol``: the numbers and verdicts of ``PROTOCOL-buffer-cpu.md``.

From the ``buffer_size`` runs of one preset (``odt`` and ``odt-control`` at three replay-buffer
sizes B on hopper-medium), in the protocol's terms:

* B1(B) = ODT final - control final, paired by seed, at each B;
* B2 = P1(1200) - P1(25), paired by seed (and, secondary, P1(250) - P1(25));
* each arm's gain within its run (final - end of pretraining), updates and online samples;
* the verdict of each comparison: **supports** if its 95% interval lies above 0, **contradicts**
  if it lies below 0 or inside [-3, +3], otherwise **inconclusive**;
* every seed's scores, and which session (host platform) each run ran on.

Intervals: 95% percentile bootstrap over seeds, 10,000 resamples, seeded (the protocol's).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks import aggregate as agg
from benchmarks import records as rec
from benchmarks.reproduction import (
    BOOTSTRAP_REPS,
    Estimate,
    analysis_parser,
    bootstrap_combination,
    directional_verdict,
    emit,
)

EXPERIMENT, DATASET = "buffer_size", "hopper-medium"
EQUIVALENCE = 3.0  # the protocol's [-3, +3]: a difference this small counts as none
ARMS = ("odt", "odt-control")


def verdict(e: Estimate) -> str:
    """The protocol's rule for an interval of a difference that the paper says is positive."""
    return "no data" if e.n == 0 else directional_verdict(e, EQUIVALENCE)


def buffer_of(variant: str) -> int:
    return int(str(variant).split("=", 1)[1])


def scores(root: Path | str, preset: str) -> pd.DataFrame:
    """One row per complete run: method, buffer, seed, offline (end of pretraining) and final
    scores, updates, online samples, platform."""
    runs = agg.load_runs(root, preset, EXPERIMENT)
    if runs.empty:
        return runs
    runs = runs[(runs.status == "complete") & (runs.dataset == DATASET) & runs.method.isin(ARMS)].copy()
    runs["buffer"] = runs.variant.map(buffer_of)
    runs["platform"] = [_platform(rec.experiment_dir(root, preset, EXPERIMENT) / r) for r in runs.run_id]
    return runs


def _platform(directory: Path) -> str:
    attempts = rec.read_attempts(directory) or [{}]
    return str(attempts[-1].get("platform", "?"))


def p1_by_seed(runs: pd.DataFrame, buffer: int) -> pd.Series:
    """ODT final - control final per seed at one buffer size (seeds missing an arm left out)."""
    sel = runs[runs.buffer == buffer].pivot_table(index="seed", columns="method", values="final_score")
    if not set(ARMS) <= set(sel.columns):
        return pd.Series(dtype=float)
    return (sel["odt"] - sel["odt-control"]).dropna()


def comparisons(runs: pd.DataFrame, reps: int = BOOTSTRAP_REPS) -> dict[str, Estimate]:
    out = {}
    for b in sorted(runs.buffer.unique()):
        out[f"B1({b})"] = bootstrap_combination([(p1_by_seed(runs, b).to_numpy(), 1.0)], reps)
    for big in (1200, 250):
        diff = (p1_by_seed(runs, big) - p1_by_seed(runs, 25)).dropna()
        out[f"P1({big}) - P1(25)"] = bootstrap_combination([(diff.to_numpy(), 1.0)], reps)
    return out


def report(root: Path | str, preset: str, reps: int = BOOTSTRAP_REPS) -> str:
    runs = scores(root, preset)
    if runs.empty:
        return f"No complete {EXPERIMENT} runs at preset {preset!r} under {root}.\n"
    expected = 3 * len(ARMS) * 5
    lines = [f"## Buffer protocol at the `{preset}` preset: {len(runs)} of {expected} runs complete", ""]
    if len(runs) < expected:
        lines += ["**Incomplete: the protocol makes no comparison before all runs are in; the numbers below "
                  "are a status, not a result.**", ""]
    comp = comparisons(runs, reps)
    lines += ["| comparison | mean [95% CI] (seeds) | verdict |", "|---|---|---|"]
    lines += [f"| {name} | {e.text()} | {verdict(e)} |" for name, e in comp.items()]
    lines += ["", "| buffer | arm | final | gain in run | updates | online samples | runs |", "|---|---|---|---|---|---|---|"]
    for (b, m), g in runs.groupby(["buffer", "method"]):
        final = bootstrap_combination([(g.final_score.to_numpy(), 1.0)], reps)
        gain = bootstrap_combination([((g.final_score - g.offline_score).to_numpy(), 1.0)], reps)
        lines.append(f"| {b} | {m} | {final.text(False)} | {gain.text()} | {g.updates.mean():.0f} | "
                     f"{g.online_samples.mean():.0f} | {len(g)} |")
    lines += ["", "Per seed (end of pretraining / final; platform = the machine the run ran on):", "",
              "| seed | buffer | ODT | control | ODT − control | pretraining equal | platform |",
              "|---|---|---|---|---|---|---|"]
    for (seed, b), g in runs.groupby(["seed", "buffer"]):
        cells = {m: g[g.method == m] for m in ARMS}
        text = {m: (f"{c.offline_score.iloc[0]:.2f} / {c.final_score.iloc[0]:.1f}" if len(c) else "—")
                for m, c in cells.items()}
        both = all(len(c) for c in cells.values())
        diff = f"{cells['odt'].final_score.iloc[0] - cells['odt-control'].final_score.iloc[0]:+.1f}" if both else "—"
        same = ("yes" if both and np.array_equal(cells["odt"].offline_score.to_numpy(),
                                                  cells["odt-control"].offline_score.to_numpy()) else
                ("NO" if both else "—"))
        lines.append(f"| {seed} | {b} | {text['odt']} | {text['odt-control']} | {diff} | {same} | "
                     f"{', '.join(sorted(set(g.platform)))} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = analysis_parser("python -m benchmarks.buffer_protocol", __doc__, "paper_tables/buffer_protocol_cpu.md", seeds=False)
    args = p.parse_args(argv)
    return emit(report(args.results, args.preset, args.reps), args.out)


if __name__ == "__main__":
    sys.exit(main())
