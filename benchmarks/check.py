"""``python -m benchmarks.check``: aggregated results against expected ranges; non-zero on a miss.

Ranges live in ``benchmarks/expected/<preset>.json``::

    {"rules": [{"experiment": "table1", "methods": ["odt"], "datasets": "*",
                "metric": "final_score", "min": -10, "max": 40, "why": "..."}]}

A rule applies to every (method, dataset) cell of its experiment that matches; the cell's
value is the mean over its complete runs of ``metric``, one of

* a record value: ``final_score``, ``offline_score``, ``final_return``, ``offline_return``;
* ``drop:<column>``: first minus last value of a logged curve column over the evaluation rows
  (e.g. ``drop:nll`` > 0 means the loss fell: the method learned something).

A rule may instead carry a measured reference, ``"mean"``, ``"sd"`` and ``"n"`` (the mean,
standard deviation and run count of the runs it was derived from) with ``"z"`` and ``"slack"``:
the range is then mean +- (z * sd * sqrt(1/n + 1/m) + slack), where m is the number of runs in
the checked cell, so a cell checked with fewer seeds gets a wider range (a two-sample test at
z standard errors). ``python -m benchmarks.check --preset cpu --derive FILE`` writes such rules
for every complete (method, dataset) cell of ``table1`` in the results tree.

The check fails, naming each cell, when a value is outside [min, max] or not finite, when a
run of a checked experiment failed or diverged, and when a rule matches no results at all (so
it cannot pass vacuously). Exit code: 0 all in range, 1 something out of range or failed,
2 bad arguments or no expected-ranges file.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from benchmarks import aggregate as agg
from benchmarks import records as rec
from odt.checkpoint import atomic_write_bytes
from odt.config import PRESETS

EXPECTED_DIR = Path(__file__).resolve().parent / "expected"
RECORD_METRICS = ("final_score", "offline_score", "final_return", "offline_return")


@dataclass
class Finding:
    ok: bool
    text: str


def _matches(value: str, pattern) -> bool:
    patterns = [pattern] if isinstance(pattern, str) else list(pattern)
    return any(fnmatch.fnmatch(value, p) for p in patterns)


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


def check(root: Path | str, preset: str, expected: dict, experiments: list[str] | None = None) -> list[Finding]:
    findings: list[Finding] = []
    rules = [r for r in expected["rules"] if not experiments or r["experiment"] in experiments]
    for experiment in sorted({r["experiment"] for r in rules}):
        runs = agg.load_runs(root, preset, experiment)
        for _, r in runs[runs.status.isin(["failed", "diverged"])].iterrows():
            findings.append(Finding(False, f"{experiment}/{r.run_id}: run {r.status}: {r.error} ({r.path})"))
    for rule in rules:
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
            findings.append(Finding(False, f"{name}: no complete runs match methods={rule.get('methods', '*')} "
                                           f"datasets={rule.get('datasets', '*')} (rule would pass vacuously)"))
            continue
        for (method, dataset), ids in cells.items():
            v = float(values.reindex(ids).to_numpy(dtype=float).mean())  # NaN if any run's value is
            lo, hi = rule_range(rule, len(ids))
            cell = f"{exp} {method} {dataset} {rule['metric']} = {v:.3f} (mean of {len(ids)} runs)"
            if not math.isfinite(v):
                findings.append(Finding(False, f"{cell}: not finite"))
            elif not lo <= v <= hi:
                findings.append(Finding(False, f"{cell}: outside [{lo:.3g}, {hi:.3g}]" + (f" ({rule['why']})" if rule.get("why") else "")))
            else:
                findings.append(Finding(True, f"{cell}: ok"))
    return findings


def rule_range(rule: dict, runs_in_cell: int) -> tuple[float, float]:
    """[min, max] of a rule for a cell of ``runs_in_cell`` runs (see the module docstring)."""
    if "mean" not in rule:
        return rule.get("min", -math.inf), rule.get("max", math.inf)
    half = (rule.get("z", 3.0) * rule["sd"] * math.sqrt(1.0 / rule["n"] + 1.0 / max(runs_in_cell, 1))
            + rule.get("slack", 0.0))
    return rule["mean"] - half, rule["mean"] + half


# The record values each method's cells are guarded by: offline-only methods have one score,
# methods with both phases two.
DERIVED_METRICS = {"dt": ("final_score",), "odt-offline": ("final_score",), "sac": ("final_score",),
                   "odt": ("offline_score", "final_score"), "iql": ("offline_score", "final_score")}


def derive_rules(root: Path | str, preset: str, experiment: str = "table1", z: float = 3.0,
                 slack: float = 2.0, min_runs: int = 3) -> list[dict]:
    """One measured-reference rule per (method, dataset, metric) cell with >= min_runs complete runs."""
    runs = agg.load_runs(root, preset, experiment)
    runs = runs[runs.status == "complete"]
    rules = []
    for (method, dataset), cell in runs.groupby(["method", "dataset"]):
        for metric in DERIVED_METRICS.get(method, ("final_score",)):
            v = cell[metric].dropna().to_numpy(dtype=float)
            if len(v) < min_runs:
                continue
            rules.append({"experiment": experiment, "methods": [method], "datasets": [dataset],
                          "metric": metric, "mean": round(float(v.mean()), 3),
                          "sd": round(float(v.std(ddof=1)), 3), "n": int(len(v)), "z": z, "slack": slack,
                          "why": f"measured: {len(v)} runs at the {preset} preset ({', '.join(str(s) for s in sorted(cell.seed))})"})
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
    p.add_argument("--expected", type=Path, default=None, help="ranges file (default benchmarks/expected/<preset>.json)")
    p.add_argument("--experiments", nargs="*", default=None, help="only rules of these experiments")
    p.add_argument("-v", "--verbose", action="store_true", help="also print the cells that pass")
    p.add_argument("--derive", type=Path, default=None, metavar="FILE",
                   help="instead of checking, write measured-reference rules for every table1 cell of the "
                        "results (with >= 3 complete runs) into FILE, keeping FILE's other rules")
    args = p.parse_args(argv)
    if args.preset not in PRESETS:
        print(f"error: unknown preset {args.preset!r}; known: {', '.join(PRESETS)}", file=sys.stderr)
        return 2
    if args.derive is not None:
        return _write_derived(args.derive, args.results, args.preset)
    try:
        expected = load_expected(args.preset, args.expected)
    except (FileNotFoundError, json.JSONDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    findings = check(args.results, args.preset, expected, args.experiments)
    bad = [f for f in findings if not f.ok]
    for f in findings:
        if not f.ok or args.verbose:
            print(("OK   " if f.ok else "FAIL ") + f.text)
    print(f"check [{args.preset}]: {len(findings) - len(bad)} ok, {len(bad)} failed")
    return 1 if bad else 0


def _write_derived(path: Path, root: Path, preset: str) -> int:
    derived = derive_rules(root, preset)
    if not derived:
        print(f"error: no table1 cell under {root} at preset {preset!r} has 3 complete runs", file=sys.stderr)
        return 2
    existing = json.loads(path.read_text()) if path.exists() else {"rules": []}
    kept = [r for r in existing.get("rules", []) if "mean" not in r]  # hand-written rules stay
    atomic_write_bytes(path, (json.dumps({**existing, "rules": kept + derived}, indent=1) + "\n").encode())
    print(f"wrote {len(derived)} measured rules (+{len(kept)} kept) to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
