"""``python -m benchmarks.actor_comparison``: the reading of ``PROTOCOL-antmaze-actor-cpu.md``.

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

from benchmarks import arm_sets
from benchmarks.arm_sets import Arm, TwoComparisons
from benchmarks.intervals import Interval, verdict
from benchmarks.reproduction import analysis_parser, emit_report, missing_arm

DATASET, CONTENT = "antmaze-umaze", "b7b9dc8f"
IMITATES_FROM, FAILS_BELOW = 30.0, 10.0  # the outcomes' thresholds on W's mean success, in %

READING = TwoComparisons(
    arms={a.name: a for a in (Arm("W", "iql", DATASET, "antmaze_actor", CONTENT),
                              Arm("O", "iql", DATASET, "table1", CONTENT),
                              Arm("BO", "bc", DATASET, "table1", CONTENT))},
    description={"W": "iql, temperature 0.001, offline only", "O": "iql, Table 1 (temperature 10)", "BO": "bc, Table 1"},
    primary=("W", "O"), secondary=("W", "BO"), seeds=range(5))
PRIMARY = READING.primary


def load(results, preset: str) -> pd.DataFrame:
    return arm_sets.load(results, preset, READING.arms.values())


def comparisons(runs: pd.DataFrame) -> dict[tuple[str, str], Interval | None]:
    """(left, right) -> the 95% Welch interval of left - right; None until both arms are complete."""
    return arm_sets.comparisons(runs, READING)


def outcome(runs: pd.DataFrame, primary: Interval | None) -> str:
    w = arm_sets.complete_values(runs, READING, "W")
    if primary is None or w is None:
        return "not read yet (arm W's or arm O's five seeds are not all complete)"
    word, mean = verdict(primary, expected_sign=+1), float(w.mean())
    if word == "supports" and mean >= IMITATES_FROM:
        return (f"IQL's actor imitates the file with uniform weights (W {mean:.1f}% >= {IMITATES_FROM:g}%, primary "
                "supports): its advantage weights, i.e. the values, remove the goal-reaching")
    if mean < FAILS_BELOW:
        return (f"IQL's actor does not imitate the file within 1.8e5 updates even with uniform weights (W {mean:.1f}% "
                f"< {FAILS_BELOW:g}%, primary {word}): the limit is the actor's fit, not the values")
    return f"none of the registered branches (W {mean:.1f}%, primary {word}): reported as it is"


def report_lines(runs: pd.DataFrame, preset: str) -> list[str]:
    arm_sets.check_contents(runs, READING.arms)
    found = comparisons(runs)
    return arm_sets.report_lines(f"IQL's actor with uniform advantage weights on the generated U-maze (preset `{preset}`)",
                                 "benchmarks.actor_comparison", "PROTOCOL-antmaze-actor-cpu.md",
                                 arm_sets.arms_table(runs, READING), arm_sets.comparison_table(found, PRIMARY),
                                 outcome(runs, found[PRIMARY]))


def main(argv: list[str] | None = None) -> int:
    parser = analysis_parser("python -m benchmarks.actor_comparison", __doc__, "paper_tables/actor_cpu.md", seeds=False)
    args = parser.parse_args(argv)
    runs = load(args.results, args.preset)
    if missing_arm(runs[runs.experiment == "antmaze_actor"] if not runs.empty else runs, "iql", args.preset, args.results):
        return 1
    return emit_report(lambda: report_lines(runs, args.preset), args.out)


if __name__ == "__main__":
    sys.exit(main())
