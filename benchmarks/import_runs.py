"""``python -m benchmarks.import_runs SRC``: bring complete runs made elsewhere into ``results/``.

Runs made on another machine (a cluster, a larger node, a colleague's checkout) arrive as a
results root of their own. This copies each *complete* run's record files (``spec.json``,
``config.json``, ``environment.json``, ``provenance.json``, ``curve.jsonl``, ``record.json``; not
checkpoints, logs or locks) to the same ``<preset>/<experiment>/<run_id>/`` under the destination,
and:

* never overwrites: a run already at the destination is kept as it is (``same`` when its record
  is equal, ``conflict`` when it differs), so a committed result is never replaced;
* skips runs that are not complete (partial, failed, diverged), saying which;
* skips a run that is archived at the destination (``<results>/archive/...``: a run of the same
  id with the same record, a result a later fix superseded), so importing from a checkout older
  than the archive does not bring the superseded records back; a rerun under the same id (the
  same config on fixed code) has another record and is imported;
* refuses a run that lacks one of the record files (``malformed``), naming the file;
* reports where the imported run's machine differs from the runs already in its experiment
  (torch, Python, numpy, CPU count, CUDA): the same configuration is not bit-identical across
  machines, so runs from two machines must not be paired seed by seed.

``--dry-run`` says what would happen and copies nothing.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from benchmarks import records as rec

RECORD_FILES = (rec.SPEC, rec.CONFIG, rec.ENVIRONMENT, rec.PROVENANCE, rec.CURVE, rec.RECORD)


@dataclass(frozen=True)
class Imported:
    run: str  # <preset>/<experiment>/<run_id>
    outcome: str  # imported | same | conflict | incomplete | archived | malformed
    detail: str = ""


def machine_of(run_dir: Path) -> dict:
    """What of a run's first attempt decides its numerics: versions, CPU count, CUDA, and the CPU
    model where the record names it (records from before f2acd00, 2026-11-26, do not)."""
    first = (rec.read_attempts(run_dir) or [{}])[0]
    versions = first.get("versions") or {}
    machine = {"torch": versions.get("torch"), "python": versions.get("python"), "numpy": versions.get("numpy"),
               "cpu_count": first.get("cpu_count"), "cuda": first.get("cuda")}
    return {**machine, **({"cpu_model": first["cpu_model"]} if first.get("cpu_model") else {})}


def describe_difference(theirs: dict, ours: list[dict]) -> str:
    """``key: theirs vs ours`` for each field where the imported run differs from every run here."""
    diffs = []
    for key, value in theirs.items():
        here = sorted({str(m.get(key)) for m in ours})
        if here and str(value) not in here:
            diffs.append(f"{key} {value} vs {'/'.join(here)}")
    return "; ".join(diffs)


def import_one(src_dir: Path, dst_dir: Path, dry_run: bool) -> tuple[str, str]:
    status = rec.status_of(src_dir)
    if status != "complete":  # partial (no record yet), failed or diverged: not a result to bring in
        return "incomplete", status
    missing = [name for name in RECORD_FILES if not (src_dir / name).is_file()]
    if missing:
        return "malformed", f"missing {', '.join(missing)}"
    if (dst_dir / rec.RECORD).exists():
        same = rec.read_json(dst_dir / rec.RECORD) == rec.read_json(src_dir / rec.RECORD)
        return ("same", "") if same else ("conflict", f"kept the record already at {dst_dir}")
    if not dry_run:
        dst_dir.mkdir(parents=True, exist_ok=True)
        for name in RECORD_FILES:
            shutil.copy2(src_dir / name, dst_dir / name)
    return "imported", ""


def archived_runs(root: Path) -> dict[str, list[str]]:
    """Run id -> where under ``<root>/archive/`` runs of that id are kept (superseded runs; an id
    can be in several archives, one per fix that superseded it)."""
    archive = root / "archive"
    found: dict[str, list[str]] = {}
    for p in sorted(archive.rglob(rec.SPEC)) if archive.is_dir() else ():
        found.setdefault(p.parent.name, []).append(p.parent.relative_to(root).as_posix())
    return found


def _archived_copy(src_dir: Path, dst: Path, archived: dict[str, list[str]]) -> str | None:
    """Where the run itself is archived here (a run of its id with the same record), or None. A
    rerun of an archived run on fixed code keeps the id (the config is the same) but not the
    record, and is imported."""
    places = archived.get(src_dir.name)
    if not places or not (src_dir / rec.RECORD).is_file():  # most runs: no archived id, nothing to read
        return None
    record = rec.read_json(src_dir / rec.RECORD)
    return next((kept for kept in places
                 if (dst / kept / rec.RECORD).is_file() and rec.read_json(dst / kept / rec.RECORD) == record), None)


def import_runs(src: Path | str, dst: Path | str, preset: str | None = None, experiment: str | None = None,
                dry_run: bool = False) -> list[Imported]:
    src, dst = Path(src), Path(dst)
    if not src.is_dir():
        raise FileNotFoundError(f"source results root {src} is not a directory")
    if src.resolve() == dst.resolve():
        raise ValueError(f"source and destination are the same directory: {src}")
    machines_here: dict[Path, list[dict]] = {}
    archived = archived_runs(dst)
    out = []
    for src_dir in rec.iter_run_dirs(src, preset, experiment):
        rel = src_dir.relative_to(src)
        dst_dir = dst / rel
        if not dst_dir.exists() and (kept := _archived_copy(src_dir, dst, archived)) is not None:
            out.append(Imported(str(rel), "archived", f"superseded: {kept}"))
            continue
        exp_dir = dst_dir.parent
        if exp_dir not in machines_here:  # the runs already there, before this import adds any
            machines_here[exp_dir] = [machine_of(d) for d in rec.iter_run_dirs(dst, rel.parts[0], rel.parts[1])
                                      if (d / rec.ENVIRONMENT).is_file()]
        outcome, detail = import_one(src_dir, dst_dir, dry_run)
        if outcome == "imported" and machines_here[exp_dir]:
            diff = describe_difference(machine_of(src_dir), machines_here[exp_dir])
            detail = f"another machine than this experiment's other runs: {diff}" if diff else ""
        out.append(Imported(str(rel), outcome, detail))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.import_runs", description=__doc__.split("\n\n")[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", help="results root the runs were made in (holds <preset>/<experiment>/<run_id>/)")
    p.add_argument("--results", default=str(rec.DEFAULT_ROOT), help="destination results root (default results/)")
    p.add_argument("--preset", help="only this preset")
    p.add_argument("--experiment", help="only this experiment")
    p.add_argument("--dry-run", action="store_true", help="say what would happen; copy nothing")
    a = p.parse_args(argv)
    try:
        rows = import_runs(a.source, a.results, a.preset, a.experiment, a.dry_run)
    except (FileNotFoundError, ValueError) as exc:
        p.error(str(exc))
    for r in rows:
        label = "to import" if a.dry_run and r.outcome == "imported" else r.outcome
        print(f"{label:<10} {r.run}" + (f"  ({r.detail})" if r.detail else ""))
    counts = Counter(r.outcome for r in rows)
    verb = "would import" if a.dry_run else "imported"
    print(f"{verb} {counts['imported']}; already here {counts['same']}; conflicts kept {counts['conflict']}; "
          f"skipped incomplete {counts['incomplete']}; skipped archived {counts['archived']}; "
          f"malformed {counts['malformed']} (of {len(rows)} runs)")
    return 1 if counts["conflict"] or counts["malformed"] else 0


if __name__ == "__main__":
    sys.exit(main())
