"""What a figure says about where it comes from, kept off its title: a short title (one line,
plus one warning line for smoke or unfinished runs), a small caption under the axes (how to read
the marks; preset, runs, seeds, online samples used, data source, code version) and a sidecar
``<figure>.json`` beside the PNG with the same facts in full. Nothing here depends on the time
or the checkout, so unchanged records give unchanged bytes."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from benchmarks import outputs
from benchmarks.records import REPO_ROOT
from rlbase.checkpoint import atomic_write_bytes

TITLE_SIZE = 11
CAPTION_SIZE = 7.5
CAPTION_CHARS_PER_INCH = 16  # DejaVu Sans at 7.5 pt, with a margin: a caption line never outruns the figure
SMOKE = "SMOKE preset: plumbing check, not a result"
DATA_SOURCES = {"generated": "generated here by the project's forge (D4RL's recipe), not D4RL's files",
                "generated-smoke": "tiny generated smoke data", "d4rl": "D4RL's files"}
CURVE_KEYS = ("experiment", "dataset", "method", "variant")


def _status_note(runs: pd.DataFrame) -> str:
    counts = runs.drop_duplicates("run_id").status.value_counts()
    return ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))


def _ranges(values) -> str:
    """[20, 21, 22, 24] -> '20-22, 24'."""
    vals, parts = sorted({int(v) for v in values}), []
    for v in vals:
        if parts and v == parts[-1][1] + 1:
            parts[-1][1] = v
        else:
            parts.append([v, v])
    return ", ".join(f"{a}-{b}" if b > a else f"{a}" for a, b in parts)


def _seeds_per_curve(complete: pd.DataFrame) -> pd.Series | None:
    """How many seeds each (dataset, method, variant) has, or None when the frame does not say."""
    keys = [k for k in CURVE_KEYS if k in complete]
    if not keys:
        return None
    return complete.drop_duplicates([*keys, "seed"]).groupby(keys, dropna=False).seed.size()


def _span(values: pd.Series) -> str:
    return f"{values.min():,.0f}" if values.min() == values.max() else f"{values.min():,.0f}-{values.max():,.0f}"


def samples_used(complete: pd.DataFrame) -> str | None:
    """The online samples the runs with an online phase used ('5,000-5,790 per online run'), or None."""
    if "online_samples" not in complete or not complete.online_samples.notna().any():
        return None
    used = complete.groupby("run_id").online_samples.max()
    used = used[used > 0]  # runs with an online phase (offline-only methods have none)
    if used.empty:
        return None
    return f"{_span(used)} " + ("by the one online run" if len(used) == 1 else "per online run")


def data_sources(complete: pd.DataFrame) -> str:
    sources = sorted({str(s) for s in complete.data_source.dropna()}) if "data_source" in complete else []
    return "; ".join(DATA_SOURCES.get(s, s) for s in sources) if sources else "source unrecorded"


def provenance_note(complete: pd.DataFrame) -> str:
    """What a reader needs beside the curves: seeds, the online samples the runs actually used
    (each stops at the first round past the budget), and where the data came from."""
    parts = [f"{'seed' if complete.seed.nunique() == 1 else 'seeds'} {_ranges(complete.seed)}"]
    per_curve = _seeds_per_curve(complete)
    if per_curve is not None and per_curve.min() != per_curve.max():  # not every curve has every seed
        parts[0] += f" ({per_curve.min()}-{per_curve.max()} seeds per curve: n in the legends)"
    if (used := samples_used(complete)) is not None:
        parts.append(f"online samples used {used}")
    if "data_source" in complete:
        parts.append(f"data {data_sources(complete)}")
    return ", ".join(parts)


def code_versions(codes: pd.Series) -> dict[str, int]:
    """{code version: runs}, most runs first (the short git sha each run recorded)."""
    counts = codes.fillna("not recorded").value_counts()
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0]))))


def code_note(versions: dict[str, int], sidecar: str) -> str:
    """'code 1d3cee0', or 'code 1d3cee0 (30 runs) and 3 other versions (each in <sidecar>)'."""
    if not versions:
        return "code version unrecorded"
    first, runs = next(iter(versions.items()))
    if len(versions) == 1:
        return f"code {first}"
    others = len(versions) - 1
    return f"code {first} ({runs} runs) and {others} other version{'s' if others > 1 else ''} (each in {sidecar})"


def title_lines(title: str, preset: str, runs: pd.DataFrame | None = None) -> list[str]:
    """The title, and one warning line where the figure is not a result to read: the smoke
    preset, or runs that failed or have not finished."""
    warnings = [SMOKE] if preset == "smoke" else []
    if runs is not None and not runs.empty and set(runs.status.unique()) - {"complete"}:
        warnings.append(f"INCOMPLETE: {_status_note(runs)}")
    return [title, "; ".join(warnings)] if warnings else [title]


def records_path(root: Path | str, preset: str, experiment: str) -> str:
    """Where an experiment's records are, relative to the repository where they lie inside it."""
    path = Path(root).resolve() / preset / experiment
    try:
        return str(path.relative_to(REPO_ROOT.resolve()))
    except ValueError:
        return str(path)


def cli_command(module: str, root: Path | str, preset: str) -> str:
    """``python -m <module>`` on these records at this preset (``--results`` unless they are the committed ones)."""
    results = "" if outputs.is_committed_tree(root) else f" --results {root}"
    return f"python -m {module}{results} --preset {preset}"


def command(root: Path | str, preset: str, name: str) -> str:
    """The command that redraws this one figure."""
    return f"{cli_command('benchmarks.plots', root, preset)} --only {name}"


def draw_header(fig: plt.Figure, lines: list[str], caption: list[str]) -> None:
    """The title at the top (short lines, never wrapped) and the caption under everything drawn
    (legends below the panels included), small and grey, each line wrapped to the figure's width.
    The figure is laid out once first to find its lowest artist; the caption takes no part in the
    layout, so saving lays it out the same way again."""
    fig.suptitle("\n".join(lines), fontsize=TITLE_SIZE)
    width = max(60, int(fig.get_figwidth() * CAPTION_CHARS_PER_INCH))
    text = "\n".join(textwrap.fill(line, width) for line in caption if line)
    fig.draw_without_rendering()
    box = fig.get_tightbbox(fig.canvas.get_renderer())  # inches
    left = max(0.0, box.x0) / fig.get_figwidth() + 0.005
    top = min(0.0, box.y0) / fig.get_figheight() - 0.01
    fig.text(left, top, text, ha="left", va="top", fontsize=CAPTION_SIZE, color="0.3")


def write_sidecar(out: Path, name: str, facts: dict) -> Path:
    """``<out>/<name>.json``: the figure's provenance in full, keys sorted, no timestamps."""
    path = out / f"{name}.json"
    atomic_write_bytes(path, (json.dumps(facts, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode())
    return path
