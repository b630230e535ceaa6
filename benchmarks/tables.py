"""Tables generated from the results tree, in Markdown and LaTeX, under ``paper_tables/<preset>/``
(see :mod:`benchmarks.outputs` for where other results roots write).

* Table 1: mean +- std (population std, ddof=0) over seeds per cell, the deltas (online minus
  offline, per method), sums per block (locomotion, AntMaze) where every row of the block has
  a number, the best 0.2m cell and the best delta of each row in bold; then the paper's own
  numbers (``benchmarks/reference/table1.json``) and our-minus-paper; then rliable's IQM and
  optimality gap with stratified bootstrap CIs and P(ODT 0.2m > IQL 0.2m). Missing cells are
  shown as missing (an em dash), never as zero; a cell whose runs all failed says ``failed``.
* ``table_rtg``: appendix D's g_online = 2g* against g*, ours and the paper's.
* any other experiment: final score per dataset x variant (x method).
* the hyperparameter tables of appendix C, generated from ``odt.config`` and compared cell by
  cell with the transcription in ``benchmarks/reference/hyperparameters.json``.

``python -m benchmarks.tables [experiment ...] --preset smoke`` regenerates them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from benchmarks import aggregate as agg
from benchmarks import outputs, reference
from benchmarks import records as rec
from benchmarks.experiments import (
    ANTMAZE,
    EXPERIMENTS,
    LOCOMOTION,
    TABLE1_DATASETS,
    TABLE1_MIN_SEEDS,
)
from rlbase.checkpoint import atomic_write_bytes
from rlbase.presets import PRESETS

MISSING_MD, MISSING_TEX = "—", "--"


@dataclasses.dataclass(frozen=True)
class Column:
    key: str
    label: str
    tex: str
    method: str | None = None  # a measured column: method and record value
    value: str = "final_score"
    delta_of: tuple[str, str] | None = None  # a delta column: (online key, offline key)


TABLE1_COLUMNS = [
    Column("dt", "DT", "DT", "dt"),
    Column("odt_offline", "ODT (offline)", "ODT (offline)", "odt-offline"),
    Column("odt_online", "ODT (0.2m)", "ODT (0.2m)", "odt"),
    Column("delta_odt", "δ ODT", r"$\delta_{\mathrm{ODT}}$", delta_of=("odt_online", "odt_offline")),
    Column("iql_offline", "IQL (offline)", "IQL (offline)", "iql", "offline_score"),
    Column("iql_online", "IQL (0.2m)", "IQL (0.2m)", "iql"),
    Column("delta_iql", "δ IQL", r"$\delta_{\mathrm{IQL}}$", delta_of=("iql_online", "iql_offline")),
    Column("sac", "SAC (0.2m)", "SAC (0.2m)", "sac"),
    # not in the paper: the no-new-data control, and ODT's gain over it (what online data adds)
    Column("odt_control", "ODT control (0.2m)", "ODT control (0.2m)", "odt-control"),
    Column("odt_vs_control", "ODT − control", r"ODT $-$ control", delta_of=("odt_online", "odt_control")),
    # not in the paper: behaviour cloning, what each dataset supports without RL
    Column("bc", "BC", "BC", "bc"),
]
ONLINE_KEYS = ("odt_online", "iql_online", "sac")
DELTA_KEYS = ("delta_odt", "delta_iql")
BLOCKS = (("locomotion", [d for d in TABLE1_DATASETS if d in LOCOMOTION]),
          ("antmaze", [d for d in TABLE1_DATASETS if d in ANTMAZE]))


@dataclasses.dataclass
class Cell:
    mean: float | None = None
    std: float | None = None
    n: int = 0
    failed: int = 0
    partial: int = 0

    @property
    def present(self) -> bool:
        return self.mean is not None


def measure(runs: pd.DataFrame, method: str, dataset: str, value: str) -> Cell:
    sel = runs[(runs.method == method) & (runs.dataset == dataset)]
    ok = sel[sel.status == "complete"][value].dropna().to_numpy(dtype=float)
    failed = int(sel.status.isin(["failed", "diverged"]).sum())
    partial = int((sel.status == "partial").sum())
    if len(ok) == 0:
        return Cell(None, None, 0, failed, partial)
    return Cell(float(ok.mean()), float(ok.std()), len(ok), failed, partial)


def table1_cells(runs: pd.DataFrame, datasets: Sequence[str] = TABLE1_DATASETS) -> dict[str, dict[str, Cell]]:
    cells: dict[str, dict[str, Cell]] = {}
    for d in datasets:
        row: dict[str, Cell] = {}
        for c in TABLE1_COLUMNS:
            if c.method is not None:
                row[c.key] = measure(runs, c.method, d, c.value)
        for c in TABLE1_COLUMNS:
            if c.delta_of is not None:
                on, off = row[c.delta_of[0]], row[c.delta_of[1]]
                row[c.key] = (Cell(on.mean - off.mean, None, min(on.n, off.n)) if on.present and off.present
                              else Cell(None, None, 0, on.failed + off.failed, on.partial + off.partial))
        cells[d] = row
    return cells


def block_sums(cells: dict[str, dict[str, Cell]]) -> dict[str, dict[str, float | None]]:
    sums: dict[str, dict[str, float | None]] = {}
    for block, members in BLOCKS:
        rows = [cells[d] for d in members if d in cells]
        sums[block] = {c.key: (float(sum(r[c.key].mean for r in rows))
                               if rows and all(r[c.key].present for r in rows) else None)
                       for c in TABLE1_COLUMNS}
    return sums


def _best(row: dict[str, Cell | float | None], keys: Sequence[str]) -> set[str]:
    vals = {k: (v.mean if isinstance(v, Cell) else v) for k, v in row.items() if k in keys}
    vals = {k: v for k, v in vals.items() if v is not None}
    if not vals:
        return set()
    top = max(vals.values())
    return {k for k, v in vals.items() if v == top}


def _fmt(cell: Cell | float | None, tex: bool, expected_n: int | None) -> str:
    missing = MISSING_TEX if tex else MISSING_MD
    if cell is None:
        return missing
    if not isinstance(cell, Cell):
        return f"{cell:.2f}"
    if not cell.present:
        if cell.failed:
            return f"failed ({cell.failed})"
        if cell.partial:
            return f"running ({cell.partial})"
        return missing
    pm = r" $\pm$ " if tex else " ± "
    text = f"{cell.mean:.2f}" if cell.std is None else f"{cell.mean:.2f}{pm}{cell.std:.2f}"
    notes = []
    if expected_n is not None and cell.std is not None and cell.n != expected_n:
        notes.append(f"n={cell.n}")
    if cell.failed:
        notes.append(f"{cell.failed} failed")
    return text + (f" ({', '.join(notes)})" if notes else "")


def _bold(text: str, tex: bool) -> str:
    return rf"\textbf{{{text}}}" if tex else f"**{text}**"


def _render(header: list[str], rows: list[list[str]], tex: bool, caption: str, label: str = "") -> str:
    if tex:
        lines = [r"\begin{table*}[t]", r"\centering", r"\resizebox{\textwidth}{!}{",
                 r"\begin{tabular}{l" + "c" * (len(header) - 1) + "}", r"\toprule",
                 " & ".join(header) + r" \\", r"\midrule"]
        for r in rows:
            lines.append(r"\midrule" if r == ["---"] else " & ".join(r) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}}", rf"\caption{{{_tex_escape(caption)}}}"]
        if label:
            lines.append(rf"\label{{{label}}}")
        lines.append(r"\end{table*}")
        return "\n".join(lines) + "\n"
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows if r != ["---"]]
    return "\n".join(out) + "\n"


def _tex_escape(text: str) -> str:
    return text.replace("%", r"\%").replace("_", r"\_").replace("#", r"\#").replace("&", r"\&")


def _sources(runs: pd.DataFrame) -> str:
    if runs.empty:
        return "no runs"
    src = runs.dropna(subset=["data_source"]).groupby("data_source").dataset.nunique()
    return ", ".join(f"{s} ({n} datasets)" for s, n in src.items()) or "unknown"


def _caption(preset: str, runs: pd.DataFrame, seeds: int | None, what: str) -> str:
    warn = " SMOKE PRESET: a plumbing check on tiny random-policy data, NOT a result." if preset == "smoke" else ""
    count = f"up to {seeds} seeds per cell, (n=k) marking a cell of fewer" if seeds else "no seeds"
    return (f"{what} Preset `{preset}`; {count} (mean ± population std); "
            f"data: {_sources(runs)}.{warn} Missing cells (—) have no complete run; "
            f"'failed (k)' means all k runs failed.")


def _expected_seeds(runs: pd.DataFrame) -> int | None:
    """Seeds of the fullest cell (a cell: method x dataset x variant)."""
    ok = runs[runs.status == "complete"]
    return int(ok.groupby(["method", "dataset", "variant"]).size().max()) if not ok.empty else None


def _natural(text) -> tuple:
    return tuple((0, float(t), "") if t.replace(".", "", 1).isdigit() else (1, 0.0, t)
                 for t in re.split(r"(\d+(?:\.\d+)?)", str(text)) if t)


# --------------------------------------------------------------------------------------------
def online_budget_label(preset: str) -> str:
    """The online budget of a preset as Table 1 names it: "0.2m" for the paper, "5k" for cpu."""
    from odt.config import make_config
    n = make_config("hopper-medium", "online", preset).online.online_samples
    return f"{n / 1e6:g}m" if n >= 100_000 else (f"{n / 1e3:g}k" if n >= 1000 else str(n))


# each method's name in the tables that list methods (not the score columns), in Table 1's order
METHOD_LABELS = {"dt": "DT", "odt-offline": "ODT (offline)", "odt": "ODT", "iql": "IQL", "sac": "SAC",
                 "odt-control": "ODT control", "bc": "BC"}
ONLINE_METHODS = ("odt", "odt-control", "iql", "sac")


def samples_used(runs: pd.DataFrame) -> list[list[str]]:
    """Online samples each online column actually used, per dataset: mean [min, max] over its
    complete runs. ODT's loop stops at the first round past the budget, so its runs end past it,
    each at its own count (the paper's loop stops the same way)."""
    ok = runs[runs.status == "complete"]
    rows = []
    for d in TABLE1_DATASETS:
        row, any_run = [d], False
        for method in ONLINE_METHODS:
            n = ok[(ok.method == method) & (ok.dataset == d)].online_samples.dropna()
            any_run |= not n.empty
            row.append("—" if n.empty else f"{n.mean():.0f} [{n.min():.0f}, {n.max():.0f}]")
        if any_run:
            rows.append(row)
    return rows


def cell_origins(runs: pd.DataFrame) -> list[list[str]]:
    """Where each Table 1 cell's complete runs ran, one row per (dataset, method) with runs: their
    count, the CPU core-hours they took, code versions, CPU models, torch versions and dataset
    files (content hashes). A cell whose runs differ in one of them lists each value with its
    number of runs."""
    ok = runs[runs.status == "complete"]
    rows = []
    for d in TABLE1_DATASETS:
        for method, label in METHOD_LABELS.items():
            sel = ok[(ok.method == method) & (ok.dataset == d)]
            if not sel.empty:
                rows.append([d, label, str(len(sel)), agg.core_hours_cell(sel), *agg.origin_cells(sel)])
    return rows


OFFICIAL_ROWS = ("hopper-medium", "hopper-medium-replay", "walker2d-medium")
# rows whose official runs come from the experiment official_replay, on another data file than
# Table 1's (PROTOCOL-official-cpu.md, amendment of 2026-12-06)
REPLAY_EXPERIMENT, REPLAY_ROWS = "official_replay", ("hopper-medium-replay",)
OTHER_FILE = "†"


def _with_n(c: Cell) -> str:
    return _fmt(c, False, None) + (f" (n={c.n})" if c.present else "")


def _replayed(replay: pd.DataFrame | None, dataset: str) -> bool:
    """Whether ``dataset``'s official cells come from ``replay`` (it has a complete official run)."""
    return (replay is not None and dataset in REPLAY_ROWS and not replay.empty
            and ((replay.method == "official-odt") & (replay.dataset == dataset)
                 & (replay.status == "complete")).any())


def other_file_note(runs: pd.DataFrame, replay: pd.DataFrame, dataset: str, budget: str) -> str:
    """The note under a row whose official cells ran on another file than its ``odt`` cells: both
    files' content prefixes, and our ODT on the official cells' file."""
    def files(frame: pd.DataFrame, method: str) -> str:
        cell = frame[(frame.method == method) & (frame.dataset == dataset) & (frame.status == "complete")]
        if cell.empty:
            return "none complete"
        return agg.tally(cell["data_file"] if "data_file" in cell else pd.Series([None] * len(cell)))
    there = [_with_n(measure(replay, "odt", dataset, v)) for v in ("offline_score", "final_score")]
    return (f"{OTHER_FILE} {dataset}: the official cells ran on another data file (content "
            f"{files(replay, 'official-odt')}, experiment `{REPLAY_EXPERIMENT}`) than the row's ODT cells "
            f"(content {files(runs, 'odt')}): not comparable across the row. Our ODT on the official "
            f"cells' file: {there[0]} pretrained, {there[1]} after {budget}.")


def official_section(runs: pd.DataFrame, official: pd.DataFrame | None, preset: str,
                     replay: pd.DataFrame | None = None) -> str:
    """Our ``odt`` beside the unmodified official code (``official-odt``, experiment ``official``)
    on the same rows, seeds and config: end of pretraining and after the online budget. A row of
    ``REPLAY_ROWS`` takes its official cells from ``replay`` (experiment ``official_replay``) when
    that has a complete run, marked and explained: another data file than its ``odt`` cells. Empty
    when there is no complete official run."""
    sources = [f for f in (official, replay) if f is not None and not f.empty]
    if not any((f.status == "complete").any() for f in sources):
        return ""
    budget = online_budget_label(preset)
    rows, notes = [], []
    for d in OFFICIAL_ROWS:
        theirs = replay if _replayed(replay, d) else official
        if theirs is None:
            continue
        ours_cells, their_cells = ([measure(f, m, d, v) for v in ("offline_score", "final_score")]
                                   for f, m in ((runs, "odt"), (theirs, "official-odt")))
        if not any(c.present for c in their_cells):
            continue
        mark = OTHER_FILE if theirs is replay else ""
        # order: ours and official at the end of pretraining, then ours and official after the budget
        rows.append([d, _with_n(ours_cells[0]), _with_n(their_cells[0]) + mark,
                     _with_n(ours_cells[1]), _with_n(their_cells[1]) + mark])
        if mark:
            notes.append(other_file_note(runs, replay, d, budget))
    header = ["dataset", "ODT (pretrained)", "official ODT (pretrained)", f"ODT ({budget})", f"official ODT ({budget})"]
    return "\n".join([
        "## Beside the official code\n",
        "Our ODT (the `odt` cells above) and the unmodified official online-dt code (facebookresearch/"
        "online-dt c376fa1, method `official-odt`, `docs/official-odt.md`) with the same config, data and "
        "environment: mean ± population std over each cell's complete runs (n). The "
        "registered comparison and its verdict: `paper_tables/official_cpu.md` "
        "(`PROTOCOL-official-cpu.md`).\n",
        _render(header, rows, False, ""), *[n + "\n" for n in notes]])


def table1_text(runs: pd.DataFrame, preset: str, tex: bool = False, reps: int = 2000,
                summary: dict | None = None, official: pd.DataFrame | None = None,
                replay: pd.DataFrame | None = None) -> str:
    cells = table1_cells(runs)
    sums = block_sums(cells)
    seeds = _expected_seeds(runs)
    ref = reference.load("table1")
    budget = online_budget_label(preset)  # our columns say what budget they ran with
    ours_label = lambda text: text.replace("0.2m", budget)  # noqa: E731
    paper_header = ["dataset"] + [c.tex if tex else c.label for c in TABLE1_COLUMNS]
    header = [ours_label(h) for h in paper_header]
    ours, paper, diff = [], [], []
    for block, members in BLOCKS:
        for d in members:
            row = cells[d]
            best = _best(row, ONLINE_KEYS) | _best(row, DELTA_KEYS)
            fmt = [_fmt(row[c.key], tex, seeds) for c in TABLE1_COLUMNS]
            ours.append([d] + [(_bold(t, tex) if c.key in best else t) for c, t in zip(TABLE1_COLUMNS, fmt)])
            pr = ref["rows"][d]
            paper.append([d] + [_fmt(_ref_cell(pr.get(c.key)), tex, None) for c in TABLE1_COLUMNS])
            diff.append([d] + [_fmt(_diff(row[c.key], pr.get(c.key)), tex, None) for c in TABLE1_COLUMNS])
        s = sums[block]
        best = _best(s, ONLINE_KEYS) | _best(s, DELTA_KEYS)
        ours.append([f"sum ({block})"] + [(_bold(_fmt(s[c.key], tex, None), tex) if c.key in best
                                          else _fmt(s[c.key], tex, None)) for c in TABLE1_COLUMNS])
        ps = ref["sums"][block]
        paper.append([f"sum ({block})"] + [_fmt(ps.get(c.key), tex, None) for c in TABLE1_COLUMNS])
        diff.append([f"sum ({block})"] + [_fmt(None if s[c.key] is None or ps.get(c.key) is None
                                               else s[c.key] - ps[c.key], tex, None) for c in TABLE1_COLUMNS])
        ours.append(["---"])
        paper.append(["---"])
        diff.append(["---"])
    cap = _caption(preset, runs, seeds, "Table 1 regenerated: D4RL normalized returns (100 = expert).")
    ref_cap = f"The paper's numbers ({ref['source']})."
    diff_cap = "Ours minus the paper's (mean)." + (f" Our online columns ran {budget} samples, the paper's 0.2m." if budget != "0.2m" else "")
    rl_summary = summary if summary is not None else table1_rliable(runs, reps, aggregate_min_runs(preset))
    rl_header, rl_rows = _rliable_section(rl_summary)
    rl = rl_header, [[ours_label(r[0])] + r[1:] for r in rl_rows]
    if tex:
        return "\n".join([_render(header, ours, True, cap, "tbl:table1-ours"),
                          _render(paper_header, paper, True, ref_cap, "tbl:table1-paper"),
                          _render(header, diff, True, diff_cap, "tbl:table1-diff"),
                          _render(*rl, True, f"Aggregates over the same Gym tasks ({_task_list(rl_summary)}; rliable, "
                                  "scores / 100).", "tbl:table1-rliable")])
    notes = "\n".join(f"- {n}" for n in ref.get("notes", []))
    return "\n".join([
        f"# Table 1 (preset `{preset}`)\n", cap + "\n", _render(header, ours, False, cap),
        *([section] if (section := official_section(runs, official, preset, replay)) else []),
        "## The paper's Table 1\n", ref_cap + "\n", _render(paper_header, paper, False, ref_cap), notes + "\n",
        "## Ours minus the paper's\n", _render(header, diff, False, diff_cap),
        f"## Online samples actually used (budget {budget})\n",
        "Mean [min, max] over each cell's complete runs. ODT and its control stop at the first round "
        "(one exploration episode and its updates) that passes the budget, as the paper's loop does, "
        "so they end past it, each run at its own count; IQL and SAC stop at the budget.\n",
        _render(["dataset"] + [METHOD_LABELS[m] for m in ONLINE_METHODS], samples_used(runs), False, ""),
        "## Where each cell's runs ran\n",
        "Per cell with complete runs: the code version (git sha; +dirty: uncommitted changes), CPU "
        "model, torch version and dataset file (its content hash) of its runs; a cell whose runs "
        "differ lists each value with its number of runs, and a run resumed under another value "
        "shows both (`a then b`). A run is bit-identical to its rerun only on the same CPU model, "
        "thread count and versions. Code before 35fa65d counted the tables a launch regenerates "
        "as uncommitted changes, so its runs' +dirty can be tables only; runs since list the "
        "changed paths in `environment.json` (`git_changed`).\n",
        _render(["dataset", "method", "runs", "core-h", *agg.ORIGIN.values()],
                cell_origins(runs), False, ""),
        f"{_compute_total(runs)}\n",
        "## Aggregates over tasks (rliable)\n",
        "IQM and optimality gap of the normalized score / 100, 95% stratified bootstrap CIs over "
        "runs, every method over the same Gym datasets, those where each method but SAC and BC has "
        f"at least {rl_summary['min_runs']} complete runs ({_task_list(rl_summary)}; SAC over "
        "those of them it was run on, the `-medium` ones, BC over those where it has as many), each cut to the same number of runs per "
        "dataset; a cell with fewer runs is in the table above, not here. P(X > Y): probability "
        "of improvement over the same datasets.\n",
        _render(*rl, False, "")])


def _compute_total(runs: pd.DataFrame) -> str:
    """One sentence: the CPU core-hours all of Table 1's complete cells' runs took."""
    ok = runs[(runs.status == "complete") & runs.dataset.isin(TABLE1_DATASETS) & runs.method.isin(list(METHOD_LABELS))]
    return (f"core-h: CPU core-hours of the cell's complete runs (each run's one attempt, or the compute "
            f"time a resumed run's counters kept, times its torch threads). All cells: "
            f"{agg.core_hours_cell(ok)} core-hours over {len(ok)} runs.")


def _task_list(summary: dict) -> str:
    tasks = summary.get("tasks")
    return ", ".join(tasks) if tasks else "none yet"


def _ref_cell(v) -> Cell | float | None:
    if v is None:
        return None
    if isinstance(v, list):
        return Cell(float(v[0]), float(v[1]), 1)
    return float(v)


def _diff(ours: Cell, ref) -> float | None:
    if ref is None or not ours.present:
        return None
    return ours.mean - (ref[0] if isinstance(ref, list) else ref)


def aggregate_min_runs(preset: str) -> int:
    """Complete runs a method needs on a dataset before that dataset enters the aggregates: the
    protocols' minimum seeds per cell (``TABLE1_MIN_SEEDS``, as the rows protocol's verdicts), one at
    ``smoke``. A cell still filling (2 of 5 seeds) is shown in the table with its n but would
    otherwise cut its method's every dataset to 2 runs (rliable needs as many runs per dataset)."""
    return 1 if preset == "smoke" else TABLE1_MIN_SEEDS


def table1_rliable(runs: pd.DataFrame, reps: int = 2000, min_runs: int = 1) -> dict:
    """rliable's IQM and optimality gap over the Gym rows, every method over the same tasks: the
    locomotion datasets where each method except SAC and BC has at least ``min_runs`` complete runs
    (SAC, which runs on the ``-medium`` rows only as in the paper, and BC, over those of them where
    they have), and P(ODT > IQL) online over the same tasks. ``summary["tasks"]`` names them."""
    done = runs[runs.dataset.isin(LOCOMOTION) & (runs.status == "complete")]
    methods = [c for c in TABLE1_COLUMNS if c.method is not None]
    counts = done.groupby(["method", "dataset"]).size()
    tasks_of = {c.key: {d for (m, d), n in counts.items() if m == c.method and n >= min_runs} for c in methods}
    scoped = [t for k, t in tasks_of.items() if t and k not in ("sac", "bc")]  # BC, a sanity column, scopes nothing
    common = sorted(set.intersection(*scoped)) if scoped else []
    matrices = {}
    for c in methods:
        tasks = [t for t in common if t in tasks_of[c.key]]
        m = agg.score_matrix(runs, c.method, c.value, tasks) if tasks else None
        if m is not None:
            matrices[c.label] = m / 100.0
    pairs = {}
    x, y = (matrices.get(c.label) for c in methods if c.key in ("odt_online", "iql_online"))
    if x is not None and y is not None:
        n = min(len(x), len(y))
        pairs = {"ODT (0.2m)*": x[:n], "IQL (0.2m)*": y[:n]}
    summary = agg.rliable_summary({**matrices, **pairs}, [("ODT (0.2m)*", "IQL (0.2m)*")] if pairs else [],
                                  reps=reps)
    for k in pairs:
        summary["aggregates"].pop(k, None)
    summary["tasks"] = common
    summary["min_runs"] = min_runs
    return summary


def _rliable_section(s: dict) -> tuple[list[str], list[list[str]]]:
    header = ["method", "IQM [95% CI]", "optimality gap [95% CI]", "runs x tasks"]
    rows = [[name, f"{a['iqm']:.3f} [{a['iqm_ci'][0]:.3f}, {a['iqm_ci'][1]:.3f}]",
             f"{a['optimality_gap']:.3f} [{a['optimality_gap_ci'][0]:.3f}, {a['optimality_gap_ci'][1]:.3f}]",
             f"{a['runs']} x {a['tasks']}"] for name, a in s["aggregates"].items()]
    for name, imp in s["improvement"].items():
        rows.append([f"P({name.replace('*', '')})", f"{imp['p']:.3f} [{imp['ci'][0]:.3f}, {imp['ci'][1]:.3f}]",
                     "", "same datasets"])
    if not rows:
        rows = [[MISSING_MD, "no complete runs", "", ""]]
    return header, rows


# --------------------------------------------------------------------------------------------
def variant_text(runs: pd.DataFrame, experiment: str, preset: str, tex: bool = False) -> str:
    """Final (and, where recorded, end-of-pretraining) score per dataset x method x variant."""
    ref = reference.load("table_rtg") if experiment == "table_rtg" else None
    seeds = _expected_seeds(runs)
    header = ["dataset", "method", "variant", "final score", "offline score"] + (["paper"] if ref else [])
    rows = []
    keys = runs[["dataset", "method", "variant"]].drop_duplicates().itertuples(index=False)
    rank = {d: i for i, d in enumerate(TABLE1_DATASETS)}
    for d, m, v in sorted(keys, key=lambda k: (rank.get(k[0], len(rank)), k[0], k[1], _natural(k[2]))):
        sel = runs[(runs.dataset == d) & (runs.method == m) & (runs.variant == v)]
        fin = _fmt(measure(sel, m, d, "final_score"), tex, seeds)
        off = _fmt(measure(sel, m, d, "offline_score"), tex, seeds)
        row = [d, m, v, fin, off]
        if ref:
            row.append(_fmt(ref["rows"].get(d, {}).get(v), tex, None))
        rows.append(row)
    desc = EXPERIMENTS[experiment].description if experiment in EXPERIMENTS else experiment
    cap = _caption(preset, runs, seeds, f"{desc}.")
    if not rows:
        rows = [[MISSING_MD] * len(header)]
    if tex:
        return _render(header, rows, True, cap, f"tbl:{experiment}")
    return f"# {experiment} (preset `{preset}`)\n\n{cap}\n\n" + _render(header, rows, False, cap)


# --------------------------------------------------------------------------------------------
def hyperparameter_text(tex: bool = False) -> str:
    """Appendix C regenerated from odt.config.paper_config, each cell checked against the paper."""
    from odt.config import paper_config
    ref = reference.load("hyperparameters")
    parts = []
    for protocol, key, title in (("offline", "offline", "Table C.2: pretraining (offline protocol)"),
                                 ("online", "online", "Table C.4: finetuning (online protocol)")):
        fields = list(next(iter(ref[key]["rows"].values())).keys())
        header = ["dataset"] + fields
        rows = []
        for d, expected in ref[key]["rows"].items():
            cfg = paper_config(d, protocol)
            row = [d]
            for f in fields:
                ours = config_value(cfg, f)
                text = _hp(ours)
                if not _same(ours, expected[f]):
                    text += f" (paper: {_hp(expected[f])}) MISMATCH"
                row.append(text)
            rows.append(row)
        parts.append((title, header, rows))
    common = []
    for protocol, key in (("offline", "common_offline"), ("online", "common_online")):
        cfg = paper_config("hopper-medium", protocol)
        for f, expected in ref[key].items():
            if f == "source":
                continue
            ours = "-dim(A)" if f == "target_entropy" and cfg.optim.target_entropy is None else config_value(cfg, f)
            flag = "" if _same(ours, expected) else f" (paper: {_hp(expected)}) MISMATCH"
            common.append([f"{ref[key]['source']}", f, _hp(ours) + flag])
    parts.insert(0, ("Tables C.1 and C.3: common values", ["table", "field", "value"], common))
    parts.append(("What the cpu and smoke presets change (hopper-medium; other datasets alike; dt: the DT baseline, baselines/dt.py)",
                  ["protocol", "field", "paper", "cpu", "smoke"], preset_differences()))
    parts.append(("AntMaze's budgets at the cpu preset (both AntMaze rows; sized by PROTOCOL-antmaze-sizing-cpu.md; "
                  "interim evaluations: PROTOCOL-table1-rows-cpu.md, amendment of 2026-11-29; IQL's alike)",
                  ["protocol", "field", "paper", "cpu", "smoke"],
                  [r for r in preset_differences("antmaze-umaze")
                   if r[1] in ("pretrain_updates", "eval_every_updates", "eval_episodes_interim")]))
    if tex:
        return "\n".join(_render(h, r, True, f"{t} (generated from odt/config.py).") for t, h, r in parts)
    out = ["# ODT hyperparameters (appendix C), generated from `odt/config.py`\n",
           f"Checked cell by cell against the transcription in `benchmarks/reference/hyperparameters.json` "
           f"({ref['source']}). A cell that differs is flagged with the paper's value.\n"]
    for t, h, r in parts:
        out += [f"## {t}\n", _render(h, r, False, t)]
    return "\n".join(out)


def preset_differences(dataset: str = "hopper-medium") -> list[list[str]]:
    """Per protocol (ODT offline, ODT online, and the DT baseline, which runs on ODT's trainer),
    the config fields whose value differs between the presets."""
    from baselines.dt import dt_config
    from odt.config import make_config
    from rlbase.config import to_dict
    makers = {"offline": lambda p: make_config(dataset, "offline", p),
              "online": lambda p: make_config(dataset, "online", p),
              "dt": lambda p: dt_config(dataset, p)}
    rows = []
    for protocol, make in makers.items():
        flat = {p: rec.flat_fields(to_dict(make(p))) for p in ("paper", "cpu", "smoke")}
        for field in flat["paper"]:
            vals = [flat[p][field] for p in ("paper", "cpu", "smoke")]
            if any(not _same(v, vals[0]) for v in vals[1:]):
                rows.append([protocol, field, *(_hp(v) for v in vals)])
    return rows


def config_value(cfg, name: str):
    for part in (cfg, cfg.model, cfg.optim, cfg.online):
        if any(f.name == name for f in dataclasses.fields(part)):
            return getattr(part, name)
    if name == "updates_per_round":
        return cfg.online.updates_per_round
    raise KeyError(name)


def _same(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def _hp(v) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def hyperparameter_mismatches() -> list[str]:
    text = hyperparameter_text()
    return [line for line in text.splitlines() if line.startswith("|") and "MISMATCH" in line]


# --------------------------------------------------------------------------------------------
def write_text(path: Path, text: str) -> Path:
    atomic_write_bytes(path, text.encode())
    return path


def default_reps(preset: str) -> int:
    """Bootstrap replications: rliable's 2000 for real results, fewer for smoke (speed only)."""
    return 200 if preset == "smoke" else 2000


def write_experiment_tables(experiment: str, root: Path | str, preset: str,
                            out_dir: Path | str = "paper_tables", reps: int | None = None) -> list[Path]:
    out = Path(out_dir)
    runs = agg.load_runs(root, preset, experiment)
    written = []
    if experiment == "table1":
        summary = table1_rliable(runs, reps or default_reps(preset), aggregate_min_runs(preset))
        official = agg.load_runs(root, preset, "official")
        replay = agg.load_runs(root, preset, REPLAY_EXPERIMENT)
        written.append(write_text(out / "table1.md", table1_text(runs, preset, False, summary=summary,
                                                                 official=official, replay=replay)))
        written.append(write_text(out / "table1.tex", table1_text(runs, preset, True, summary=summary)))
        cells = table1_cells(runs)
        flat = [{"dataset": d, "column": k, **dataclasses.asdict(c)} for d, row in cells.items() for k, c in row.items()]
        written.append(write_text(out / "table1.json", json.dumps(
            {"preset": preset, "cells": flat, "rliable": summary}, indent=2, sort_keys=True) + "\n"))
    else:
        written.append(write_text(out / f"{experiment}.md", variant_text(runs, experiment, preset)))
        written.append(write_text(out / f"{experiment}.tex", variant_text(runs, experiment, preset, True)))
    return written


def write_hyperparameter_tables(out_dir: Path | str = "paper_tables") -> list[Path]:
    out = Path(out_dir)
    return [write_text(out / "hyperparameters.md", hyperparameter_text()),
            write_text(out / "hyperparameters.tex", hyperparameter_text(tex=True))]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.tables", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("experiments", nargs="*", help="experiments to tabulate (default: all with results)")
    p.add_argument("--preset", default="paper",
                   help=f"the preset whose results are tabulated ({' | '.join(PRESETS)}; default paper)")
    p.add_argument("--results", type=Path, default=rec.DEFAULT_ROOT)
    p.add_argument("--out", type=Path, default=None,
                   help="default: paper_tables/<preset>/ for the repository's results/, else <results>/paper_tables/<preset>/")
    p.add_argument("--reps", type=int, default=None, help="bootstrap replications for rliable (default 2000; 200 for smoke)")
    p.add_argument("--hyperparameters-out", type=Path, default=None,
                   help="where hyperparameters.md|tex go (they depend on no results): default the parent of "
                        "the default --out (paper_tables/ for the repository's results/); with --out and "
                        "without this option they are checked but not written")
    args = p.parse_args(argv)
    names = args.experiments or sorted({d.parent.name for d in rec.iter_run_dirs(args.results, args.preset)})
    for name in names:
        if name not in EXPERIMENTS:
            p.error(f"unknown experiment {name!r}; known: {', '.join(EXPERIMENTS)}")
    out = args.out if args.out is not None else outputs.tables_dir(args.results, args.preset)
    hyper_out = args.hyperparameters_out
    if hyper_out is None and args.out is None:
        hyper_out = outputs.outputs_root(args.results)
    paths = write_hyperparameter_tables(hyper_out) if hyper_out is not None else []
    try:
        for name in names:
            paths += write_experiment_tables(name, args.results, args.preset, out, args.reps)
    except rec.CorruptRecord as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path in paths:
        print(f"wrote {path}")
    if not names:
        held = rec.presets_on_disk(args.results)
        print(f"no results at preset {args.preset} under {args.results}: no experiment tables written"
              + (f"; presets with results: {', '.join(held)} (--preset)" if held else ""), file=sys.stderr)
    mismatches = hyperparameter_mismatches()
    for m in mismatches:
        print(f"hyperparameter MISMATCH with the paper: {m}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    raise SystemExit(main())

