"""``python -m studies.bc.analysis``: the reading of ``PROTOCOL-bc-cpu.md``.

Behaviour cloning (``bc``, Table 1's sanity column, seeds 0-4) beside each row's Table 1 cells,
described per row (mean and 95% t-interval over its seeds); on antmaze-umaze, the protocol's
comparisons, as sets (the methods share no random streams): the primary BC - IQL at the end of the
offline phase, read for "imitation of the file reaches the goal more often than IQL does", and
BC - DT and BC - CORL's IQL with Holm over the two. A row whose BC runs name a data file other than
the row's Table 1 runs is refused.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from benchmarks import aggregate as agg
from benchmarks.corl.comparison import corl_antmaze_seeds
from benchmarks.experiments import TABLE1_DATASETS
from benchmarks.intervals import Interval, difference_interval, read_family, verdict
from benchmarks.reproduction import (
    MixedContents,
    analysis_parser,
    complete_runs,
    emit_report,
    mean_interval_cell,
    missing_arm,
    p_cell,
)

BC = "bc"
ANTMAZE = "antmaze-umaze"
SEEDS = range(5)
METRIC = "offline_score"  # the end of the offline phase (BC's only phase; equal to its final score)
PRIMARY = "iql"
SECONDARY = {"dt": "table1", "corl-iql": "corl_iql"}  # method -> its experiment
BESIDE = ("dt", "odt-offline", "iql")  # Table 1 cells shown beside BC, end of their offline phase
# the protocol's outcomes on antmaze-umaze: BC's mean success at or above / below these
IMITATION_FROM, WEAK_BELOW = 15.0, 5.0


def load(results, preset: str) -> pd.DataFrame:
    """Table 1's runs (BC and the cells beside it) and CORL's IQL runs."""
    frames = [agg.load_runs(results, preset, e) for e in ("table1", "corl_iql")]
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["method", "dataset", "seed"])


def values(runs: pd.DataFrame, method: str, dataset: str) -> np.ndarray:
    """A cell's end-of-offline scores on seeds 0-4; CORL's IQL on the seeds its protocol's rule
    reads (none while the rule is not settled)."""
    seeds = SEEDS
    if method == "corl-iql":
        seeds = corl_antmaze_seeds(runs) if dataset == ANTMAZE else SEEDS
        if seeds is None:
            return np.array([])
    cell = complete_runs(runs, method, dataset)
    cell = cell[cell.seed.isin(list(seeds))].sort_values("seed")
    return cell[METRIC].dropna().to_numpy(dtype=float)


def check_contents(runs: pd.DataFrame) -> None:
    """Raise :class:`MixedContents` for a row whose BC runs name a file its other runs do not."""
    if "data_file" not in runs:
        return
    for dataset, row in runs[runs.data_file.notna()].groupby("dataset", sort=True):
        bc = row[row.method == BC]
        others = set(row[row.method != BC].data_file)
        stray = bc[~bc.data_file.isin(others)] if others else bc.iloc[0:0]
        if not stray.empty or bc.data_file.nunique() > 1:
            raise MixedContents(f"row {dataset!r} is not read: BC runs {', '.join(sorted(bc.run_id))} name "
                                f"{', '.join(sorted(set(bc.data_file)))}; the row's other runs "
                                f"{', '.join(sorted(others))}")


def comparisons(runs: pd.DataFrame) -> dict[str, Interval | None]:
    """method -> the 95% Welch interval of BC - method on antmaze-umaze (None below 2 runs a side)."""
    bc = values(runs, BC, ANTMAZE)
    out: dict[str, Interval | None] = {}
    for method in (PRIMARY, *SECONDARY):
        other = values(runs, method, ANTMAZE)
        out[method] = difference_interval(bc, other, paired=False) if min(len(bc), len(other)) >= 2 else None
    return out


def outcome(runs: pd.DataFrame, primary: Interval | None) -> str:
    bc = values(runs, BC, ANTMAZE)
    if primary is None or len(bc) < len(SEEDS):
        return "not read yet (BC's five antmaze-umaze seeds are not all complete)"
    mean, word = float(bc.mean()), verdict(primary, expected_sign=+1)
    if word == "supports" and mean >= IMITATION_FROM:
        return (f"imitation of the file reaches the goal ({mean:.1f}% >= {IMITATION_FROM:g}%, primary supports) "
                "where both IQL implementations do not: the file's labels are the next suspect")
    if mean < WEAK_BELOW:
        return (f"plain imitation of the whole file does not reach the goal ({mean:.1f}% < {WEAK_BELOW:g}%): "
                "the file's goal-reaching signal is weak for methods that weigh every trajectory")
    return f"neither (BC {mean:.1f}%, primary {word}): reported as it is"


def rows_table(runs: pd.DataFrame) -> list[str]:
    head = "| row | BC, mean [95% t] | BC per seed | " + " | ".join(BESIDE) + " |"
    lines = [head, "|---|---|---|" + "---|" * len(BESIDE)]
    for dataset in TABLE1_DATASETS:
        bc = values(runs, BC, dataset)
        beside = " | ".join(mean_interval_cell(values(runs, m, dataset)) for m in BESIDE)
        seeds = ", ".join(f"{v:.1f}" for v in bc) or "—"
        lines.append(f"| {dataset} | {mean_interval_cell(bc)} | {seeds} | {beside} |")
    return lines


def empty_rows_note(runs: pd.DataFrame) -> list[str]:
    """Why a row has no BC score: a medium-replay file runs only where its remake has Table 1's
    content (SAC's history is remade bit for bit on the CPU model that made it only); others wait."""
    empty = [d for d in TABLE1_DATASETS if len(values(runs, BC, d)) == 0]
    replay = [d for d in empty if d.endswith("-medium-replay")]
    rest = [d for d in empty if d not in replay]
    out = []
    if replay:
        out.append(f"No BC runs on {', '.join(replay)}: a medium-replay file is SAC's own training history and "
                   "is remade bit for bit only on the CPU model that made it (its card's `sac_math.cpu_model`); "
                   "its BC cell runs only on a machine whose remake has the Table 1 content "
                   "(`PROTOCOL-bc-cpu.md`, Data), as BC on another file says nothing about Table 1's cells.")
    if rest:
        out.append(f"No complete BC runs yet on {', '.join(rest)}.")
    return [*out, ""] if out else []


def comparison_table(runs: pd.DataFrame, found: dict[str, Interval | None]) -> list[str]:
    adjusted = read_family({m: iv for m, iv in found.items() if m != PRIMARY and iv is not None})
    lines = ["| BC − | other, mean | BC − other, 95% Welch | p | p (Holm) | reading |", "|---|---|---|---|---|---|"]
    for method, iv in found.items():
        other = values(runs, method, ANTMAZE)
        if iv is None:
            lines.append(f"| {method} | {mean_interval_cell(other)} | — | — | — | not read (fewer than 2 runs a side) |")
            continue
        primary = method == PRIMARY
        holm = "primary" if primary else p_cell(adjusted[method].p_holm)
        word = verdict(iv, +1) if primary else ("differ" if adjusted[method].significant else "not told apart")
        lines.append(f"| {method}{' (primary)' if primary else ''} | {other.mean():.1f} (n={len(other)}) | "
                     f"{iv.estimate:+.1f} [{iv.low:+.1f}, {iv.high:+.1f}] | {p_cell(iv.p_value)} | {holm} | **{word}** |")
    return lines


def report_lines(runs: pd.DataFrame, preset: str) -> list[str]:
    check_contents(runs)
    found = comparisons(runs)
    return [f"# Behaviour cloning beside Table 1 (preset `{preset}`)", "",
            "Generated by `python -m studies.bc.analysis` from the records; the protocol is "
            "`PROTOCOL-bc-cpu.md`. Data generated here by the project's forge (not D4RL), each row's Table 1 "
            "file. End of the offline phase (1.8e5 updates for BC and IQL), seeds 0-4; AntMaze: success in % "
            "(100 episodes), locomotion: D4RL-normalised return (10 episodes).", "",
            "## Every row (described)", "", *rows_table(runs), "", *empty_rows_note(runs),
            f"## {ANTMAZE}: the protocol's comparisons (sets, not pairs)", "", *comparison_table(runs, found), "",
            f"**Outcome:** {outcome(runs, found[PRIMARY])}.", ""]


def main(argv: list[str] | None = None) -> int:
    parser = analysis_parser("python -m studies.bc.analysis", __doc__, "paper_tables/bc_cpu.md", seeds=False)
    args = parser.parse_args(argv)
    runs = load(args.results, args.preset)
    if missing_arm(runs, BC, args.preset, args.results):
        return 1
    return emit_report(lambda: report_lines(runs, args.preset), args.out)


if __name__ == "__main__":
    sys.exit(main())
