"""``python -m benchmarks.official.cross_start``: the official online loop, started from our pretraining.

The walker2d diagnostic of ``PROTOCOL-official-cpu.md`` (amendment of 2026-12-07). An ``odt``
run's end-of-pretraining state (a shared state under ``<results>/_pretrained/<key>/``) is set into
the official Experiment: the weights through the component checks' parameter map, LAMB's moments
and step, the learning-rate schedule's step, log lambda and its Adam state. The official
pretraining is skipped (``max_pretrain_iters`` 0) and its online loop runs unmodified through the
``official-odt`` driver, with the config of the run that left the state. Everything after the
start is the official code's: its buffer, loader, environments and random streams.

``run --state PATH`` writes one JSON per state (curve, counters, provenance) and never replaces
one; ``read`` pairs each with the ``odt`` run that continued from the same state (its committed
record) and reads the protocol's paired comparison, ours - official, on the mean of the online
evaluations (primary) and the last one (secondary).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from benchmarks import records as rec
from benchmarks.intervals import Equivalence, Interval, difference_interval, equivalence
from benchmarks.official import components as C
from benchmarks.official.driver import (
    OfficialODTAgent,
    OfficialODTConfig,
    locate_source,
    official_variant,
)
from benchmarks.reproduction import emit
from benchmarks.sharing import pretraining as shared
from odt.config import ODTConfig, from_dict
from odt.learner import ODTLearner
from rlbase.checkpoint import atomic_write_bytes

DEFAULT_OUT = Path("results/cpu/official_cross_start")
MARGIN = 5.0  # the amendment's equivalence margin (points): the size of the effect in question
METRICS = {"online_mean": "mean of the online evaluations (primary)",
           "final": "last online evaluation (secondary)"}


# ----- the state ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class OurState:
    """An ``odt`` run's end-of-pretraining state and what it came from."""

    agent: dict  # the trainer's checkpoint (model, optimizer, scheduler, log_lambda, ...)
    source_run: str  # the run that left it
    source_dir: str  # that run's directory, relative to the results root
    sha256: str  # of the state file


def read_state(path: Path) -> OurState:
    """The shared state at ``path`` (``<root>/_pretrained/<key>/ckpt-*.pt``), verified against its
    checksum by the sharing store; ValueError naming the file if it is missing or does not verify."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such state file")
    key, root = path.parent.name, path.parent.parent.parent
    found = shared.load(root, key)
    if found is None:
        raise ValueError(f"{path}: not a shared end-of-pretraining state that verifies against its checksum")
    return OurState(found.state["agent"], found.source_run, found.source_dir or "",
                    hashlib.sha256(path.read_bytes()).hexdigest())


def source_config(root: Path, state: OurState) -> ODTConfig:
    """The config of the run that left ``state`` (its ``config.json`` under ``root``)."""
    where = Path(root) / state.source_dir / "config.json"
    if not where.is_file():
        raise ValueError(f"{where}: the config of {state.source_run}, which left this state, is not there")
    return from_dict(json.loads(where.read_text()))


def set_official_state(experiment: Any, learner: ODTLearner, mapping: dict[str, C.Link]) -> int:
    """The official Experiment's model, LAMB, schedule and temperature set to ``learner``'s;
    returns the updates that state holds (the schedule's step)."""
    # C.as_ours (a transpose where GPT-2's Conv1D stores (in, out)) is its own inverse: it also
    # takes our layout to the official one
    params = dict(experiment.model.named_parameters())
    ours = dict(learner.model.named_parameters())
    C.check_map(C.shapes(experiment.model), C.shapes(learner.model), mapping)
    with torch.no_grad():
        for name, link in mapping.items():
            params[name].copy_(C.as_ours(ours[link.ours], link))
        experiment.model.log_temperature.copy_(learner.log_lambda)
    steps = set()
    for name, link in mapping.items():
        state = learner.optimizer.state.get(ours[link.ours])
        if state:  # every trained parameter; an official-only one gets no gradient and keeps none
            experiment.optimizer.state[params[name]] = {
                key: C.as_ours(state[key], link).clone(memory_format=torch.contiguous_format)
                for key in ("exp_avg", "exp_avg_sq")}
            steps.add(int(state["step"]))
    if len(steps) != 1:
        raise ValueError(f"our LAMB state holds step counts {sorted(steps)}; one count expected")
    experiment.optimizer.param_groups[0]["step"] = steps.pop()  # the official LAMB counts per group
    experiment.log_temperature_optimizer.load_state_dict(learner.lambda_optimizer.state_dict())
    scheduler, updates = experiment.scheduler, learner.scheduler.last_epoch
    scheduler.last_epoch, scheduler._step_count = updates, learner.scheduler._step_count
    for group, base in zip(experiment.optimizer.param_groups, scheduler.base_lrs, strict=True):
        group["lr"] = base * scheduler.lr_lambdas[0](updates)
    return updates


# ----- one run -------------------------------------------------------------------------------------

def cross_start_config(cfg: ODTConfig, dataset: str) -> OfficialODTConfig:
    """The official run of ``cfg`` with its pretraining skipped."""
    source = locate_source()
    variant = official_variant(cfg, dataset)
    variant["max_pretrain_iters"] = 0
    return OfficialODTConfig(odt=cfg, dataset=dataset, variant=variant, source_sha256=source.sha256,
                             source_commit=source.commit)


def run_one(state_path: Path, out_dir: Path, root: Path) -> Path:
    """The official online loop from the state at ``state_path``; its JSON under ``out_dir``."""
    from benchmarks.datasets import load_dataset

    state = read_state(state_path)
    cfg = source_config(root, state)
    dataset = state.source_run.split("__")[1]
    out = Path(out_dir) / f"official-odt-from-odt__{dataset}__s{cfg.seed}.json"
    if out.exists():
        raise FileExistsError(f"{out} exists: a committed result is never replaced (move it away to run again)")
    data = load_dataset(dataset)
    official = cross_start_config(cfg, dataset)
    learner = ODTLearner(cfg, data.trajectories.obs_dim, data.trajectories.act_dim)
    learner.load_state_dict(state.agent)
    mapping = C.parameter_map(cfg.model.n_layers, cfg.model.positional_embedding)
    agent = OfficialODTAgent(official, data.trajectories, data.spec.make_env, score_fn=data.score_fn)
    agent.before_online = lambda experiment: set_official_state(experiment, learner, mapping)
    agent.pretrain(lambda row: print(json.dumps({k: row[k] for k in ("phase", "updates", "online_samples", "score_mean")})))
    result = {"method": "official-odt-from-odt", "dataset": dataset, "seed": cfg.seed,
              "state": {"path": str(state_path), "sha256": state.sha256, "source_run": state.source_run,
                        "updates": agent._updates_before_online},
              "official_source": {"sha256": official.source_sha256, "commit": official.source_commit},
              "data": {"content_sha256": data.provenance.get("content_sha256")},
              "code": rec.code_version(), "environment": rec.environment(),
              "counters": vars(agent.counters), "curve": agent.rows, "variant": official.variant}
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(out, (json.dumps(result, indent=1, default=str) + "\n").encode())
    return out


# ----- the reading ---------------------------------------------------------------------------------

def online_readings(rows: Sequence[dict]) -> dict[str, float]:
    """A run's two readings from its curve rows: the mean and the last of its online evaluations."""
    scores = [float(r["score_mean"]) for r in rows if r["phase"] == "online"]
    if not scores:
        raise ValueError("a run without online evaluations")
    return {"online_mean": float(np.mean(scores)), "final": scores[-1]}


@dataclass(frozen=True)
class PairedReading:
    metric: str
    ours: np.ndarray
    official: np.ndarray  # the official loop from the same states, seed for seed
    interval: Interval  # 95% paired t, ours - official
    equivalence: Equivalence  # TOST at 90% within +-MARGIN

    @property
    def verdict(self) -> str:
        if self.interval.high < 0:
            return "the official loop higher from the same start"
        if self.interval.low > 0:
            return "ours higher from the same start"
        return f"equivalent within ±{MARGIN:g}" if self.equivalence.equivalent else "inconclusive"


def paired_readings(ours: dict[int, dict[str, float]], official: dict[int, dict[str, float]]) -> list[PairedReading]:
    """Each metric, paired by seed over the seeds both arms have (at least 2)."""
    seeds = sorted(set(ours) & set(official))
    if len(seeds) < 2:
        raise ValueError(f"a paired reading needs 2 or more seeds in both arms; have {seeds}")
    out = []
    for metric in METRICS:
        a = np.array([ours[s][metric] for s in seeds])
        b = np.array([official[s][metric] for s in seeds])
        out.append(PairedReading(metric, a, b, difference_interval(a, b, paired=True),
                                 equivalence(a, b, MARGIN, paired=True)))
    return out


def load_arms(out_dir: Path, records: Path) -> tuple[dict[int, dict], dict[int, dict], list[dict]]:
    """seed -> readings of ours (the committed record each state's run left) and of the official
    loop (the JSONs under ``out_dir``), and the JSONs themselves."""
    runs = [json.loads(p.read_text()) for p in sorted(Path(out_dir).glob("*.json"))]
    ours, official = {}, {}
    for run in runs:
        source = run["state"]["source_run"]
        found = sorted(Path(records).glob(f"*/*/{source}/curve.jsonl"))
        if not found:
            raise ValueError(f"no committed record of {source} (the run that left seed {run['seed']}'s state) under {records}")
        ours[run["seed"]] = online_readings(rec.read_curve(found[0]))
        official[run["seed"]] = online_readings(run["curve"])
    return ours, official, runs


def report_lines(ours: dict[int, dict], official: dict[int, dict], runs: list[dict]) -> list[str]:
    lines = ["# The official online loop from our pretraining (walker2d diagnostic, preset `cpu`)", "",
             "Generated by `python -m benchmarks.official.cross_start read` from "
             "`results/cpu/official_cross_start/` and the committed `odt` records whose end-of-pretraining "
             "states the official runs started from; the protocol is `PROTOCOL-official-cpu.md` (amendment "
             "of 2026-12-07). Data generated here by the project's forge (not D4RL). Budget: the `cpu` "
             "preset's 5000 online samples. Pairs share the start state only (rollouts, evaluation episodes "
             "and dropout draws differ): paired t over seeds, ours − official. Scores D4RL-normalised.", "",
             f"| reading | ours | official from our state | ours − official, 95% paired t | p | TOST 90% (±{MARGIN:g}) | verdict |",
             "|---|---|---|---|---|---|---|"]
    for r in paired_readings(ours, official):
        i, e = r.interval, r.equivalence.interval
        lines.append(f"| {METRICS[r.metric]} | {r.ours.mean():.1f} ± {r.ours.std(ddof=1):.1f} | "
                     f"{r.official.mean():.1f} ± {r.official.std(ddof=1):.1f} | {i.estimate:+.1f} "
                     f"[{i.low:+.1f}, {i.high:+.1f}] (n={i.n_a}) | {i.p_value:.3f} | [{e.low:+.1f}, {e.high:+.1f}] | "
                     f"**{r.verdict}** |")
    lines += ["", "Per seed (online mean / final):", "",
              "| seed | start state (sha256) | the run that left it | ours | official from our state | official rounds, updates, samples |",
              "|---|---|---|---|---|---|"]
    for run in sorted(runs, key=lambda r: r["seed"]):
        s, k = run["seed"], run["counters"]
        lines.append(f"| {s} | {run['state']['sha256'][:12]} | {run['state']['source_run']} | "
                     f"{ours[s]['online_mean']:.1f} / {ours[s]['final']:.1f} | "
                     f"{official[s]['online_mean']:.1f} / {official[s]['final']:.1f} | "
                     f"{k['rounds']}, {k['updates']}, {k['online_samples']} |")
    code = sorted({r["code"].get("git_sha", "?")[:7] + ("+dirty" if r["code"].get("git_dirty") else "") for r in runs})
    cpus = sorted({str(r["environment"].get("cpu_model")) for r in runs})
    lines += ["", f"Official runs: code {', '.join(code)}; official source "
              f"{', '.join(sorted({str(r['official_source']['commit']) for r in runs}))}; "
              f"CPU {', '.join(cpus)}; data {', '.join(sorted({str(r['data']['content_sha256'])[:8] for r in runs}))}."]
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.official.cross_start", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="the official online loop from one or more end-of-pretraining states")
    run.add_argument("--state", type=Path, nargs="+", required=True,
                     help="shared states, e.g. $ODT_RESULTS/_pretrained/<key>/ckpt-000000005000.pt")
    run.add_argument("--results", type=Path, default=rec.DEFAULT_ROOT,
                     help="the results root the states' runs are under (default: results/ or $ODT_RESULTS)")
    run.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"where the JSONs go (default {DEFAULT_OUT})")
    run.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    read = sub.add_parser("read", help="the paired reading against the runs that left the states")
    read.add_argument("--runs", type=Path, default=DEFAULT_OUT, help=f"the official runs' JSONs (default {DEFAULT_OUT})")
    read.add_argument("--records", type=Path, default=Path("results"), help="the committed records (default results/)")
    read.add_argument("--out", type=Path, default=None, help="also write the report here, e.g. paper_tables/official_cross_start_cpu.md")
    args = p.parse_args(argv)
    try:
        if args.command == "run":
            torch.set_num_threads(args.threads)
            for path in args.state:
                print(f"wrote {run_one(path, args.out, args.results)}")
            return 0
        return emit("\n".join(report_lines(*load_arms(args.runs, args.records))), args.out)
    except (ValueError, FileExistsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
