"""``python -m studies.init_comparison.analysis``: what the initialisation fix of 80c856e (2026-11-26) changed, run by run.

``PROTOCOL-official-init-cpu.md`` pre-registers two comparisons, both paired by seed between a
run of the fixed code and the archived run of the same id made before the fix (same seed, data,
preset and config; only the model's initialisation differs):

* **I1** = new − old end-of-pretraining score of ``odt`` on Table 1's hopper-medium row;
* **I2** = new − old final score of the same runs.

The same paired change is printed, as description (an interval, no verdict), for every other
(method, dataset) cell that has runs on both sides: the end-of-pretraining score where the
method has an online phase (``odt``, ``odt-control``), the final score always. Each change comes
with a 95% paired t-interval over seeds and every seed's own difference.

Verdicts (``PROTOCOL-reanalysis.md``): I1 is the primary (the comparison the protocol names
first), read alone at 0.05; I2 is its family of one, read with Holm's correction (which for one
member is none). Both claim "the fix raised the score" (> 0), with an equivalence margin of 5
normalised points: supports, contradicts, equivalent or inconclusive.

The archived runs live in ``<results>/archive/<preset>/<archive>/<experiment>/`` (moved there by
the session that found the defect); current runs in ``<results>/<preset>/<experiment>/``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from benchmarks import aggregate as agg
from benchmarks import records as rec
from benchmarks.reproduction import (
    INTERVAL_METHOD,
    Estimate,
    Registered,
    analysis_parser,
    combination_estimate,
    complete_runs,
    emit,
    margin_for,
    per_seed_difference,
    read_protocol,
)

DEFAULT_ARCHIVE = "before-official-init"
ONLINE_METHODS = ("odt", "odt-control")  # a score after pretraining and one after finetuning
METHOD_ORDER = ("odt", "odt-control", "odt-offline", "dt")
PROTOCOL_LABELS = {("table1", "odt", "hopper-medium", "offline_score"): "I1",
                   ("table1", "odt", "hopper-medium", "final_score"): "I2"}
VALUE_NAMES = {"offline_score": "end of pretraining", "final_score": "final"}


def per_seed_change(new: pd.DataFrame, old: pd.DataFrame, method: str, dataset: str, value: str) -> pd.Series:
    """Seed -> new − old ``value`` for the complete runs of (method, dataset) on both sides. Where
    the frames carry each run's ``config`` (see :func:`with_configs`), a seed pairs only if its
    two configs are identical: the comparison is of the code's initialisation, so a run whose
    preset changed since (DT's cpu rate, 0fed211 of 2026-11-26) has no pair."""
    a, b = complete_runs(new, method, dataset), complete_runs(old, method, dataset)
    diffs = per_seed_difference(a, b, value)
    if "config" in a and "config" in b:
        ca, cb = a.set_index("seed").config, b.set_index("seed").config
        diffs = diffs[[same_config(ca.get(seed), cb.get(seed)) for seed in diffs.index]]
    return diffs.sort_index()


def same_config(a: str | None, b: str | None) -> bool:
    """Whether two stored configs agree on every field both have (fields added to the config
    since the older run, at their defaults, do not count)."""
    if a is None or b is None:
        return False
    fa, fb = rec.flat_fields(json.loads(a)), rec.flat_fields(json.loads(b))
    return all(fa[k] == fb[k] for k in fa.keys() & fb.keys())


def with_configs(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with a ``config`` column: each run's config.json, as stored (None if unreadable)."""
    def read(path: str) -> str | None:
        try:
            return (Path(path) / "config.json").read_text()
        except OSError:
            return None
    return runs.assign(config=runs.path.map(read))


PRIMARY = "I1"


def reading(e: Estimate) -> str:
    """A description row's reading: none (the protocol registers only I1 and I2)."""
    return "no paired seeds" if e.n == 0 else "described"


def cells(new: pd.DataFrame, old: pd.DataFrame) -> list[tuple[str, str, str]]:
    """(method, dataset, value) for every cell with runs on both sides, ODT first (a cell whose
    complete runs share no seed reads "no paired seeds")."""
    both = set(zip(new.method, new.dataset)) & set(zip(old.method, old.dataset))
    rank = {m: i for i, m in enumerate(METHOD_ORDER)}
    out = []
    for method, dataset in sorted(both, key=lambda md: (rank.get(md[0], len(rank)), md[0], md[1])):
        values = ("offline_score", "final_score") if method in ONLINE_METHODS else ("final_score",)
        out += [(method, dataset, v) for v in values]
    return out


def report_lines(new: pd.DataFrame, old: pd.DataFrame, experiment: str) -> list[str]:
    """The markdown table of paired changes (new − old), one row per (method, dataset, value);
    the protocol's I1 and I2 are labelled and read as such, every other row is description."""
    lines = ["| comparison | method | dataset | score | new − old [95% CI] | verdict | per seed (new − old) |",
             "|---|---|---|---|---|---|---|"]
    rows, registered = [], []
    for method, dataset, value in cells(new, old):
        diffs = per_seed_change(new, old, method, dataset, value)
        e = combination_estimate([(diffs.to_numpy(), 1.0)])
        label = PROTOCOL_LABELS.get((experiment, method, dataset, value), "description")
        rows.append((label, method, dataset, value, e, diffs))
        if label != "description":
            registered.append(Registered(label, e, +1, margin_for(dataset), label == PRIMARY,
                                         None if e.n else "no paired seeds"))
    verdicts = read_protocol(registered)
    for label, method, dataset, value, e, diffs in rows:
        seeds = ", ".join(f"s{s} {d:+.1f}" for s, d in diffs.items()) or "—"
        word = verdicts[label].text() if label in verdicts else reading(e)
        lines.append(f"| {label} | `{method}` | {dataset} | {VALUE_NAMES[value]} | {e.text()} | {word} | {seeds} |")
    return lines


def summary_text(root: Path, preset: str, experiment: str, archive: str, seeds: list[int] | None = None) -> str:
    new = with_configs(agg.load_runs(root, preset, experiment))
    old = with_configs(agg.load_runs(root / "archive", preset, f"{archive}/{experiment}"))
    if seeds is not None:
        new, old = new[new.seed.isin(seeds)], old[old.seed.isin(seeds)]
    head = [f"# The initialisation fix, run by run: `{experiment}`, preset `{preset}`", "",
            f"New − old score, paired by seed: current runs in `{root}/{preset}/{experiment}/` against the "
            f"archived runs of the same ids in `{root}/archive/{preset}/{archive}/{experiment}/`. I1 and I2 are "
            "pre-registered in `PROTOCOL-official-init-cpu.md`; the other rows describe. A seed pairs only "
            "where both runs have the same config.json (only the code's initialisation differs): a cell "
            "whose preset changed since, such as `dt` after its cpu rate became 3e-4 (0fed211, 2026-11-26), reads "
            "'no paired seeds'. "
            f"{INTERVAL_METHOD}. I1 (primary) and I2 (its family, Holm) claim the fix raised the score "
            "(> 0), with equivalence against ±5 normalised points (`PROTOCOL-reanalysis.md`); "
            "description rows get no verdict.", ""]
    if new.empty or old.empty:
        return "\n".join(head + [f"No runs to compare ({'current' if new.empty else 'archived'} side empty)."]) + "\n"
    return "\n".join(head + report_lines(new, old, experiment)) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = analysis_parser("python -m studies.init_comparison.analysis", __doc__, "paper_tables/init_comparison_cpu.md")
    p.add_argument("--experiment", default="table1", help="the experiment whose runs are compared (default: table1)")
    p.add_argument("--archive", default=DEFAULT_ARCHIVE,
                   help=f"the archive under <results>/archive/<preset>/ holding the old runs (default: {DEFAULT_ARCHIVE})")
    args = p.parse_args(argv)
    archived = args.results / "archive" / args.preset / args.archive / args.experiment
    if not archived.is_dir():
        p.error(f"--archive: no archived runs at {archived}")
    return emit(summary_text(args.results, args.preset, args.experiment, args.archive, args.seeds), args.out)


if __name__ == "__main__":
    raise SystemExit(main())
