"""``python -m benchmarks.official.timing``: whole runs of our ODT and the official code, side by side.

Each round runs the same seed, preset and thread count through both methods as whole runs
(``python -m benchmarks.methods <method> <dataset> --preset P --seed S --threads T``: dataset
loading, pretraining, the online phase, every evaluation), the two at the same time, one per
core, so both see the same machine load; the process CPU time of each (from the operating
system's accounting of the finished child) and its wall time are kept, and the ratio ours /
official is taken within each round. Rounds use seeds ``--first-seed``, +1, ... (tuning seeds:
these runs are for timing, their scores are not results). Needs ``ODT_OFFICIAL_SRC``
(docs/official-odt.md). Writes ``--out`` (JSON) with every round and the medians.

``--from-records EXPERIMENT`` runs nothing: it pairs by seed the complete records of both
methods in one experiment whose two arms ran in one sitting on one machine (``official_more``:
one launcher per arm, one thread each, side by side) and summarises their wall time per run and
per update. Records keep wall time only (``attempt_seconds``), not the process's CPU time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmarks.official.driver import SOURCE_ENV, locate_source

METHODS = ("odt", "official-odt")


@dataclass(frozen=True)
class Timed:
    method: str
    seed: int
    wall_s: float
    cpu_s: float | None  # user + system time of the child and its own children (None: not measured)
    updates: int
    online_samples: int
    final_score: float | None


def command(method: str, dataset: str, preset: str, seed: int, threads: int, out: Path,
            overrides: Sequence[str] = ()) -> list[str]:
    """The whole-run command of one method; ``overrides`` (FIELD=VALUE) go to its ``--set``."""
    return [sys.executable, "-m", "benchmarks.methods", method, dataset, "--preset", preset,
            "--seed", str(seed), "--threads", str(threads), "--out", str(out),
            *(["--set", *overrides] if overrides else [])]


def run_pair(dataset: str, preset: str, seed: int, threads: int, scratch: Path,
             ours_overrides: Sequence[str] = ()) -> list[Timed]:
    """Both methods at once, each in its own process; their times from ``wait4``'s rusage. Ours
    runs with ``ours_overrides`` (e.g. ``precision=bf16``), the official code as it is."""
    started, children = {}, {}
    for method in METHODS:
        out = scratch / f"{method}-s{seed}.json"
        started[method] = time.perf_counter()
        overrides = ours_overrides if method == "odt" else ()
        children[method] = (subprocess.Popen(command(method, dataset, preset, seed, threads, out, overrides),
                                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), out)
    timed = []
    for method, (child, out) in children.items():
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started[method]
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"{method} seed {seed} failed (exit {os.waitstatus_to_exitcode(status)})")
        result = json.loads(out.read_text())
        timed.append(Timed(method, seed, wall, usage.ru_utime + usage.ru_stime, int(result["updates"]),
                           int(result["online_samples"]), (result.get("online") or {}).get("score_mean")))
    return timed


def rounds_from_records(results: Path, preset: str, experiment: str, dataset: str) -> list[list[Timed]]:
    """One round per seed that both methods completed in ``experiment``: each run's wall time
    (its single attempt's seconds; a resumed run is left out), updates and final score."""
    from benchmarks import records as rec

    by_seed: dict[int, dict[str, Timed]] = {}
    for directory in rec.iter_run_dirs(results, preset, experiment):
        if not (directory / "record.json").is_file():  # a run not started yet or stopped early
            continue
        record, spec = rec.read_json(directory / "record.json"), rec.read_json(directory / "spec.json")
        if record.get("status") != "complete" or record.get("attempts") != 1 or spec.get("dataset") != dataset:
            continue
        if spec.get("method") not in METHODS:
            continue
        counters = record["counters"]
        by_seed.setdefault(int(spec["seed"]), {})[spec["method"]] = Timed(
            spec["method"], int(spec["seed"]), float(record["attempt_seconds"]), None,
            int(counters["updates"]), int(counters["online_samples"]), record.get("final_score"))
    return [[pair[m] for m in METHODS] for _, pair in sorted(by_seed.items()) if len(pair) == len(METHODS)]


def summary(rounds: list[list[Timed]], figures: tuple[str, ...] = ("wall_s", "cpu_s")) -> dict:
    """Medians and ranges of each method's figures and of the within-round ratios ours / official."""
    out: dict = {}
    for figure in figures:
        for method in METHODS:
            values = [getattr(t, figure) for r in rounds for t in r if t.method == method]
            per_update = [getattr(t, figure) / t.updates * 1000 for r in rounds for t in r if t.method == method]
            out[f"{method}_{figure}"] = _spread(values)
            out[f"{method}_{figure.replace('_s', '')}_ms_per_update"] = _spread(per_update)
        ratios = [_get(r, "odt", figure) / _get(r, "official-odt", figure) for r in rounds]
        out[f"ratio_{figure}"] = _spread(ratios)
    return out


def _get(rnd: list[Timed], method: str, figure: str) -> float:
    return next(getattr(t, figure) for t in rnd if t.method == method)


def _spread(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.official.timing", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", default="hopper-medium")
    p.add_argument("--preset", default="cpu")
    p.add_argument("--rounds", type=int, default=3, help="pairs of whole runs (default 3)")
    p.add_argument("--first-seed", type=int, default=100, help="seed of the first round (default 100: tuning seeds)")
    p.add_argument("--threads", type=int, default=1, help="torch threads of each run (default 1)")
    p.add_argument("--ours-set", nargs="+", default=[], metavar="FIELD=VALUE",
                   help="overrides of our runs only, e.g. precision=bf16 (the official code runs as it is)")
    p.add_argument("--scratch", type=Path, default=Path("/tmp/official-timing"), help="where each run's JSON goes")
    p.add_argument("--out", type=Path, required=True, help="JSON of every round and the medians (the report keeps its in paper_tables/perf/data/)")
    p.add_argument("--from-records", metavar="EXPERIMENT", default=None,
                   help="run nothing: pair by seed the complete records of both methods in EXPERIMENT "
                        "(e.g. official_more) under --results and summarise their wall times")
    p.add_argument("--results", type=Path, default=Path("results"), help="results root for --from-records")
    args = p.parse_args(argv)
    if args.from_records is not None:
        return _from_records(args)
    source = locate_source()  # a clear error naming ODT_OFFICIAL_SRC when it is unset
    args.scratch.mkdir(parents=True, exist_ok=True)
    rounds = []
    for i in range(args.rounds):
        seed = args.first_seed + i
        print(f"round {i + 1}/{args.rounds}: seed {seed}, {' and '.join(METHODS)} at once", flush=True)
        rounds.append(run_pair(args.dataset, args.preset, seed, args.threads, args.scratch, args.ours_set))
        for t in rounds[-1]:
            print(f"  {t.method}: wall {t.wall_s:.0f} s, CPU {t.cpu_s:.0f} s, {t.updates} updates", flush=True)
    report = {"dataset": args.dataset, "preset": args.preset, "threads": args.threads, "ours_overrides": args.ours_set,
              "official_source": {"commit": source.commit, "sha256": source.sha256, "env": SOURCE_ENV},
              "project_commit": subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip(),
              "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "rounds": [[asdict(t) for t in r] for r in rounds], "summary": summary(rounds),
              "max_rss_children_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["summary"], indent=2))
    return 0


def _from_records(args: argparse.Namespace) -> int:
    rounds = rounds_from_records(args.results, args.preset, args.from_records, args.dataset)
    if not rounds:
        print(f"error: no seed with complete records of both {' and '.join(METHODS)} in "
              f"{args.results}/{args.preset}/{args.from_records}", file=sys.stderr)
        return 1
    report = {"dataset": args.dataset, "preset": args.preset, "experiment": args.from_records,
              "source": "run records (wall time of each run's single attempt; CPU time not recorded)",
              "rounds": [[asdict(t) for t in r] for r in rounds], "summary": summary(rounds, ("wall_s",))}
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["summary"], indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
