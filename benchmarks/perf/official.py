"""Side by side with the official online-dt code: the same update, alternating, in one sitting.

``python -m benchmarks.perf.official --official D`` (D: the timing setup of
``shared/anchors/official-odt/README.md``: the unmodified official code in ``D/src``, its timing
scripts and venv in ``D``). Not run in CI; ``make perf`` times the project's side alone.

For each round, for each config, it runs the official trainer (its own model, LAMB, trainer
and data loader at ``num_workers=0``, through ``D/bench_train.py``) and this project's
``ODTTrainer.batch_tensors`` + ``update`` as separate processes, one after the other, the order
swapped every round, on the same synthetic Hopper-shaped data (200 trajectories of 1000 steps)
and the same hyperparameters (the paper's: LAMB 1e-4, weight decay 5e-4, warmup 1e4, dropout
0.1, initial temperature 0.1, K = 20). Each side reports the median wall time between
consecutive updates (sampling included) and its process CPU time per update over the timed
loop; ratios are taken pair by pair (the two runs of one round) and summarised by median and
range, so a change in machine load between rounds does not enter a ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# The official timing scripts' configs (common.py there), as the project's model config.
CONFIGS = {
    "d": dict(embed_dim=64, n_layers=2, n_heads=1, batch_size=32),
    "cpu": dict(embed_dim=64, n_layers=3, n_heads=4, batch_size=64),  # the cpu preset's size
    "c": dict(embed_dim=128, n_layers=3, n_heads=1, batch_size=64),
    "paper": dict(embed_dim=512, n_layers=4, n_heads=4, batch_size=256),
}
SYNTHETIC_TRAJECTORIES, SYNTHETIC_LENGTH = 200, 1000  # the official script's defaults


@dataclass(frozen=True)
class Side:
    median_ms: float  # median wall time between consecutive update starts
    cpu_ms: float  # process CPU time per update over the timed loop


# ----- the project's side (run in its own process) -------------------------------------------

def synthetic_trajectories(seed: int = 0):
    """Hopper-shaped random data in the official script's layout: 200 x 1000 steps."""
    from rlbase.trajectories import Trajectories
    rng = np.random.default_rng(seed)
    n = SYNTHETIC_TRAJECTORIES * SYNTHETIC_LENGTH
    return Trajectories(observations=rng.standard_normal((n, 11)).astype(np.float32),
                        actions=rng.uniform(-1, 1, (n, 3)).astype(np.float32),
                        rewards=rng.uniform(0, 4, n).astype(np.float32),
                        lengths=np.full(SYNTHETIC_TRAJECTORIES, SYNTHETIC_LENGTH, dtype=np.int64),
                        terminated=np.zeros(SYNTHETIC_TRAJECTORIES, dtype=bool))


def project_side(config: str, updates: int, warmup: int, threads: int) -> Side:
    """Time ``updates`` updates of the project's trainer at the official defaults."""
    import torch

    from benchmarks.perf.speed import make_hopper
    from odt.config import make_config
    from odt.train import ODTTrainer
    from rlbase.config import apply_overrides
    from rlbase.runtime import keep_freed_memory_in_heap

    keep_freed_memory_in_heap()
    torch.set_num_threads(threads)
    size = CONFIGS[config]
    cfg = apply_overrides(make_config("hopper-medium", "online", "paper"), {
        "model.embed_dim": size["embed_dim"], "model.n_layers": size["n_layers"],
        "model.n_heads": size["n_heads"], "optim.batch_size": size["batch_size"], "device": "cpu"})
    trainer = ODTTrainer(cfg, synthetic_trajectories(), make_hopper, progress=False)
    starts = []
    cpu0 = 0.0
    for i in range(warmup + updates):
        if i == warmup:
            cpu0 = time.process_time()
        starts.append(time.perf_counter())
        trainer.update(trainer.batch_tensors(trainer.buffer))
    starts.append(time.perf_counter())
    cpu = time.process_time() - cpu0
    trainer.close()
    return Side(median_ms=float(np.median(np.diff(starts[warmup:]))) * 1e3, cpu_ms=cpu / updates * 1e3)


# ----- the official side ----------------------------------------------------------------------

def official_side(official: Path, config: str, updates: int, warmup: int, threads: int) -> Side:
    """Run the official trainer through the anchor's bench_train.py and read its JSON line."""
    cmd = [str(official / "venv" / "bin" / "python"), "bench_train.py", "--config", config,
           "--num_workers", "0", "--updates", str(warmup + updates), "--warmup", str(warmup),
           "--threads", str(threads)]
    res = _json_line(subprocess.run(cmd, cwd=official, env={**os.environ, "ODT_ANCHOR_SRC": "src"},
                                    capture_output=True, text=True), cmd)
    # own CPU over train_iteration (warmup included: the official script times no sub-range)
    cpu_s = res["own_cpu_util"] * os.cpu_count() * res["train_iteration_wall_s"]
    return Side(median_ms=res["median_ms_per_update"], cpu_ms=cpu_s / res["updates"] * 1e3)


def _json_line(proc: subprocess.CompletedProcess, cmd: list[str]) -> dict:
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    return json.loads(lines[-1])


def project_side_subprocess(config: str, updates: int, warmup: int, threads: int) -> Side:
    cmd = [sys.executable, "-m", "benchmarks.perf.official", "--project-side", "--configs", config,
           "--updates", str(updates), "--warmup", str(warmup), "--threads", str(threads)]
    res = _json_line(subprocess.run(cmd, capture_output=True, text=True), cmd)
    return Side(**res)


# ----- alternation and summary ----------------------------------------------------------------

def pair_ratios(official: list[Side], project: list[Side]) -> dict:
    """Project / official, pair by pair (one pair per round), for wall medians and CPU time."""
    wall = [p.median_ms / o.median_ms for o, p in zip(official, project)]
    cpu = [p.cpu_ms / o.cpu_ms for o, p in zip(official, project)]
    return {"wall": _spread(wall), "cpu": _spread(cpu)}


def _spread(values: list[float]) -> dict:
    return {"median": float(np.median(values)), "min": float(min(values)), "max": float(max(values)),
            "values": [round(v, 4) for v in values]}


def alternate(official: Path, configs: list[str], threads: list[int], rounds: int, updates: dict[str, int],
              warmup: dict[str, int], say=print) -> list[dict]:
    rows = []
    for t in threads:
        for config in configs:
            off, proj = [], []
            for r in range(rounds):
                n, w = updates[config], warmup[config]
                order = ("official", "project") if r % 2 == 0 else ("project", "official")
                for side in order:
                    if side == "official":
                        off.append(official_side(official, config, n, w, t))
                    else:
                        proj.append(project_side_subprocess(config, n, w, t))
                say(f"{config} threads={t} round {r + 1}/{rounds}: official {off[-1].median_ms:.1f} ms "
                    f"(cpu {off[-1].cpu_ms:.1f}), project {proj[-1].median_ms:.1f} ms (cpu {proj[-1].cpu_ms:.1f})")
            rows.append({"config": config, **CONFIGS[config], "context_len": 20, "threads": t,
                         "updates": updates[config], "rounds": rounds,
                         "official": {"wall_ms": _spread([s.median_ms for s in off]),
                                      "cpu_ms": _spread([s.cpu_ms for s in off])},
                         "project": {"wall_ms": _spread([s.median_ms for s in proj]),
                                     "cpu_ms": _spread([s.cpu_ms for s in proj])},
                         "ratio": pair_ratios(off, proj)})
    return rows


def format_rows(rows: list[dict]) -> str:
    head = ("| config | threads | official ms/update (wall) | project ms/update (wall) | project / official, "
            "wall | official CPU ms | project CPU ms | project / official, CPU |\n|" + "---|" * 8)
    fmt = lambda s: f"{s['median']:.1f} ({s['min']:.1f}-{s['max']:.1f})"  # noqa: E731
    fmr = lambda s: f"{s['median']:.2f} ({s['min']:.2f}-{s['max']:.2f})"  # noqa: E731
    body = [f"| {r['config']} {r['embed_dim']}/{r['n_layers']}L/{r['n_heads']}H/B{r['batch_size']} | {r['threads']} | "
            f"{fmt(r['official']['wall_ms'])} | {fmt(r['project']['wall_ms'])} | {fmr(r['ratio']['wall'])} | "
            f"{fmt(r['official']['cpu_ms'])} | {fmt(r['project']['cpu_ms'])} | {fmr(r['ratio']['cpu'])} |"
            for r in rows]
    return "\n".join([head, *body])


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.perf.official", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Medians over rounds, (min-max) in brackets; ratios pair by pair.")
    p.add_argument("--official", type=Path, help="the official timing setup directory (D in the anchors README)")
    p.add_argument("--configs", default="d,cpu,c", help=f"comma-separated subset of {', '.join(CONFIGS)}")
    p.add_argument("--threads", default="1", help="torch thread counts, comma-separated (default 1)")
    p.add_argument("--rounds", type=int, default=3, help="alternating pairs per config (default 3)")
    p.add_argument("--updates", type=int, default=100, help="timed updates per run (paper size: 5)")
    p.add_argument("--warmup", type=int, default=10, help="untimed updates first (paper size: 2)")
    p.add_argument("--out", type=Path, default=Path("paper_tables/perf/perf_vs_official.json"))
    p.add_argument("--project-side", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    a.configs = [c for c in a.configs.split(",") if c]
    unknown = [c for c in a.configs if c not in CONFIGS]
    if unknown:
        p.error(f"--configs: unknown {unknown}; known: {', '.join(CONFIGS)}")
    a.threads = [int(t) for t in a.threads.split(",") if t]
    if a.rounds < 1 or a.updates < 1 or a.warmup < 0 or not a.threads or min(a.threads) < 1:
        p.error("--rounds, --updates and --threads must be >= 1, --warmup >= 0")
    if not a.project_side and (a.official is None or not (a.official / "bench_train.py").is_file()):
        p.error(f"--official {a.official}: no bench_train.py there; set it up as "
                "shared/anchors/official-odt/README.md says")
    return a


def main(argv: list[str] | None = None) -> None:
    a = parse_args(argv)
    if a.project_side:
        side = project_side(a.configs[0], a.updates, a.warmup, a.threads[0])
        print(json.dumps({"median_ms": side.median_ms, "cpu_ms": side.cpu_ms}))
        return
    updates = {c: (min(a.updates, 5) if c == "paper" else a.updates) for c in a.configs}
    warmup = {c: (min(a.warmup, 2) if c == "paper" else a.warmup) for c in a.configs}
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    load = os.getloadavg()
    rows = alternate(a.official.resolve(), a.configs, a.threads, a.rounds, updates, warmup)
    print(format_rows(rows))
    git = subprocess.run(["git", "-C", str(a.official / "src"), "rev-parse", "HEAD"], capture_output=True, text=True)
    res = {"started": started, "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
           "loadavg_before": load, "loadavg_after": os.getloadavg(), "cpus": os.cpu_count(),
           "official_commit": git.stdout.strip() or "unknown (no git metadata in src/)",
           "project_commit": subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip(),
           "rows": rows}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
