"""``python -m benchmarks.check``: results against expected ranges and external facts; non-zero on a miss.

Two rule families live in ``benchmarks/expected/<preset>.json``, and every line of output is
labelled with the family of the rule that made it::

    {"rules":    [...],   # family 1: ranges          -> [regression] and [range] lines
     "external": [...]}   # family 2: external facts  -> [external] lines

**Family 1, ranges (``"rules"``).** A rule applies to every (method, dataset) cell of its
experiment that matches; the cell's value is the mean over its complete runs of ``metric``:

* a record value: ``final_score``, ``offline_score``, ``final_return``, ``offline_return``;
* ``drop:<column>``: first minus last value of a logged curve column over the evaluation rows
  (e.g. ``drop:nll`` > 0 means the loss fell: the method learned something).

A rule with ``"min"``/``"max"`` is a fixed, hand-written bound (``[range]``). A rule carrying a
measured reference, ``"mean"``, ``"sd"`` and ``"n"`` (mean, standard deviation and run count of
the runs it was derived from) with ``"z"`` and ``"slack"``, is a **rerun-regression rule**
(``[regression]``): the range is mean +- (z * sd * sqrt(1/n + 1/m) + slack), where m is the
number of runs in the checked cell, so a cell checked with fewer seeds gets a wider range (a
two-sample test at z standard errors). ``python -m benchmarks.check --preset cpu --derive FILE``
writes such rules for every complete (method, dataset) cell of ``table1`` in a results tree;
with ``--datasets D ...`` it rederives only those datasets' rules (after a row is rerun on a
remade file and its old runs archived) and keeps every other rule as it is.
A regression rule says "a rerun reproduces the runs it was derived from"; checked against those
same runs it is circular and says nothing about whether they are right. That is what family 2
is for.

**Family 2, external facts (``"external"``).** Each entry has a ``kind``, an ``experiment``
and optional ``methods``/``datasets`` patterns; its yardstick never comes from the runs it checks:

* ``beats_random``: the cell mean of ``metric`` (default ``final_score``) exceeds the
  normalised score of a random policy on the dataset's environment plus ``margin``. D4RL's
  normalisation puts its random policy at 0 by definition (the reference minimum is that
  policy's return); our Gymnasium v5 environments are not D4RL's, so the floor is the larger of
  0 and a uniformly random policy measured here (:data:`RANDOM_POLICY_SCORES`,
  :func:`measure_random_policy_score`).
* ``dataset_card``: the cell mean of ``metric`` (default ``offline_score``: for an offline
  method that is its final score, for ODT its end-of-pretraining score) lies in
  [``low_fraction`` * card mean - ``slack``, card max + ``high_slack``], the card being the
  dataset's own normalised returns recorded in each run's provenance.json
  (``card.normalized_returns``): a return-conditioned cloner should recover a good part of the
  data's average behaviour and not land far above its best trajectory. Runs whose data has no
  card (D4RL files) are skipped, and say so.
* ``consistent_records``: every complete run's files agree with each other and with its method:
  directory name, spec, record (run id, spec, score = mean of the normalised returns, score =
  D4RL normalisation of the return with the registry's reference), config (an ``odt`` record
  has a stochastic ODT config with an online budget > 0 and rollouts entering the buffer, an
  ``odt-control`` one the same with ``add_rollouts`` false, ``odt-control-matched`` that with an
  update budget (``online.online_updates`` > 0), ``odt-offline`` and ``dt`` budget 0 with the
  Gaussian or the deterministic head, ``iql`` an IQL config, ``sac`` a SAC config on the run's
  dataset), counters (online methods took at least their budget of samples, or made exactly
  their budget of online updates where the config sets one; offline ones took no samples) and
  provenance (the run's dataset). Swapped or copied records fail here.
* ``online_phase``: for methods with pretraining and finetuning (``odt``, ``odt-control``,
  ``iql``): each run's last row is an online row with more updates than its end-of-pretraining
  row and with online samples taken, and not every seed's final score equals its offline score
  (the online phase did something).
* ``not_degenerate``: not every score of the experiment is 0 (or the same number), and no two
  runs have identical (non-constant) lists of evaluation returns.
* ``same_data``: every complete run of one dataset, whatever its method, trained on data with
  the same content hash (``provenance.json``'s ``content_sha256``): a remade file that differs
  (a medium-replay file is SAC's training history, see ``benchmarks/datasets/portable_math.py``)
  must not mix into a row. Names the runs outside the largest group.
* ``control``: where ``odt`` and a control (``odt-control``, ODT whose rollouts never enter the
  buffer, or ``odt-control-matched``, the same with its twin's number of online updates) both
  have runs of a dataset, the same seeds' final scores are not all identical: online data
  changed the result; and each ``odt-control-matched`` run made exactly as many online updates as
  its ``odt`` twin. Without control runs the rule reports a skip and passes.

The check fails, naming each cell or run, when a value is outside its range or not finite, when
a run of a checked experiment failed or diverged, and when a rule matches no complete run at all
(so it cannot pass vacuously). Exit code: 0 all in range, 1 something out of range or failed,
2 bad arguments or no expected-ranges file.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from benchmarks import aggregate as agg
from benchmarks import records as rec
from rlbase.checkpoint import atomic_write_bytes
from rlbase.presets import PRESETS
from rlbase.protocol import known_datasets

EXPECTED_DIR = Path(__file__).resolve().parent / "expected"
RECORD_METRICS = ("final_score", "offline_score", "final_return", "offline_return")
FAMILIES = ("runs", "range", "regression", "external")


@dataclass
class Finding:
    ok: bool
    text: str
    family: str = "range"  # runs | range | regression | external (see the module docstring)


def _matches(value: str, pattern) -> bool:
    patterns = [pattern] if isinstance(pattern, str) else list(pattern)
    return any(fnmatch.fnmatch(value, p) for p in patterns)


def rule_family(rule: dict) -> str:
    """``regression`` for a rule with a measured reference (derived from runs), else ``range``."""
    return "regression" if "mean" in rule else "range"


def run_metric(curves: pd.DataFrame, runs: pd.DataFrame, metric: str) -> pd.Series:
    """The metric of each complete run, indexed by run_id."""
    ok = runs[runs.status == "complete"].set_index("run_id")
    if metric in RECORD_METRICS:
        return ok[metric].astype(float)
    if metric.startswith("drop:"):
        col = metric.split(":", 1)[1]
        e = curves[curves["phase"].isin(["pretrain", "online"])] if "phase" in curves else curves.iloc[0:0]
        if col not in e:
            return pd.Series(dtype=float)
        e = e.dropna(subset=[col]).sort_values(["run_id", "step"])
        g = e.groupby("run_id")[col]
        return (g.first() - g.last()).reindex(ok.index).astype(float)
    raise ValueError(f"unknown metric {metric!r}; use one of {', '.join(RECORD_METRICS)} or drop:<column>")


def check(root: Path | str, preset: str, expected: dict, experiments: list[str] | None = None,
          families: list[str] | None = None) -> list[Finding]:
    """Every finding of both rule families (or of ``families`` only) on the tree under root."""
    wanted = set(families or FAMILIES)
    findings: list[Finding] = []
    rules = [r for r in expected.get("rules", []) if not experiments or r["experiment"] in experiments]
    rules = [r for r in rules if rule_family(r) in wanted]
    external = [r for r in expected.get("external", []) if not experiments or r["experiment"] in experiments]
    external = external if "external" in wanted else []
    if "runs" in wanted:
        for experiment in sorted({r["experiment"] for r in rules + external}):
            runs = agg.load_runs(root, preset, experiment)
            for _, r in runs[runs.status.isin(["failed", "diverged"])].iterrows():
                findings.append(Finding(False, f"{experiment}/{r.run_id}: run {r.status}: {r.error} ({r.path})", "runs"))
    for rule in rules:
        findings += _check_range_rule(root, preset, rule)
    for rule in external:
        findings += check_external(root, preset, rule)
    return findings


def _check_range_rule(root: Path | str, preset: str, rule: dict) -> list[Finding]:
    family = rule_family(rule)
    exp = rule["experiment"]
    runs = agg.load_runs(root, preset, exp)
    curves = agg.load_results(root, preset, exp)
    methods, datasets = rule.get("methods", "*"), rule.get("datasets", "*")
    runs = runs[runs.method.map(lambda m, p=methods: _matches(m, p))
                & runs.dataset.map(lambda d, p=datasets: _matches(d, p))]
    values = run_metric(curves, runs, rule["metric"])
    name = f"{exp} {rule['metric']} " + (f"near {rule['mean']:.1f}" if "mean" in rule
                                          else f"in [{rule.get('min', -math.inf)}, {rule.get('max', math.inf)}]")
    cells = runs[runs.status == "complete"].groupby(["method", "dataset"]).run_id.apply(list)
    if cells.empty:
        return [Finding(False, f"{name}: no complete runs match methods={rule.get('methods', '*')} "
                               f"datasets={rule.get('datasets', '*')} (rule would pass vacuously)", family)]
    findings = []
    for (method, dataset), ids in cells.items():
        v = float(values.reindex(ids).to_numpy(dtype=float).mean())  # NaN if any run's value is
        lo, hi = rule_range(rule, len(ids))
        cell = f"{exp} {method} {dataset} {rule['metric']} = {v:.3f} (mean of {len(ids)} runs)"
        if not math.isfinite(v):
            findings.append(Finding(False, f"{cell}: not finite", family))
        elif not lo <= v <= hi:
            findings.append(Finding(False, f"{cell}: outside [{lo:.3g}, {hi:.3g}]" + (f" ({rule['why']})" if rule.get("why") else ""), family))
        else:
            findings.append(Finding(True, f"{cell}: ok", family))
    return findings


def rule_range(rule: dict, runs_in_cell: int) -> tuple[float, float]:
    """[min, max] of a rule for a cell of ``runs_in_cell`` runs (see the module docstring)."""
    if "mean" not in rule:
        return rule.get("min", -math.inf), rule.get("max", math.inf)
    half = (rule.get("z", 3.0) * rule["sd"] * math.sqrt(1.0 / rule["n"] + 1.0 / max(runs_in_cell, 1))
            + rule.get("slack", 0.0))
    return rule["mean"] - half, rule["mean"] + half


# ============================================================================ external facts
# Normalised score of a uniformly random policy on each environment family, as measured by
# measure_random_policy_score(<family>-medium, episodes=50, seed=1000) on the registry's
# Gymnasium v5 environments (gymnasium 1.4, mujoco 3+). D4RL's own random policy scores 0 by
# definition of the normalisation; a random ant survives longer in Ant-v5 without contact costs.
RANDOM_POLICY_SCORES = {"hopper": 1.16, "walker2d": -0.01, "halfcheetah": -0.04, "ant": 7.08,
                        "antmaze": 0.0}  # AntMaze: a random ant never reaches the goal cell


def random_policy_score(dataset: str) -> float | None:
    """The score a method must beat on ``dataset``: max(D4RL's random policy, ours measured).
    A Minari dataset with reference scores in its metadata: 0, its own normalisation's random
    reference (our measurements use D4RL's references, so they do not carry over); without
    reference scores (raw returns): None, no random-policy reference is known."""
    from benchmarks.datasets.minari_spec import MinariSpec
    from benchmarks.datasets.registry import get_spec

    spec = get_spec(dataset)
    if isinstance(spec, MinariSpec):
        return 0.0 if spec.has_reference else None
    d4rl_random = float(spec.score_fn(spec.ref_min_score))  # 0 by the normalisation's definition
    return max(d4rl_random, RANDOM_POLICY_SCORES.get(spec.family, d4rl_random))


def measure_random_policy_score(dataset: str, episodes: int = 50, seed: int = 1000) -> float:
    """Mean normalised score of uniformly random actions on the dataset's environment (how
    RANDOM_POLICY_SCORES was made; seconds per family, no training)."""
    import numpy as np

    from benchmarks.datasets.registry import get_spec

    spec = get_spec(dataset)
    env = spec.make_env()
    env.action_space.seed(seed)
    returns = []
    try:
        for k in range(episodes):
            env.reset(seed=seed + k)
            total, done = 0.0, False
            while not done:
                _, reward, term, trunc, _ = env.step(env.action_space.sample())
                total += float(reward)
                done = term or trunc
            returns.append(total)
    finally:
        env.close()
    return float(np.mean(spec.score_fn(np.asarray(returns))))


@dataclass
class RunFiles:
    """One complete run as the files on disk have it (missing files are None)."""

    directory: Path
    spec: dict
    record: dict
    config: dict | None
    provenance: dict | None

    @property
    def method(self) -> str:
        return self.spec["method"]

    @property
    def dataset(self) -> str:
        return self.spec["dataset"]

    @property
    def name(self) -> str:
        return self.directory.name

    def score(self, metric: str) -> float:
        v = self.record.get(metric)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan

    @property
    def data_content(self) -> str | None:
        """The content hash of the data the run trained on (``provenance.json``), None if unrecorded."""
        c = self.provenance.get("content_sha256") if isinstance(self.provenance, dict) else None
        return c if isinstance(c, str) and c else None


def _read_optional(path: Path):
    try:
        return rec.read_json(path) if path.exists() else None
    except (OSError, json.JSONDecodeError):
        return None


def load_run_files(root: Path | str, preset: str, experiment: str) -> list[RunFiles]:
    """The complete runs of one experiment with their spec, record, config and provenance."""
    out = []
    for directory in rec.iter_run_dirs(root, preset, experiment):
        record = rec.read_record(directory)
        if not record or record.get("status") != "complete":
            continue
        out.append(RunFiles(directory, rec.read_spec(directory), record,
                            _read_optional(directory / rec.CONFIG), _read_optional(directory / rec.PROVENANCE)))
    return out


# What each method's config must look like: ODT-family configs have model/optim/online sections.
ODT_FAMILY = {
    "odt": {"stochastic": True, "online": True, "add_rollouts": True},
    "odt-control": {"stochastic": True, "online": True, "add_rollouts": False},
    "odt-control-matched": {"stochastic": True, "online": True, "add_rollouts": False, "update_budget": True},
    "odt-offline": {"stochastic": True, "online": False},
    "dt": {"stochastic": False, "online": False},
}
IQL_KEYS = {"expectile", "temperature", "offline_updates", "online_samples"}
SAC_KEYS = {"alpha_lr", "init_alpha", "warmup_steps", "online_samples", "dataset"}
TWO_PHASE_METHODS = ("odt", "odt-control", "odt-control-matched", "iql")  # pretraining, then finetuning online
CONTROL_METHODS = ("odt-control", "odt-control-matched")  # ODT without new data, compared with odt per seed


def online_budget(config: dict | None) -> int | None:
    """The online sample budget a config asks for (None if it does not say)."""
    if not isinstance(config, dict):
        return None
    if isinstance(config.get("online"), dict):
        return config["online"].get("online_samples")
    return config.get("online_samples")


def update_budget(config: dict | None) -> int:
    """The online update budget an ODT config stops on instead of its samples (0: none)."""
    online = config.get("online") if isinstance(config, dict) else None
    value = online.get("online_updates", 0) if isinstance(online, dict) else 0
    return value if isinstance(value, int) else 0


def online_updates_made(record: dict, config: dict | None) -> int | None:
    """The gradient updates an ODT run made after its pretraining (None if the files do not say)."""
    updates = (record.get("counters") or {}).get("updates")
    pretrain = config.get("pretrain_updates") if isinstance(config, dict) else None
    if not isinstance(updates, int) or not isinstance(pretrain, int):
        return None
    return updates - pretrain


def config_problems(method: str, spec: dict, config) -> list[str]:
    """Why ``config`` cannot be the configuration of a ``method`` run of ``spec`` (empty: it can)."""
    if method not in ODT_FAMILY and method not in ("iql", "sac"):
        return []  # a method this check has no signature for
    if not isinstance(config, dict):
        return ["config.json is missing or unreadable: which method made this record cannot be told"]
    problems = []
    if method in ODT_FAMILY:
        want = ODT_FAMILY[method]
        if not all(isinstance(config.get(k), dict) for k in ("model", "optim", "online")):
            return [f"config.json is not an ODT/DT config (keys {', '.join(sorted(config)[:8])}), "
                    f"but the run is {method}"]
        stochastic = config["model"].get("stochastic")
        if stochastic is not want["stochastic"]:
            head = "the Gaussian" if want["stochastic"] else "DT's deterministic"
            problems.append(f"config model.stochastic={stochastic}, but {method} uses {head} head")
        budget = config["online"].get("online_samples")
        if want["online"] and not (isinstance(budget, (int, float)) and budget > 0):
            problems.append(f"config online.online_samples={budget}, but {method} finetunes online (> 0)")
        if not want["online"] and budget != 0:
            problems.append(f"config online.online_samples={budget}, but {method} is offline only (0)")
        if "add_rollouts" in want:
            added = config["online"].get("add_rollouts", True)  # configs older than the control lack it
            if added is not want["add_rollouts"]:
                problems.append(f"config online.add_rollouts={added}, but in {method} rollouts "
                                f"{'enter' if want['add_rollouts'] else 'never enter'} the buffer")
        if want.get("update_budget", False) != (update_budget(config) > 0):
            rule = "its twin's online updates" if want.get("update_budget") else "its sample budget"
            problems.append(f"config online.online_updates={update_budget(config)}, but {method} stops on {rule}")
    elif method == "iql":
        if not IQL_KEYS <= set(config) or "model" in config:
            problems.append(f"config.json is not an IQL config (keys {', '.join(sorted(config)[:8])})")
    elif method == "sac":
        if not SAC_KEYS <= set(config):
            problems.append(f"config.json is not a SAC config (keys {', '.join(sorted(config)[:8])})")
        elif config["dataset"] != spec["dataset"]:
            problems.append(f"SAC config trains on {config['dataset']!r}, the run is on {spec['dataset']!r}")
    if "seed" in config and config["seed"] != spec.get("seed"):
        problems.append(f"config seed {config['seed']} != spec seed {spec.get('seed')}")
    return problems


def record_problems(run: RunFiles) -> list[str]:
    """Everything about one complete run's files that contradicts the rest (empty: consistent)."""
    spec, record = run.spec, run.record
    problems = []
    if run.name != spec.get("run_id"):
        problems.append(f"directory {run.name} holds the spec of {spec.get('run_id')}")
    if record.get("run_id") != spec.get("run_id"):
        problems.append(f"record.json is {record.get('run_id')}'s, not this run's")
    for key in ("method", "dataset", "seed", "variant", "preset", "experiment"):
        if isinstance(record.get("spec"), dict) and key in record["spec"] and record["spec"][key] != spec.get(key):
            problems.append(f"record spec {key}={record['spec'][key]!r} != spec.json {key}={spec.get(key)!r}")
    problems += config_problems(run.method, spec, run.config)

    budget = online_budget(run.config)
    taken = (record.get("counters") or {}).get("online_samples")
    if update_budget(run.config) > 0:  # it stops on updates: its samples are whatever those took
        made = online_updates_made(record, run.config)
        if made != update_budget(run.config):
            problems.append(f"made {made} online updates, but its config's online.online_updates is "
                            f"{update_budget(run.config)}")
    elif isinstance(budget, (int, float)):
        if not isinstance(taken, (int, float)):
            problems.append("record has no online_samples counter")
        elif budget > 0 and taken < budget:
            problems.append(f"took {taken} online samples of a budget of {budget}")
        elif budget == 0 and taken != 0:
            problems.append(f"took {taken} online samples, but its config has no online budget")

    prov = run.provenance if isinstance(run.provenance, dict) else {}
    if prov.get("name") not in (None, spec.get("dataset")):
        problems.append(f"provenance.json is dataset {prov.get('name')!r}, the run is on {spec.get('dataset')!r}")

    problems += _score_problems(run)
    return problems


def _score_problems(run: RunFiles) -> list[str]:
    """The record's scores are its rows' scores, and each is the D4RL normalisation of its return."""
    problems = []
    try:
        from benchmarks.datasets.registry import get_spec
        ds = get_spec(run.dataset)
    except Exception:  # noqa: BLE001 - an unknown dataset: nothing to normalise against
        ds = None
    for phase in ("final", "offline"):
        row = run.record.get(phase)
        score = run.record.get(f"{phase}_score")
        if not isinstance(row, dict) or not isinstance(score, (int, float)):
            continue
        if isinstance(row.get("score_mean"), (int, float)) and not math.isclose(score, row["score_mean"], abs_tol=1e-9):
            problems.append(f"{phase}_score {score} is not the {phase} row's score_mean {row['score_mean']}")
        ret = run.record.get(f"{phase}_return")
        if ds is not None and isinstance(ret, (int, float)):
            normalised = float(ds.score_fn(ret))
            if not math.isclose(score, normalised, rel_tol=1e-6, abs_tol=1e-6):
                problems.append(f"{phase}_score {score:.4g} is not 100 (R - min) / (max - min) of its return "
                                f"{ret:.6g} with {run.dataset}'s D4RL reference ({normalised:.4g})")
    return problems


def _select(runs: list[RunFiles], rule: dict) -> list[RunFiles]:
    methods, datasets = rule.get("methods", "*"), rule.get("datasets", "*")
    return [r for r in runs if _matches(r.method, methods) and _matches(r.dataset, datasets)]


def _cells(runs: list[RunFiles]) -> dict[tuple[str, str], list[RunFiles]]:
    cells: dict[tuple[str, str], list[RunFiles]] = defaultdict(list)
    for r in runs:
        cells[(r.method, r.dataset)].append(r)
    return dict(sorted(cells.items()))


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def _ext(ok: bool, text: str) -> Finding:
    return Finding(ok, text, "external")


def _beats_random(rule: dict, runs: list[RunFiles]) -> list[Finding]:
    metric, margin = rule.get("metric", "final_score"), float(rule.get("margin", 0.0))
    out = []
    for (method, dataset), cell in _cells(runs).items():
        v = _mean([r.score(metric) for r in cell])
        try:
            floor = random_policy_score(dataset)
        except Exception as exc:  # noqa: BLE001 - an unknown dataset
            out.append(_ext(False, f"{method} {dataset}: no random-policy reference ({exc})"))
            continue
        if floor is None:  # raw-return scores: nothing to compare with, said so, not failed
            out.append(_ext(True, f"{method} {dataset}: skipped, scored by raw return (no reference scores), "
                                  f"so no random-policy floor is known"))
            continue
        text = (f"{method} {dataset} {metric} = {v:.3f} (mean of {len(cell)} runs) vs random policy "
                f"{floor:.2f} + margin {margin:g}")
        if not math.isfinite(v):
            out.append(_ext(False, f"{text}: not finite"))
        elif v <= floor + margin:
            out.append(_ext(False, f"{text}: no better than a random policy"))
        else:
            out.append(_ext(True, f"{text}: ok"))
    return out


def _card_returns(run: RunFiles) -> dict | None:
    card = (run.provenance or {}).get("card") if isinstance(run.provenance, dict) else None
    nr = card.get("normalized_returns") if isinstance(card, dict) else None
    if isinstance(nr, dict) and all(isinstance(nr.get(k), (int, float)) for k in ("mean", "max")):
        return nr
    return None


def _dataset_card(rule: dict, runs: list[RunFiles]) -> list[Finding]:
    metric = rule.get("metric", "offline_score")
    frac, slack, high = (float(rule.get(k, d)) for k, d in (("low_fraction", 0.5), ("slack", 5.0), ("high_slack", 15.0)))
    out = []
    for (method, dataset), cell in _cells(runs).items():
        cards = [c for c in (_card_returns(r) for r in cell) if c is not None]
        if not cards:
            out.append(_ext(True, f"{method} {dataset} {metric}: skipped, no dataset card in provenance.json "
                                  "(a D4RL file)"))
            continue
        lo = frac * _mean([c["mean"] for c in cards]) - slack
        hi = max(c["max"] for c in cards) + high
        v = _mean([r.score(metric) for r in cell])
        text = (f"{method} {dataset} {metric} = {v:.3f} (mean of {len(cell)} runs) vs the dataset's normalised "
                f"returns (card mean {_mean([c['mean'] for c in cards]):.2f}, max {max(c['max'] for c in cards):.2f}): "
                f"plausible range [{lo:.2f}, {hi:.2f}]")
        if not math.isfinite(v):
            out.append(_ext(False, f"{text}: not finite"))
        elif not lo <= v <= hi:
            side = "below what cloning the data gives" if v < lo else "far above the best trajectory in the data"
            out.append(_ext(False, f"{text}: {side}"))
        else:
            out.append(_ext(True, f"{text}: ok"))
    return out


def _consistent_records(rule: dict, runs: list[RunFiles]) -> list[Finding]:
    out = []
    for r in runs:
        problems = record_problems(r)
        if problems:
            out.append(_ext(False, f"{r.name}: inconsistent record: {'; '.join(problems)}"))
    if not out:
        out.append(_ext(True, f"{len(runs)} runs: record, spec, config, counters and provenance agree"))
    return out


def _online_phase(rule: dict, runs: list[RunFiles]) -> list[Finding]:
    out = []
    for (method, dataset), cell in _cells(runs).items():
        bad = False
        for r in cell:
            final, offline = r.record.get("final"), r.record.get("offline")
            taken = (r.record.get("counters") or {}).get("online_samples") or 0
            if not isinstance(final, dict) or final.get("phase") != "online":
                out.append(_ext(False, f"{r.name}: the last evaluation row is not an online row"))
            elif not isinstance(offline, dict):
                out.append(_ext(False, f"{r.name}: no end-of-pretraining row in the record"))
            elif not (final.get("updates") or 0) > (offline.get("updates") or 0):
                out.append(_ext(False, f"{r.name}: no gradient update after pretraining "
                                       f"({offline.get('updates')} -> {final.get('updates')})"))
            elif not taken > 0:
                out.append(_ext(False, f"{r.name}: no online samples taken"))
            else:
                continue
            bad = True
        # a run evaluated to constant returns (say no AntMaze success before and after) can keep
        # its score through a working online phase; the others must not all keep theirs
        varied = [r for r in cell if not _constant_returns(r)]
        if varied and all(r.score("final_score") == r.score("offline_score") for r in varied):
            out.append(_ext(False, f"{method} {dataset}: final score equals the end-of-pretraining score on "
                                   f"every one of {len(varied)} runs: the online phase changed nothing"))
        elif not varied and not bad:
            out.append(_ext(True, f"{method} {dataset}: online phase ran on {len(cell)} runs; every evaluation "
                                  "returned one constant value, so the score comparison is skipped"))
        elif not bad:
            gain = _mean([r.score("final_score") - r.score("offline_score") for r in cell])
            out.append(_ext(True, f"{method} {dataset}: online phase ran on {len(cell)} runs "
                                  f"(mean change {gain:+.2f}): ok"))
    return out


def _returns(run: RunFiles, phase: str = "final") -> list[float] | None:
    row = run.record.get(phase)
    returns = row.get("returns") if isinstance(row, dict) else None
    return [float(x) for x in returns] if isinstance(returns, list) and returns else None


def _constant_returns(run: RunFiles) -> bool:
    """True if both evaluations of a run returned one value in every episode (no information)."""
    final, offline = _returns(run, "final"), _returns(run, "offline")
    return (final is not None and offline is not None and len(set(final)) == 1
            and len(set(offline)) == 1)


def _not_degenerate(rule: dict, runs: list[RunFiles]) -> list[Finding]:
    out = []
    finals = [r.score("final_score") for r in runs]
    finite = [v for v in finals if math.isfinite(v)]
    if len(finite) >= 2 and all(v == 0.0 for v in finite):
        out.append(_ext(False, f"every one of {len(finite)} runs scores exactly 0"))
    elif len(finite) >= 2 and len({r.method for r in runs}) > 1 and len(set(finite)) == 1:
        out.append(_ext(False, f"every one of {len(finite)} runs of {len({r.method for r in runs})} methods "
                               f"scores exactly {finite[0]}"))
    seen: dict[tuple, str] = {}
    for r in runs:
        returns = _returns(r)
        if returns is None or len(set(returns)) < 2:
            continue  # constant returns (e.g. no AntMaze success) legitimately repeat
        key = tuple(returns)
        if key in seen:
            out.append(_ext(False, f"{r.name} and {seen[key]} have identical evaluation returns: "
                                   "a copied or swapped record"))
        else:
            seen[key] = r.name
    if not out:
        out.append(_ext(True, f"{len(runs)} runs: scores not all zero or equal, no duplicated evaluations"))
    return out


def _control(rule: dict, runs: list[RunFiles]) -> list[Finding]:
    odt = {(r.dataset, r.spec.get("variant"), r.spec.get("seed")): r for r in runs if r.method == "odt"}
    present = [m for m in CONTROL_METHODS if any(r.method == m for r in runs)]
    if not present:
        return [_ext(True, "odt vs odt-control: skipped, no odt-control runs (nor odt-control-matched)")]
    out = []
    for method in present:
        ctl = {(r.dataset, r.spec.get("variant"), r.spec.get("seed")): r for r in runs if r.method == method}
        for dataset in sorted({k[0] for k in ctl}):
            pairs = [(odt[k], ctl[k]) for k in sorted(ctl, key=str) if k[0] == dataset and k in odt]
            out += _control_pairs(method, dataset, pairs)
    return out


def _control_pairs(method: str, dataset: str, pairs: list[tuple[RunFiles, RunFiles]]) -> list[Finding]:
    """The control rule on one dataset's (odt, control) runs of the same seeds."""
    label = f"odt vs {method} {dataset}"
    if not pairs:
        return [_ext(True, f"{label}: skipped, no seed has both")]
    out = []
    if method == "odt-control-matched":  # the update-matched control: the same online updates as its twin
        for a, b in pairs:
            ours, twin = online_updates_made(b.record, b.config), online_updates_made(a.record, a.config)
            if ours != twin:
                out.append(_ext(False, f"{label}: {b.name} made {ours} online updates, its twin {a.name} {twin}"))
    diffs = [a.score("final_score") - b.score("final_score") for a, b in pairs]
    if all(d == 0.0 for d in diffs):
        out.append(_ext(False, f"{label}: identical final scores on all {len(pairs)} "
                               "paired seeds: the rollouts entering the buffer changed nothing"))
    elif not out:
        out.append(_ext(True, f"{label}: odt - control = {_mean(diffs):+.2f} "
                              f"(mean of {len(pairs)} paired seeds): ok"))
    return out


def _same_data(rule: dict, runs: list[RunFiles]) -> list[Finding]:
    """Every run of one dataset, whatever its method, trained on the same data (content hash)."""
    by_dataset: dict[str, dict[str | None, list[RunFiles]]] = defaultdict(lambda: defaultdict(list))
    for r in runs:
        by_dataset[r.dataset][r.data_content].append(r)
    out = []
    for dataset, groups in sorted(by_dataset.items()):
        unknown = groups.pop(None, [])
        note = f" ({len(unknown)} without a content hash, not compared)" if unknown else ""
        if len(groups) <= 1:
            content, same = next(iter(groups.items()), ("-", []))
            out.append(_ext(True, f"{dataset}: {len(same)} runs on one data content {content[:8]}{note}"))
            continue
        parts = sorted(groups.items(), key=lambda kv: -len(kv[1]))
        detail = "; ".join(f"{c[:8]}: {len(rs)} run{'s' * (len(rs) != 1)}" + (f" ({', '.join(r.name for r in rs)})" if i else "")
                           for i, (c, rs) in enumerate(parts))
        out.append(_ext(False, f"{dataset}: runs trained on {len(groups)} different data contents, so one "
                               f"row mixes datasets: {detail}{note}"))
    return out


EXTERNAL_KINDS: dict[str, Callable[[dict, list[RunFiles]], list[Finding]]] = {
    "beats_random": _beats_random,
    "dataset_card": _dataset_card,
    "consistent_records": _consistent_records,
    "online_phase": _online_phase,
    "not_degenerate": _not_degenerate,
    "control": _control,
    "same_data": _same_data,
}


def check_external(root: Path | str, preset: str, rule: dict) -> list[Finding]:
    """The findings of one external rule (see the module docstring)."""
    kind = rule.get("kind")
    if kind not in EXTERNAL_KINDS:
        return [_ext(False, f"unknown external rule kind {kind!r}; known: {', '.join(EXTERNAL_KINDS)}")]
    runs = _select(load_run_files(root, preset, rule["experiment"]), rule)
    label = f"{rule['experiment']} {kind}"
    if not runs:
        return [_ext(False, f"{label}: no complete runs match methods={rule.get('methods', '*')} "
                            f"datasets={rule.get('datasets', '*')} (rule would pass vacuously)")]
    why = f" ({rule['why']})" if rule.get("why") else ""
    return [Finding(f.ok, f"{label}: {f.text}" + ("" if f.ok else why), f.family)
            for f in EXTERNAL_KINDS[kind](rule, runs)]


# ============================================================================ deriving rules
# The record values each method's cells are guarded by: offline-only methods have one score,
# methods with both phases two.
DERIVED_METRICS = {"dt": ("final_score",), "odt-offline": ("final_score",), "sac": ("final_score",),
                   "odt": ("offline_score", "final_score"), "odt-control": ("offline_score", "final_score"),
                   "odt-control-matched": ("offline_score", "final_score"),
                   "iql": ("offline_score", "final_score")}


def derive_rules(root: Path | str, preset: str, experiment: str = "table1", z: float = 3.0,
                 slack: float = 2.0, min_runs: int = 3, datasets: list[str] | None = None) -> list[dict]:
    """One measured-reference (rerun-regression) rule per (method, dataset, metric) cell with
    >= min_runs complete runs (of ``datasets`` only, when given)."""
    runs = agg.load_runs(root, preset, experiment)
    runs = runs[runs.status == "complete"]
    if datasets is not None:
        runs = runs[runs.dataset.isin(datasets)]
    rules = []
    for (method, dataset), cell in runs.groupby(["method", "dataset"]):
        for metric in DERIVED_METRICS.get(method, ("final_score",)):
            v = cell[metric].dropna().to_numpy(dtype=float)
            if len(v) < min_runs:
                continue
            rules.append({"experiment": experiment, "methods": [method], "datasets": [dataset],
                          "metric": metric, "mean": round(float(v.mean()), 3),
                          "sd": round(float(v.std(ddof=1)), 3), "n": int(len(v)), "z": z, "slack": slack,
                          "why": f"rerun regression: measured on {len(v)} runs at the {preset} preset "
                                 f"({', '.join(str(s) for s in sorted(cell.seed))})"})
    return rules


def load_expected(preset: str, path: Path | None = None) -> dict:
    path = path or EXPECTED_DIR / f"{preset}.json"
    if not path.exists():
        known = sorted(p.stem for p in EXPECTED_DIR.glob("*.json"))
        raise FileNotFoundError(f"no expected ranges for preset {preset!r} at {path}; presets with ranges: {', '.join(known)}")
    return json.loads(path.read_text())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.check", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="smoke", help=f"{' | '.join(PRESETS)} (default smoke)")
    p.add_argument("--results", type=Path, default=rec.DEFAULT_ROOT)
    p.add_argument("--expected", type=Path, default=None, help="rules file (default benchmarks/expected/<preset>.json)")
    p.add_argument("--experiments", nargs="*", default=None, help="only rules of these experiments")
    p.add_argument("--families", nargs="*", default=None, choices=FAMILIES, metavar="FAMILY",
                   help=f"only these kinds of findings: {', '.join(FAMILIES)} (default all): runs = failed or "
                        "diverged runs, range = fixed bounds, regression = rerun-regression rules derived "
                        "from earlier runs, external = facts that do not come from the checked runs")
    p.add_argument("-v", "--verbose", action="store_true", help="also print the findings that pass")
    p.add_argument("--derive", type=Path, default=None, metavar="FILE",
                   help="instead of checking, write rerun-regression rules (measured references) for every "
                        "table1 cell of the results (with >= 3 complete runs) into FILE, keeping FILE's "
                        "fixed-range and external rules")
    p.add_argument("--datasets", nargs="+", default=None, metavar="DATASET",
                   help="with --derive: rederive only these datasets' rules (e.g. after a row was rerun on a "
                        "remade file and its old runs archived): their old regression rules are dropped, those "
                        "of every other dataset kept as they are")
    args = p.parse_args(argv)
    if args.preset not in PRESETS:
        print(f"error: unknown preset {args.preset!r}; known: {', '.join(PRESETS)}", file=sys.stderr)
        return 2
    if args.datasets is not None and args.derive is None:
        p.error("--datasets only goes with --derive")
    unknown = sorted(set(args.datasets or []) - set(known_datasets()))
    if unknown:
        p.error(f"--datasets: unknown dataset(s) {', '.join(unknown)}; known: {', '.join(known_datasets())}")
    if args.derive is not None:
        return _write_derived(args.derive, args.results, args.preset, args.datasets)
    try:
        expected = load_expected(args.preset, args.expected)
    except (FileNotFoundError, json.JSONDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        findings = check(args.results, args.preset, expected, args.experiments, args.families)
    except rec.CorruptRecord as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    bad = [f for f in findings if not f.ok]
    for f in findings:
        if not f.ok or args.verbose:
            print(("OK   " if f.ok else "FAIL ") + f"[{f.family}] " + f.text)
    per = ", ".join(f"{fam} {sum(f.ok for f in findings if f.family == fam)}/{sum(f.family == fam for f in findings)}"
                    for fam in FAMILIES if any(f.family == fam for f in findings))
    print(f"check [{args.preset}]: {len(findings) - len(bad)} ok, {len(bad)} failed" + (f" (ok/all: {per})" if per else ""))
    return 1 if bad else 0


def _write_derived(path: Path, root: Path, preset: str, datasets: list[str] | None = None) -> int:
    derived = derive_rules(root, preset, datasets=datasets)
    if not derived and datasets is None:
        print(f"error: no table1 cell under {root} at preset {preset!r} has 3 complete runs", file=sys.stderr)
        return 2
    existing = json.loads(path.read_text()) if path.exists() else {"rules": []}
    old = existing.get("rules", [])
    kept = [r for r in old if "mean" not in r or not _rederived(r, datasets)]  # hand-written rules stay
    dropped = len(old) - len(kept)
    atomic_write_bytes(path, (json.dumps({**existing, "rules": kept + derived}, indent=1) + "\n").encode())
    scope = "" if datasets is None else f" for {', '.join(datasets)} ({dropped} old ones dropped)"
    print(f"wrote {len(derived)} rerun-regression rules{scope} (+{len(kept)} other rules and "
          f"{len(existing.get('external', []))} external rules kept) to {path}")
    return 0


def _rederived(rule: dict, datasets: list[str] | None) -> bool:
    """Whether a regression rule is replaced by a derive over ``datasets`` (None: all of them)."""
    if datasets is None:
        return True
    patterns = rule.get("datasets", ["*"])
    return rule.get("experiment") == "table1" and any(fnmatch.fnmatchcase(d, pat) for d in datasets for pat in patterns)


if __name__ == "__main__":
    sys.exit(main())
