"""Does a speed change leave training where it was? Loss curves of two code versions, overlaid.

A faster kernel or a different way of drawing dropout masks changes rounding or the random
stream, so a fixed-seed curve cannot be compared bit for bit. Instead both versions train the
``cpu`` preset's ODT on the same data for N updates at several seeds, and the curves (per-update
loss, NLL, entropy, lambda) are compared against the spread between seeds:

    # in a checkout of each version (the file runs from any checkout: it imports odt/ from
    # PYTHONPATH, so an older commit's worktree can run it with this file)
    PYTHONPATH=OLD python benchmarks/perf/overlay.py run --seed 100 --out before_s100.json
    python -m benchmarks.perf.overlay run --seed 100 --out after_s100.json
    python -m benchmarks.perf.overlay plot --before before_s*.json --after after_s*.json \\
        --out benchmarks/perf_overlay.png

The same overlay compares precisions (issue 23): ``run --set precision=bf16`` against the
default fp32, at any preset and device (``--preset paper --set device=cuda`` on a GPU).

``plot`` draws moving averages and writes a JSON summary beside the figure: per metric, the
mean over the last quarter of the updates per run, and the difference of the two versions'
means next to the seed-to-seed standard deviation within each version.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

METRICS = ("loss", "nll", "entropy", "lambda")


def run(seed: int, updates: int, dataset: str, out: Path, preset: str = "cpu",
        overrides: dict[str, str] | None = None) -> dict:
    """Train ``updates`` pretraining updates of ``preset`` and record each update's metrics."""
    import torch

    from benchmarks.datasets import load_dataset
    from odt.config import make_config
    from odt.train import ODTTrainer
    from rlbase.runtime import keep_freed_memory_in_heap

    keep_freed_memory_in_heap()
    torch.set_num_threads(1)
    data = load_dataset(dataset)
    cfg = make_config(dataset, "online", preset, {"device": "cpu", **(overrides or {}), "seed": seed})
    trainer = ODTTrainer(cfg, data.trajectories, data.spec.make_env, data.score_fn, progress=False)
    rows, cpu0, wall0 = [], time.process_time(), time.perf_counter()
    for _ in range(updates):
        m = trainer.update(trainer.batch_tensors(trainer.buffer))
        rows.append([m[k] for k in METRICS])
    res = {"dataset": dataset, "seed": seed, "updates": updates, "metrics": list(METRICS), "preset": preset,
           "overrides": overrides or {}, "device": str(trainer.device), "precision": cfg.precision,
           "cpu_s": time.process_time() - cpu0, "wall_s": time.perf_counter() - wall0, "rows": rows}
    trainer.close()
    out.write_text(json.dumps(res))
    return res


def load_runs(paths: list[Path]) -> list[dict]:
    runs = [json.loads(p.read_text()) for p in paths]
    if not runs:
        raise SystemExit("no run files given")
    for r in runs:  # rows as lists in METRICS order (dict rows accepted too)
        r["rows"] = [[row[k] for k in METRICS] if isinstance(row, dict) else row for row in r["rows"]]
        r.setdefault("dataset", "hopper-medium")
    return runs


def tail_means(runs: list[dict], fraction: float = 0.25) -> np.ndarray:
    """(runs, metrics): each run's mean over its last ``fraction`` of updates."""
    out = []
    for r in runs:
        rows = np.asarray(r["rows"], dtype=np.float64)
        out.append(rows[-max(1, int(len(rows) * fraction)):].mean(axis=0))
    return np.asarray(out)


def summary(before: list[dict], after: list[dict]) -> dict:
    b, a = tail_means(before), tail_means(after)
    res = {}
    for i, name in enumerate(METRICS):
        res[name] = {"before": b[:, i].round(5).tolist(), "after": a[:, i].round(5).tolist(),
                     "difference_of_means": float(a[:, i].mean() - b[:, i].mean()),
                     "seed_sd_before": float(b[:, i].std(ddof=1)) if len(b) > 1 else None,
                     "seed_sd_after": float(a[:, i].std(ddof=1)) if len(a) > 1 else None}
    res["cpu_ms_per_update"] = {"before": [1e3 * r["cpu_s"] / r["updates"] for r in before],
                                "after": [1e3 * r["cpu_s"] / r["updates"] for r in after]}
    return res


def plot(before: list[dict], after: list[dict], out: Path, window: int = 50,
         labels: tuple[str, str] = ("before", "after")) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(METRICS), figsize=(4 * len(METRICS), 3.2))
    kernel = np.ones(window) / window
    for runs, colour, label in ((before, "tab:blue", labels[0]), (after, "tab:orange", labels[1])):
        for k, r in enumerate(runs):
            rows = np.asarray(r["rows"], dtype=np.float64)
            x = np.arange(window, len(rows) + 1)
            for i, ax in enumerate(axes):
                ax.plot(x, np.convolve(rows[:, i], kernel, mode="valid"), color=colour, lw=1, alpha=0.8,
                        label=f"{label} (seed {r['seed']})" if i == 0 else None, ls="-" if k == 0 else "--")
    for ax, name in zip(axes, METRICS):
        ax.set_title(f"{name} ({window}-update mean)")
        ax.set_xlabel("update")
        if name in ("loss", "nll"):  # from ~130 down to about -1.5: a linear axis hides the tail
            ax.set_yscale("symlog", linthresh=1.0)
    axes[0].legend(fontsize=7)
    preset = before[0].get("preset", "cpu")
    fig.suptitle(f"{preset} preset, {before[0]['dataset']}, pretraining updates: {labels[0]} vs {labels[1]}")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.perf.overlay", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="train and record per-update metrics")
    r.add_argument("--seed", type=int, required=True)
    r.add_argument("--updates", type=int, default=2000)
    r.add_argument("--dataset", default="hopper-medium")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--preset", default="cpu", help="paper | cpu | smoke (default cpu)")
    r.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="config override as in python -m odt, e.g. --set precision=bf16 --set device=cuda")
    q = sub.add_parser("plot", help="overlay two versions' runs; writes the figure and <out>.json")
    q.add_argument("--before", type=Path, nargs="+", required=True)
    q.add_argument("--after", type=Path, nargs="+", required=True)
    q.add_argument("--out", type=Path, required=True)
    q.add_argument("--labels", nargs=2, default=["before", "after"], metavar=("BEFORE", "AFTER"),
                   help="legend names of the two groups (default: before after; e.g. fp32 bf16)")
    a = p.parse_args(argv)
    if a.command == "run":
        from rlbase.config import parse_assignments

        res = run(a.seed, a.updates, a.dataset, a.out, a.preset, parse_assignments(a.set))
        print(f"{a.out}: {res['updates']} updates, {res['cpu_s']:.1f} s CPU")
        return
    before, after = load_runs(a.before), load_runs(a.after)
    plot(before, after, a.out, labels=tuple(a.labels))
    s = summary(before, after)
    a.out.with_suffix(".json").write_text(json.dumps(s, indent=1) + "\n")
    print(json.dumps(s, indent=1))


if __name__ == "__main__":
    sys.exit(main())
