"""Where a live ODT run spends its time: a py-spy profile of it, split by trainer phase.

A whole run's cost per update can differ from a bare update's (``benchmarks.perf``) by what the
run does besides updating: exploration rollouts, evaluations, batch sampling, checkpoints.
Sampling a running process answers how much, without stopping it or touching its code:

    py-spy record -r 20 -d 900 -p PID -f raw -o run.txt     # PID: the run's python process
    python -m benchmarks.perf.phases run.txt --out phases.json

py-spy's ``raw`` format is one collapsed stack per line (frames root first, separated by
``;``, each ``function (file:line)``), then a space and the sample count. A stack falls in the
first phase of :data:`PHASES` that one of its frames names; threads that only wait (tqdm's
monitor) are left out.
"""

from __future__ import annotations

import argparse
import gzip
import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

# (phase, frame-name fragments): the first phase with a fragment in any frame of a stack wins,
# so rollouts inside a phase are told apart before the update's own frames are matched.
PHASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("exploration", ("ODTTrainer.explore",)),
    ("evaluation", ("ODTTrainer.evaluate",)),
    ("batch sampling", ("ODTTrainer.batch_tensors",)),
    ("checkpoint", ("ODTTrainer._save", "CheckpointManager.save")),
    ("update: backward", ("backward",)),
    ("update: optimizer", ("Lamb.step", "clip_grad_norm_", "zero_grad", "LambdaLR.step")),
    ("update: forward and loss", ("ODTTrainer.step", "ODTTrainer.update")),
)
WAITING_THREADS = ("TMonitor.run",)  # tqdm's monitor thread: asleep, not the run's work


def frame_names(stack: str) -> list[str]:
    """The function names of a raw stack, root first, without their ``(file:line)``."""
    return [frame.split(" (", 1)[0] for frame in stack.split(";")]


def phase_of(names: list[str]) -> str:
    """The phase a stack (its frame names) belongs to; "other" where none matches."""
    for phase, fragments in PHASES:
        if any(f in name for name in names for f in fragments):
            return phase
    return "other"


def phase_samples(lines: Iterable[str]) -> Counter:
    """Samples per phase over py-spy raw lines (blank lines skipped, waiting threads left out)."""
    counts: Counter = Counter()
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            raise ValueError(f"line {n} is not 'stack count' (py-spy record -f raw): {line[:80]!r}")
        names = frame_names(stack)
        if any(w in name for name in names for w in WAITING_THREADS):
            continue
        counts[phase_of(names)] += int(count)
    return counts


def shares(counts: Counter) -> dict[str, float]:
    """Each phase's fraction of the samples, largest first."""
    total = sum(counts.values())
    if total == 0:
        raise ValueError("no samples of the run's own work in the profile")
    return {phase: n / total for phase, n in counts.most_common()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf.phases", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("profile", type=Path, help="py-spy record -f raw output of a running ODT run (.gz too)")
    parser.add_argument("--out", type=Path, help="write samples and shares per phase here as JSON")
    args = parser.parse_args(argv)
    if not args.profile.is_file():
        parser.error(f"no profile at {args.profile}")
    text = gzip.decompress(args.profile.read_bytes()).decode() if args.profile.suffix == ".gz" else args.profile.read_text()
    counts = phase_samples(text.splitlines())
    share = shares(counts)
    for phase, s in share.items():
        print(f"{100 * s:6.2f}%  {phase}  ({counts[phase]} samples)")
    if args.out:
        args.out.write_text(json.dumps({"profile": args.profile.name, "samples": sum(counts.values()),
                                        "phases": {p: {"samples": counts[p], "share": s} for p, s in share.items()}},
                                       indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
