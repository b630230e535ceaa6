"""Golden records: a short seeded run of every method, kept small under ``tests/golden/``, and the
check that the code still computes it (``tests/test_golden_records.py`` runs the check).

A record is one run through the harness (``benchmarks.job.run_one``: the method's config at the
``smoke`` preset on the CPU, the generated smoke dataset, seed 1, one torch thread): its curve
rows (scores, returns, losses, lambda or alpha, updates, samples; clock fields left out), a
digest and sums of its final parameters, its data's content digest (the loader's
``content_sha256``), its config, and the machine that made it.

    python -m scripts.golden check [METHOD ...]                  # run, compare, print the distance
    python -m scripts.golden write METHOD ... --reason "why"     # (re)write records; --force to replace
    python -m scripts.golden measure [METHOD ...]                # how far other math paths move them

On the machine that made a record (same CPU vendor, family and model, same kernel level and
library versions, see ``machine()``) a run must reproduce it bit for bit; elsewhere within
``TOLERANCE`` (measured as ``measure`` does: docs/maintaining.md). Add a method with one line in
``METHODS`` and its record (``write <method> --reason ...``).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import random
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
GOLDEN_DIR = REPO / "tests" / "golden"

# The methods with a golden record: one line each (and its file, written by ``write``).
METHODS = (
    "odt",
    "odt-control",
    "dt",
    "iql",
    "sac",
    "bc",
)
DATASET, PRESET, SEED, THREADS = "hopper-medium", "smoke", 1, 1
# The global RNGs are set to this before each run: a run must not depend on them, and a seed
# other than the run's own makes a code path that forgets to seed (or seeds with 0) show.
AMBIENT_SEED = 0
# Largest scaled difference allowed on another machine (see ``distance``): an order of magnitude
# above what other math paths of one machine move a record, an order below the smallest formula
# change measured to move one past it (``measure``; the numbers are in docs/maintaining.md).
TOLERANCE = 1e-4
# Curve fields that measure the clock, not the computation: never compared.
CLOCK_FIELD = re.compile(r"time|seconds|_per_s$|(^|_)(eta|rate)$")
# The fields of ``machine()`` that must all match for bit-for-bit comparison.
IDENTITY = ("cpu_vendor", "cpu_family", "cpu_model", "cpu_model_name", "cpu_flags", "machine", "aten_cpu_capability",
            "MKL_CBWR", "ATEN_CPU_CAPABILITY", "python", "torch", "numpy", "mujoco", "gymnasium", "threads")


class GoldenError(RuntimeError):
    """A golden file is missing, or would be overwritten without --force."""


# ----- the machine ----------------------------------------------------------------------------
def _cpuinfo() -> dict[str, str]:
    fields: dict[str, str] = {}
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if not line.strip():
                break  # the first processor is enough
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
    return fields


def machine() -> dict[str, Any]:
    """What the numbers of a run on this CPU depend on besides the code: the CPU model, the
    kernel levels the math libraries pick on it (or are told to), the library versions, threads."""
    import gymnasium
    import mujoco
    import numpy
    import torch

    cpu = _cpuinfo()
    return {
        "cpu_vendor": cpu.get("vendor_id", platform.processor() or "unknown"),
        "cpu_family": cpu.get("cpu family"), "cpu_model": cpu.get("model"),
        "cpu_model_name": cpu.get("model name"), "machine": platform.machine(),
        # the instruction sets the math libraries dispatch on (a hypervisor may hide some)
        "cpu_flags": hashlib.sha256(" ".join(sorted(cpu.get("flags", "").split())).encode()).hexdigest()[:16],
        "aten_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "MKL_CBWR": os.environ.get("MKL_CBWR"), "ATEN_CPU_CAPABILITY": os.environ.get("ATEN_CPU_CAPABILITY"),
        "python": platform.python_version(), "torch": torch.__version__, "numpy": numpy.__version__,
        "mujoco": mujoco.__version__, "gymnasium": gymnasium.__version__, "threads": torch.get_num_threads(),
    }


def identity_differences(made_by: dict, here: dict) -> list[str]:
    return [f"{k}: {made_by.get(k)!r} there, {here.get(k)!r} here" for k in IDENTITY if made_by.get(k) != here.get(k)]


# ----- one golden run ---------------------------------------------------------------------------
@contextlib.contextmanager
def _environ(**values: str) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _parameters(state: Any) -> Iterator[Any]:
    """Every float32 tensor of an agent's state outside its optimizers' states (a torch optimizer
    state dict is told by its ``state`` and ``param_groups``): weights, biases, target networks,
    log-stds. Names and nesting are not looked at, so a reshaped state keeps its parameters."""
    import torch

    if isinstance(state, torch.Tensor):
        if state.dtype == torch.float32:
            yield state
    elif isinstance(state, dict):
        if "state" in state and "param_groups" in state:
            return
        for value in state.values():
            yield from _parameters(value)
    elif isinstance(state, (list, tuple)):
        for value in state:
            yield from _parameters(value)


def parameter_summary(state: dict) -> dict[str, Any]:
    """A digest of the parameters' values as a multiset (sorted, -0.0 as 0.0: independent of names,
    order and layout) and their float64 sums, which another machine compares within tolerance."""
    import numpy as np

    tensors = list(_parameters(state))
    values = np.concatenate([t.detach().cpu().reshape(-1).numpy() for t in tensors]) if tensors else np.zeros(0, np.float32)
    values = np.sort(values.astype(np.float32) + np.float32(0.0))
    wide = values.astype(np.float64)
    return {"digest": hashlib.sha256(values.tobytes()).hexdigest(),
            "elements": int(values.size), "sum": float(wide.sum()), "abs_sum": float(np.abs(wide).sum()),
            "sq_sum": float((wide * wide).sum())}


def _rows(curve: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if not CLOCK_FIELD.search(k)} for row in curve]


def _on_the_cpu(method: str) -> tuple[tuple[str, str], ...]:
    """``device=cpu`` where the method's config has a device (its ``auto`` would take a GPU)."""
    from benchmarks.methods import method_config
    from rlbase.config import to_dict

    return (("device", "cpu"),) if "device" in to_dict(method_config(method, DATASET, PRESET, SEED)) else ()


def run_record(method: str, workdir: Path) -> dict[str, Any]:
    """Run ``method``'s golden run under ``workdir`` (its smoke dataset in ``workdir/data``, made
    there if absent) and return its record."""
    import numpy as np
    import torch

    from benchmarks import job
    from benchmarks import records as rec
    from benchmarks.datasets.loading import content_sha256
    from benchmarks.experiments import RunSpec
    from rlbase.checkpoint import CheckpointManager

    workdir = Path(workdir)
    with _environ(ODT_DATA_DIR=str(workdir / "data")):
        torch.set_num_threads(THREADS)
        torch.manual_seed(AMBIENT_SEED)
        np.random.seed(AMBIENT_SEED)
        random.seed(AMBIENT_SEED)
        spec = RunSpec("golden", method, DATASET, SEED, PRESET, _on_the_cpu(method))
        root = workdir / "runs" / method
        job.run_one(spec, root, threads=THREADS, progress=False)
        directory = rec.run_dir(root, spec)
        final = CheckpointManager(directory / rec.CHECKPOINTS).load_latest()
        if final.state is None:
            raise GoldenError(f"{method}: the run left no readable checkpoint in {directory / rec.CHECKPOINTS}")
        record = {
            "method": method, "dataset": DATASET, "preset": PRESET, "seed": SEED,
            "made_by": machine(),
            "data": content_sha256(job.load_data(spec).trajectories),
            "rows": _rows(rec.read_curve(directory / rec.CURVE)),
            "parameters": parameter_summary(final.state["agent"]),
            "config": rec.read_json(directory / rec.CONFIG),
        }
    return record


# ----- comparing ------------------------------------------------------------------------------
def _numbers(value: Any) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, list):
        return [x for v in value for x in _numbers(v)]
    return []


def _shape(value: Any) -> Any:
    """A value with its numbers blanked: what must match exactly even within tolerance."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return "<number>"
    if isinstance(value, list):
        return [_shape(v) for v in value]
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    return repr(value)


def structure_differences(golden: dict, fresh: dict) -> list[str]:
    """Rows missing or added, fields no longer recorded, phases, flags or list lengths changed."""
    g, f = golden["rows"], fresh["rows"]
    out = [f"{len(g)} curve rows recorded, {len(f)} now"] if len(g) != len(f) else []
    for i, (a, b) in enumerate(zip(g, f)):
        for k in a:
            if k not in b:
                out.append(f"row {i}: field {k!r} no longer recorded")
            elif _shape(a[k]) != _shape(b[k]):
                out.append(f"row {i} {k}: {a[k]!r} recorded, {b[k]!r} now")
    if golden["parameters"]["elements"] != fresh["parameters"]["elements"]:
        out.append(f"parameters: {golden['parameters']['elements']} values recorded, "
                   f"{fresh['parameters']['elements']} now")
    return out


def distance(golden: dict, fresh: dict) -> dict[str, float]:
    """Per curve field, the largest |now - recorded| over its rows (and list entries), divided by
    the field's largest recorded |value| (so near-zero values are judged on their field's scale);
    for the parameters, each sum's change divided by the sum of |values|. Rows are paired in
    order; fields missing on either side are ``structure_differences``' business."""
    scale: dict[str, float] = {}
    for row in golden["rows"]:
        for k, v in row.items():
            scale[k] = max([scale.get(k, 0.0), *map(abs, _numbers(v))])
    out: dict[str, float] = {}
    for a, b in zip(golden["rows"], fresh["rows"]):
        for k in a.keys() & b.keys():
            x, y = _numbers(a[k]), _numbers(b[k])
            if len(x) != len(y) or not x:
                continue
            d = max(abs(p - q) for p, q in zip(x, y))
            d = d / scale[k] if scale[k] > 0 else d
            out[k] = max(out.get(k, 0.0), d)
    gp, fp = golden["parameters"], fresh["parameters"]
    norm = max(gp["abs_sum"], 1e-30)
    for k in ("sum", "abs_sum"):
        out[f"parameters.{k}"] = abs(fp[k] - gp[k]) / norm
    out["parameters.sq_sum"] = abs(fp["sq_sum"] - gp["sq_sum"]) / max(gp["sq_sum"], 1e-30)
    return out


def exact_differences(golden: dict, fresh: dict, limit: int = 8) -> list[str]:
    """Every recorded value that is not bit for bit the same now (the first ``limit``)."""
    out = []
    for i, (a, b) in enumerate(zip(golden["rows"], fresh["rows"])):
        out += [f"row {i} ({a.get('phase')}, {a.get('updates')} updates) {k}: {a[k]!r} recorded, {b.get(k)!r} now"
                for k in a if b.get(k) != a[k]]
    if golden["parameters"]["digest"] != fresh["parameters"]["digest"]:
        out.append(f"parameters: digest {golden['parameters']['digest'][:12]} recorded, "
                   f"{fresh['parameters']['digest'][:12]} now (sum {golden['parameters']['sum']!r} -> "
                   f"{fresh['parameters']['sum']!r})")
    return out[:limit] + ([f"... {len(out) - limit} more"] if len(out) > limit else [])


def config_differences(golden: dict, fresh: dict) -> list[str]:
    from benchmarks.records import flat_fields
    a, b = flat_fields(golden["config"]), flat_fields(fresh["config"])
    return [f"config {k}: {a.get(k, '<absent>')!r} recorded, {b.get(k, '<absent>')!r} now"
            for k in sorted(a.keys() | b.keys()) if a.get(k) != b.get(k)]


def verdict(golden: dict, fresh: dict, as_elsewhere: bool = False) -> tuple[str, list[str]]:
    """("exact" | "tolerance", problems): bit for bit where this machine is the one that made the
    record (unless ``as_elsewhere``), else every ``distance`` within TOLERANCE; the structure
    must match either way."""
    problems = structure_differences(golden, fresh)
    if not as_elsewhere and not identity_differences(golden["made_by"], fresh["made_by"]):
        return "exact", problems + exact_differences(golden, fresh)
    far = {k: v for k, v in distance(golden, fresh).items() if not v <= TOLERANCE}
    problems += [f"{k}: moved {v:.3g} of its scale (tolerance {TOLERANCE:g})"
                 for k, v in sorted(far.items(), key=lambda kv: -kv[1])]
    return "tolerance", problems


def explain(method: str, golden: dict, fresh: dict, mode: str, problems: list[str]) -> str:
    """A failure message: what moved, what else differs (config, data, machine), what to do."""
    lines = [f"{method}: the golden run no longer reproduces tests/golden/{method}.json ({mode} comparison):",
             *(f"  {p}" for p in problems)]
    notes = config_differences(golden, fresh)
    if golden["data"] != fresh["data"]:
        notes.append(f"the smoke dataset differs (digest {golden['data'][:12]} recorded, {fresh['data'][:12]} now)")
    if mode == "tolerance":
        notes += [f"machine {d}" for d in identity_differences(golden["made_by"], fresh["made_by"])]
    lines += [f"  (also: {n})" for n in notes]
    lines.append(f"If this commit must change these numbers, regenerate in a commit of its own saying why: "
                 f"python -m scripts.golden write {method} --force --reason '...'")
    return "\n".join(lines)


# ----- files ---------------------------------------------------------------------------------
def golden_path(method: str, directory: Path = GOLDEN_DIR) -> Path:
    return Path(directory) / f"{method}.json"


def read_golden(method: str, directory: Path = GOLDEN_DIR) -> dict:
    path = golden_path(method, directory)
    if not path.exists():
        raise GoldenError(f"{path}: no golden record for {method!r}; write it with "
                          f"python -m scripts.golden write {method} --reason '...'")
    return json.loads(path.read_text())


def write_golden(record: dict, reason: str, force: bool = False, directory: Path = GOLDEN_DIR) -> Path:
    path = golden_path(record["method"], directory)
    if path.exists() and not force:
        raise GoldenError(f"{path} exists; replacing a golden record needs --force (and a commit of its own "
                          "that says which number had to change and why)")
    if not reason.strip():
        raise GoldenError("--reason must say why this record is (re)written")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**record, "reason": reason}, indent=1, sort_keys=True) + "\n")
    return path


# ----- command line ---------------------------------------------------------------------------
MATH_PATHS = {  # other floating-point code paths on this machine, no code change (measure)
    "repeat": {},
    "MKL_CBWR=COMPATIBLE": {"MKL_CBWR": "COMPATIBLE"},
    "MKL_CBWR=AVX2,ATEN=avx2": {"MKL_CBWR": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"},
    "ATEN=default": {"ATEN_CPU_CAPABILITY": "default"},
}


def _record_in_child(methods: list[str], env: dict[str, str], workdir: Path) -> dict[str, dict]:
    """Golden runs in a fresh process with ``env`` added (math settings are read at first use)."""
    out = workdir / "records.json"
    subprocess.run([sys.executable, __file__, "record", *methods, "--out", str(out), "--workdir", str(workdir)],
                   env={**os.environ, **env}, check=True, cwd=REPO, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def _check(methods: list[str], as_elsewhere: bool = False) -> int:
    failed = 0
    with tempfile.TemporaryDirectory(prefix="golden-") as tmp:
        for method in methods:
            golden, fresh = read_golden(method), run_record(method, Path(tmp))
            mode, problems = verdict(golden, fresh, as_elsewhere)
            worst = max(distance(golden, fresh).items(), key=lambda kv: kv[1])
            print(f"{method}: {mode} comparison, {'FAIL' if problems else 'ok'}; largest scaled "
                  f"difference {worst[1]:.3g} ({worst[0]})")
            if problems:
                failed += 1
                print(explain(method, golden, fresh, mode, problems))
    return 1 if failed else 0


def _measure(methods: list[str]) -> int:
    goldens = {m: read_golden(m) for m in methods}
    print(f"{'math path':28s} " + " ".join(f"{m:>12s}" for m in methods))
    for label, env in MATH_PATHS.items():
        with tempfile.TemporaryDirectory(prefix="golden-") as tmp:
            fresh = _record_in_child(methods, env, Path(tmp))
        cells = []
        for m in methods:
            worst = max(distance(goldens[m], fresh[m]).values())
            bad = structure_differences(goldens[m], fresh[m])
            cells.append(f"{worst:12.3g}" if not bad else f"{'structure':>12s}")
        print(f"{label:28s} " + " ".join(cells))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m scripts.golden", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="run the golden runs and compare them with their records")
    c.add_argument("methods", nargs="*", default=list(METHODS))
    c.add_argument("--as-elsewhere", action="store_true",
                   help="compare within TOLERANCE, as on a machine other than the one that made the records")
    w = sub.add_parser("write", help="run and (re)write golden records")
    w.add_argument("methods", nargs="+")
    w.add_argument("--reason", required=True, help="why: stored in the record (e.g. 'first records')")
    w.add_argument("--force", action="store_true", help="replace existing records")
    m = sub.add_parser("measure", help="distances of the golden runs under other math paths of this machine")
    m.add_argument("methods", nargs="*", default=list(METHODS))
    r = sub.add_parser("record", help=argparse.SUPPRESS)  # one child process of measure
    r.add_argument("methods", nargs="+")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--workdir", type=Path, required=True)
    args = p.parse_args(argv)
    unknown = [x for x in args.methods if x not in METHODS]
    if unknown:
        print(f"error: no golden run for {', '.join(unknown)}; methods: {', '.join(METHODS)} "
              "(add a method to METHODS in scripts/golden.py)", file=sys.stderr)
        return 2
    try:
        if args.command == "check":
            return _check(args.methods, args.as_elsewhere)
        if args.command == "measure":
            return _measure(args.methods)
        if args.command == "record":
            args.out.write_text(json.dumps({x: run_record(x, args.workdir) for x in args.methods}))
            return 0
        if not args.force:  # refuse before running anything
            for x in args.methods:
                if golden_path(x).exists():
                    raise GoldenError(f"{golden_path(x)} exists; replacing a golden record needs --force")
        with tempfile.TemporaryDirectory(prefix="golden-") as tmp:
            for x in args.methods:
                print(f"wrote {write_golden(run_record(x, Path(tmp)), args.reason, args.force)}")
        return 0
    except GoldenError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    sys.exit(main())
