"""``python -m studies.buffer.analysis``: the numbers and verdicts of ``PROTOCOL-buffer-cpu.md``.

From the ``buffer_size`` runs of one preset (``odt`` and ``odt-control`` at three replay-buffer
sizes B on hopper-medium), in the protocol's terms:

* B1(B) = ODT final - control final, paired by seed, at each B;
* B2 = P1(1200) - P1(25), paired by seed (and, secondary and described, P1(250) - P1(25));
* each arm's gain within its run (final - end of pretraining), updates and online samples;
* the verdict of each comparison under ``PROTOCOL-reanalysis.md``: B2 (the comparison the
  protocol's question names) is the primary, read alone at 0.05; the three B1 are its family,
  read with Holm's correction; each claim is "> 0" with an equivalence margin of 5 normalised
  points. Words: supports, contradicts, equivalent, inconclusive;
* every seed's scores, and which session (host platform) each run ran on.

Intervals: 95% paired t-intervals over seeds (the percentile bootstrap of the protocol's text
was replaced on 2026-12-04: ``PROTOCOL-reanalysis.md``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks import aggregate as agg
from benchmarks import records as rec
from benchmarks.reproduction import (
    INTERVAL_METHOD,
    LOCOMOTION_MARGIN,
    Estimate,
    Registered,
    Verdict,
    analysis_parser,
    combination_estimate,
    emit,
    read_protocol,
    seed_status,
)

EXPERIMENT, DATASET = "buffer_size", "hopper-medium"
ARMS = ("odt", "odt-control")
SEEDS = 5  # per cell (the protocol's seeds 10-14)
PRIMARY = "P1(1200) - P1(25)"  # B2
DESCRIBED = ("P1(250) - P1(25)",)  # secondary in the protocol: no verdict


def verdicts(comp: dict[str, Estimate]) -> dict[str, Verdict]:
    """B2 alone, the B1s as one Holm family; every claim "> 0" with the locomotion margin."""
    registered = [Registered(name, e, +1, LOCOMOTION_MARGIN, name == PRIMARY,
                             "no data" if e.n == 0 else seed_status(e, SEEDS))
                  for name, e in comp.items() if name not in DESCRIBED]
    return read_protocol(registered)


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


def comparisons(runs: pd.DataFrame) -> dict[str, Estimate]:
    out = {}
    for b in sorted(runs.buffer.unique()):
        out[f"B1({b})"] = combination_estimate([(p1_by_seed(runs, b).to_numpy(), 1.0)])
    for big in (1200, 250):
        diff = (p1_by_seed(runs, big) - p1_by_seed(runs, 25)).dropna()
        out[f"P1({big}) - P1(25)"] = combination_estimate([(diff.to_numpy(), 1.0)])
    return out


def report(root: Path | str, preset: str) -> str:
    runs = scores(root, preset)
    if runs.empty:
        return f"No complete {EXPERIMENT} runs at preset {preset!r} under {root}.\n"
    expected = 3 * len(ARMS) * 5
    lines = [f"## Buffer protocol at the `{preset}` preset: {len(runs)} of {expected} runs complete", ""]
    if len(runs) < expected:
        lines += ["**Incomplete: the protocol makes no comparison before all runs are in; the numbers below "
                  "are a status, not a result.**", ""]
    comp = comparisons(runs)
    read = verdicts(comp)
    lines += [f"{INTERVAL_METHOD}. Primary: B2 = P1(1200) − P1(25); the B1s one family with Holm's "
              "correction; claims '> 0', equivalence against ±5 normalised points (`PROTOCOL-reanalysis.md`).", "",
              "| comparison | mean [95% CI] (seeds) | verdict |", "|---|---|---|"]
    lines += [f"| {'B2 = ' if name == PRIMARY else ''}{name} | {e.text()} | "
              f"{read[name].text() if name in read else 'described'} |" for name, e in comp.items()]
    lines += ["", "| buffer | arm | final | gain in run | updates | online samples | runs |", "|---|---|---|---|---|---|---|"]
    for (b, m), g in runs.groupby(["buffer", "method"]):
        final = combination_estimate([(g.final_score.to_numpy(), 1.0)])
        gain = combination_estimate([((g.final_score - g.offline_score).to_numpy(), 1.0)])
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
    p = analysis_parser("python -m studies.buffer.analysis", __doc__, "paper_tables/buffer_protocol_cpu.md", seeds=False)
    args = p.parse_args(argv)
    return emit(report(args.results, args.preset), args.out)


if __name__ == "__main__":
    sys.exit(main())
