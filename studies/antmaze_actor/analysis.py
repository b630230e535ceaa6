"""``python -m studies.antmaze_actor.analysis``: the reading of ``PROTOCOL-antmaze-actor-cpu.md``.

Can IQL's own actor imitate the generated U-maze file when its advantage weights are uniform?
Three arms on Table 1's ``antmaze-umaze`` file, compared as sets (no shared random streams):
W, IQL at temperature 0.001 (experiment ``antmaze_actor``); O, Table 1's IQL; BO, Table 1's BC.
The primary W - O (95% Welch, expected +1), the secondary W - BO (two-sided, uncorrected: the only
one), and the protocol's outcome once all five seeds of each arm are complete. A record on a
file other than the protocol's is refused.
"""

from __future__ import annotations

import sys

import pandas as pd

from benchmarks.reproduction import analysis_parser, emit_report, missing_arm
from studies import arm_sets
from studies.arm_sets import Arm, Outcomes, TwoComparisons

DATASET, CONTENT = "antmaze-umaze", "b7b9dc8f"

READING = TwoComparisons(
    arms={a.name: a for a in (Arm("W", "iql", DATASET, "antmaze_actor", CONTENT),
                              Arm("O", "iql", DATASET, "table1", CONTENT),
                              Arm("BO", "bc", DATASET, "table1", CONTENT))},
    description={"W": "iql, temperature 0.001, offline only", "O": "iql, Table 1 (temperature 10)", "BO": "bc, Table 1"},
    primary=("W", "O"), secondary=("W", "BO"), seeds=range(5),
    outcomes=Outcomes(  # on W's mean success, in %
        high_from=30.0, low_below=10.0,
        high="IQL's actor imitates the file with uniform weights (W {mean:.1f}% >= {high_from:g}%, primary supports): its "
             "advantage weights, i.e. the values, remove the goal-reaching",
        low="IQL's actor does not imitate the file within 1.8e5 updates even with uniform weights (W {mean:.1f}% "
            "< {low_below:g}%, primary {word}): the limit is the actor's fit, not the values"))
PRIMARY = READING.primary


def report_lines(runs: pd.DataFrame, preset: str) -> list[str]:
    arm_sets.check_contents(runs, READING.arms)
    found = READING.comparisons(runs)
    return arm_sets.report_lines(f"IQL's actor with uniform advantage weights on the generated U-maze (preset `{preset}`)",
                                 "studies.antmaze_actor.analysis", "PROTOCOL-antmaze-actor-cpu.md",
                                 arm_sets.arms_table(runs, READING), arm_sets.comparison_table(found, PRIMARY),
                                 READING.outcome(runs, found[PRIMARY]))


def main(argv: list[str] | None = None) -> int:
    parser = analysis_parser("python -m studies.antmaze_actor.analysis", __doc__, "paper_tables/actor_cpu.md", seeds=False)
    args = parser.parse_args(argv)
    runs = READING.load(args.results, args.preset)
    if missing_arm(runs[runs.experiment == "antmaze_actor"] if not runs.empty else runs, "iql", args.preset, args.results):
        return 1
    return emit_report(lambda: report_lines(runs, args.preset), args.out)


if __name__ == "__main__":
    sys.exit(main())
