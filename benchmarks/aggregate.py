"""The results tree as tidy pandas DataFrames, and the aggregate statistics over tasks.

* :func:`load_results`: one row per (run, curve row), with a column for every factor (preset,
  experiment, method, dataset, seed, variant, status) and every logged metric; a run with no
  curve row yet (failed early, or still running) contributes one row with empty metrics, so
  nothing on disk is silently dropped. Every table and figure is a groupby over this frame.
* :func:`load_runs`: one row per run from its final record (final/offline score and return,
  status, error, wall time, CPU core-seconds, dataset source) and where it ran (:func:`origin`: code version, CPU
  model, torch version, dataset file).
* :func:`rliable_summary`: IQM and optimality gap with stratified bootstrap confidence
  intervals, and the probability of improvement of one column over another (rliable).

Both loaders sort deterministically, so the same tree always gives the same frame.
"""

from __future__ import annotations

import json
import warnings
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks import records as rec

FACTORS = ["preset", "experiment", "method", "dataset", "variant", "seed", "run_id", "status"]
DROP = {"returns"}  # per-episode lists stay in the records; the frame holds their summaries


def _spec_row(directory: Path) -> dict:
    spec = rec.read_spec(directory)
    return {"preset": spec["preset"], "experiment": spec["experiment"], "method": spec["method"],
            "dataset": spec["dataset"], "variant": spec.get("variant", "default"),
            "seed": int(spec["seed"]), "run_id": spec["run_id"],
            "overrides": json.dumps(spec.get("overrides", []), sort_keys=True)}


def load_results(root: Path | str, preset: str | None = None, experiment: str | None = None) -> pd.DataFrame:
    """Every curve row of every run under root, tidy."""
    rows = []
    for directory in rec.iter_run_dirs(root, preset, experiment):
        base = {**_spec_row(directory), "status": rec.status_of(directory), "data_source": _source(directory)}
        curve = rec.read_curve(directory / rec.CURVE)
        if not curve:
            rows.append({**base, "step": -1})
        for i, r in enumerate(curve):
            rows.append({**base, "step": i, **{k: v for k, v in r.items() if k not in DROP}})
    if not rows:
        return pd.DataFrame(columns=[*FACTORS, "step", "phase", "updates", "online_samples",
                                     "return_mean", "score_mean"])
    df = pd.DataFrame(rows)
    first = [c for c in [*FACTORS, "overrides", "step"] if c in df.columns]
    df = df[first + sorted(c for c in df.columns if c not in first)]
    return df.sort_values(["preset", "experiment", "run_id", "step"], kind="stable").reset_index(drop=True)


def load_runs(root: Path | str, preset: str | None = None, experiment: str | None = None) -> pd.DataFrame:
    """One row per run: its factors and final record."""
    rows = []
    for directory in rec.iter_run_dirs(root, preset, experiment):
        record = rec.read_record(directory) or {}
        provenance = _provenance(directory)
        attempts = rec.read_attempts(directory)
        source = provenance.get("source")
        rows.append({
            **_spec_row(directory), "status": rec.status_of(directory),
            "final_score": record.get("final_score"), "offline_score": record.get("offline_score"),
            "final_return": record.get("final_return"), "offline_return": record.get("offline_return"),
            "wall_time": (record.get("counters") or {}).get("wall_time"),
            "cpu_time": (record.get("counters") or {}).get("cpu_time"),
            "updates": (record.get("counters") or {}).get("updates"),
            "online_samples": (record.get("counters") or {}).get("online_samples"),
            "attempts": record.get("attempts"), "core_seconds": rec.core_seconds(record, attempts),
            "error": record.get("error"),
            "data_source": source, "scoring": _scoring(provenance), "path": str(directory),
            **origin(attempts, provenance),
        })
    columns = [*FACTORS, "overrides", "final_score", "offline_score", "final_return", "offline_return",
               "wall_time", "cpu_time", "updates", "online_samples", "attempts", "core_seconds", "error", "data_source", "scoring",
               "path", *ORIGIN]
    df = pd.DataFrame(rows, columns=columns)
    for c in ("final_score", "offline_score", "final_return", "offline_return", "wall_time", "cpu_time",
              "updates", "online_samples", "core_seconds"):
        df[c] = pd.to_numeric(df[c], errors="coerce").astype(float)
    return df.sort_values(["preset", "experiment", "run_id"], kind="stable").reset_index(drop=True)


def _provenance(directory: Path) -> dict:
    path = directory / rec.PROVENANCE
    return rec.read_json(path) if path.exists() else {}


# load_runs' columns saying where a run ran, with their headers in the tables
ORIGIN = {"code": "code", "cpu": "CPU", "torch": "torch", "data_file": "data file"}


def origin(attempts: list[dict], provenance: dict) -> dict[str, str | None]:
    """Where a run ran, from its ``environment.json`` (one entry per attempt) and its dataset's
    provenance: ``code`` (short git sha, ``+dirty`` for uncommitted changes, ``outside git``),
    ``cpu`` (CPU model, ``+ CUDA GPU`` where the run saw one), ``torch`` (version) and
    ``data_file`` (the dataset's content hash, 8 digits). A run resumed under another value lists
    each in attempt order (``a then b``); a value no attempt recorded is None."""

    def code(a: dict) -> str | None:
        if "git_sha" not in a:
            return None
        sha = a.get("git_sha")
        return "outside git" if not sha else sha[:7] + ("+dirty" if a.get("git_dirty") else "")

    def machine(a: dict) -> str | None:  # a run that saw a GPU says so: its numbers are the GPU's
        return a.get("cpu_model") and a["cpu_model"] + (" + CUDA GPU" if a.get("cuda") else "")

    def each(value_of) -> str | None:
        values = [v for v in (value_of(a) for a in attempts) if v]
        return " then ".join(dict.fromkeys(values)) or None

    digest = provenance.get("content_sha256") or provenance.get("sha256")
    return {"code": each(code), "cpu": each(machine),
            "torch": each(lambda a: (a.get("versions") or {}).get("torch")),
            "data_file": digest[:8] if digest else None}


def tally(values: pd.Series) -> str:
    """"a" when every run has one value, else "a (3), b (2)" (most runs first, then by name)."""
    counts = sorted(values.fillna("not recorded").value_counts().items(), key=lambda kv: (-kv[1], str(kv[0])))
    return str(counts[0][0]) if len(counts) == 1 else ", ".join(f"{v} ({n})" for v, n in counts)


def core_hours_cell(runs: pd.DataFrame) -> str:
    """The CPU core-hours ``runs`` took (``records.core_seconds`` summed): "2.41", or
    ">= 2.41 (1 of 5 not timed)" where some run's records cannot say (a GPU run, a follower resumed
    over attempts, a run made before its attempts were recorded)."""
    seconds = runs["core_seconds"]
    hours = f"{seconds.sum() / 3600:.2f}"
    untimed = int(seconds.isna().sum())
    return hours if untimed == 0 else f">= {hours} ({untimed} of {len(runs)} not timed)"


def origin_cells(runs: pd.DataFrame) -> list[str]:
    """Where ``runs`` ran, one text per ``ORIGIN`` column (see :func:`tally`)."""
    return [tally(runs[c]) for c in ORIGIN]


def _source(directory: Path) -> str | None:
    """Where the run's data came from: 'generated' (the forge), 'd4rl', 'minari', 'generated-smoke'."""
    return _provenance(directory).get("source")


def _scoring(provenance: dict) -> str | None:
    """How the run's scores were computed: a Minari dataset's own statement (normalized with its
    metadata's reference scores, or the raw return), else D4RL's normalization."""
    if not provenance:
        return None
    return provenance.get("scoring") or "D4RL normalized (100 = expert, 0 = random)"


def score_matrix(runs: pd.DataFrame, method: str, value: str, tasks: Sequence[str]) -> np.ndarray | None:
    """(runs x tasks) matrix of ``value`` over complete runs, each task cut to the same run count
    (the smallest; rliable needs a rectangle). None if a task has no complete run."""
    ok = runs[(runs.method == method) & (runs.status == "complete")].dropna(subset=[value])
    columns = [ok[ok.dataset == t].sort_values("seed")[value].to_numpy() for t in tasks]
    if not columns or any(len(c) == 0 for c in columns):
        return None
    n = min(len(c) for c in columns)
    return np.stack([c[:n] for c in columns], axis=1)


def import_rliable():
    """rliable's ``library`` and ``metrics`` modules, or a RuntimeError that says why not: its
    dependency arch (< 8) fails at import under pandas 3, which pyproject.toml excludes but a
    shared environment (a GPU image, a cluster module) may bring."""
    try:
        from rliable import library, metrics
    except Exception as exc:  # arch 7 under pandas 3 raises TypeError from a pandas decorator
        raise RuntimeError(f"rliable could not be imported ({type(exc).__name__}: {exc}); this environment "
                           f"has pandas {pd.__version__}, and rliable's dependency arch<8 needs pandas<3 "
                           f"(pyproject.toml pins it): pip install 'pandas>=2,<3'") from exc
    return library, metrics


def rliable_summary(matrices: dict[str, np.ndarray], pairs: Sequence[tuple[str, str]] = (),
                    reps: int = 2000, seed: int = 0) -> dict:
    """IQM and optimality gap (scores on the 0-1 scale) with 95% stratified bootstrap CIs, and
    P(X > Y) for each pair; seeded per method and per pair, so an interval depends only on its
    own runs: adding or removing another method leaves it unchanged."""
    rly, metrics = import_rliable()
    # rliable's StratifiedBootstrap draws its indices from the global numpy RNG (not from the
    # random_state it is given), so the global state is seeded per estimate and restored afterwards.
    saved = np.random.get_state()
    try:
        return _rliable(matrices, pairs, reps, seed, rly, metrics)
    finally:
        np.random.set_state(saved)


def bootstrap_seed(seed: int, key: str) -> int:
    """A 32-bit seed for one estimate's bootstrap, from the summary's seed and the estimate's name
    (crc32, stable across processes, unlike ``hash``)."""
    return int(np.random.SeedSequence([seed, zlib.crc32(key.encode())]).generate_state(1)[0])


def _interval(rly, scores: dict, func, reps: int, seed: int, key: str):
    """rliable's point estimate and 95% CI for one entry, its bootstrap seeded from ``key``."""
    s = bootstrap_seed(seed, key)
    np.random.seed(s)
    with warnings.catch_warnings():  # arch 7 deprecates the random_state rliable passes
        warnings.simplefilter("ignore", FutureWarning)
        points, cis = rly.get_interval_estimates(scores, func, reps=reps, random_state=np.random.RandomState(s))
    return points[key], cis[key]


def _rliable(matrices, pairs, reps, seed, rly, metrics) -> dict:
    out: dict = {"aggregates": {}, "improvement": {}}
    func = lambda x: np.array([metrics.aggregate_iqm(x), metrics.aggregate_optimality_gap(x)])  # noqa: E731
    for name, m in matrices.items():
        point, ci = _interval(rly, {name: m}, func, reps, seed, name)
        out["aggregates"][name] = {
            "iqm": float(point[0]), "iqm_ci": [float(v) for v in ci[:, 0]],
            "optimality_gap": float(point[1]), "optimality_gap_ci": [float(v) for v in ci[:, 1]],
            "runs": int(m.shape[0]), "tasks": int(m.shape[1])}
    for x, y in pairs:
        if x in matrices and y in matrices and matrices[x].shape == matrices[y].shape:
            name = f"{x} > {y}"
            point, ci = _interval(rly, {name: (matrices[x], matrices[y])}, metrics.probability_of_improvement,
                                  reps, seed, name)
            out["improvement"][name] = {"p": float(np.ravel(point)[0]), "ci": [float(v) for v in np.ravel(ci)]}
    return out
