"""``python -m studies.antmaze_budget.analysis``: the reading of ``PROTOCOL-antmaze-budget-cpu.md``.

Do IQL's values keep the goal-reaching on the generated U-maze at the paper's 1e6 offline updates?
Three arms on Table 1's ``antmaze-umaze`` file, compared as sets (no shared random streams): B, IQL
at 1e6 offline updates (experiment ``antmaze_budget``); O, Table 1's IQL (1.8e5); W, IQL's actor
with uniform weights (``antmaze_actor``, 1.8e5). The primary B - O (95% Welch, expected +1), the
secondary B - W (two-sided, uncorrected: the only one), and the protocol's outcome once all five
seeds of each arm are complete. B's curve is described beside it at the updates where CORL publishes
its IQL's on D4RL's file. A record on a file other than the protocol's is refused.
"""

from __future__ import annotations

import sys

import pandas as pd

from benchmarks import aggregate as agg
from benchmarks.reproduction import analysis_parser, emit_report, mean_interval_cell, missing_arm
from studies import arm_sets
from studies.arm_sets import Arm, Outcomes, TwoComparisons

DATASET, CONTENT = "antmaze-umaze", "b7b9dc8f"
# CORL's published IQL on D4RL's antmaze-umaze-v2 (its logs, as the issue cites them): updates -> success %
CORL_D4RL_CURVE = {100_000: 14.0, 200_000: 27.0, 1_000_000: 77.0}

READING = TwoComparisons(
    arms={a.name: a for a in (Arm("B", "iql", DATASET, "antmaze_budget", CONTENT),
                              Arm("O", "iql", DATASET, "table1", CONTENT),
                              Arm("W", "iql", DATASET, "antmaze_actor", CONTENT))},
    description={"B": "iql, 1e6 offline updates, offline only", "O": "iql, Table 1 (1.8e5 offline updates)",
                 "W": "iql, uniform weights (temperature 0.001), 1.8e5"},
    primary=("B", "O"), secondary=("B", "W"), seeds=range(5),
    outcomes=Outcomes(  # on B's mean success, in %
        high_from=30.0, low_below=10.0,
        high="at the paper's budget IQL reaches the goal (B {mean:.1f}% >= {high_from:g}%, primary supports): the cpu "
             "preset's 1.8e5 updates are what leave its values unable to weigh the file's paths",
        low="the paper's budget does not rescue IQL on this file (B {mean:.1f}% < {low_below:g}%, primary {word}): the "
            "horizon, then the collection, are next"))
PRIMARY = READING.primary


def curve_table(curves: pd.DataFrame) -> list[str]:
    """B's success at the updates CORL publishes (20-episode interim evaluations; 1e6 is the
    100-episode end of the offline phase), per complete seed, beside CORL's IQL on D4RL's file
    (another file: described only). ``curves``: ``aggregate.load_results`` of ``antmaze_budget``."""
    cell = curves[(curves.method == "iql") & (curves.status == "complete")] if not curves.empty else curves
    lines = ["| updates | B per seed | B mean [95% t] | CORL's IQL on D4RL's antmaze-umaze-v2 |", "|---|---|---|---|"]
    for updates, corl in CORL_D4RL_CURVE.items():
        at = cell[cell.updates == updates].sort_values(["seed", "step"]).groupby("seed").score_mean.last()
        per_seed = ", ".join(f"{v:g}" for v in at) or "—"
        lines.append(f"| {updates:,} | {per_seed} | {mean_interval_cell(at.to_numpy(dtype=float))} | {corl:g} |")
    return lines


def report_lines(runs: pd.DataFrame, curves: pd.DataFrame, preset: str) -> list[str]:
    arm_sets.check_contents(runs, READING.arms)
    found = READING.comparisons(runs)
    lines = arm_sets.report_lines(f"IQL at the paper's offline budget on the generated U-maze (preset `{preset}`)",
                                  "studies.antmaze_budget.analysis", "PROTOCOL-antmaze-budget-cpu.md",
                                  arm_sets.arms_table(runs, READING), arm_sets.comparison_table(found, PRIMARY),
                                  READING.outcome(runs, found[PRIMARY]), budget="B: 1e6 updates; O, W: 1.8e5")
    return [*lines, "## B's curve (described)", "", *curve_table(curves), ""]


def main(argv: list[str] | None = None) -> int:
    parser = analysis_parser("python -m studies.antmaze_budget.analysis", __doc__, "paper_tables/budget_cpu.md",
                             seeds=False)
    args = parser.parse_args(argv)
    runs = READING.load(args.results, args.preset)
    if missing_arm(runs[runs.experiment == "antmaze_budget"] if not runs.empty else runs, "iql", args.preset,
                   args.results):
        return 1
    curves = agg.load_results(args.results, args.preset, "antmaze_budget")
    return emit_report(lambda: report_lines(runs, curves, args.preset), args.out)


if __name__ == "__main__":
    sys.exit(main())
