"""One table row per complete run directory, read from the run's last checkpoint: the loop that
skips (and names) a run it cannot read, and the Markdown table the checkpoint studies write."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from pathlib import Path

import pandas as pd


def rows_of(directories: Iterable[Path], row: Callable[[Path], dict],
            said: Callable[[dict], str] = lambda r: "done") -> tuple[list[dict], int]:
    """``row(directory)`` for each directory, in order, and how many were skipped: a run that
    raises FileNotFoundError, ValueError or KeyError is named on stderr and left out."""
    rows, failed = [], 0
    for directory in directories:
        try:
            rows.append(row(directory))
            print(f"{directory.name}: {said(rows[-1])}", file=sys.stderr, flush=True)
        except (FileNotFoundError, ValueError, KeyError) as exc:
            failed += 1
            print(f"skipped: {exc}", file=sys.stderr, flush=True)
    return rows, failed


def markdown_table(table: pd.DataFrame, cell: Callable[[object], str]) -> str:
    """The table's rows as a Markdown table, each value through ``cell``."""
    cols = list(table.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(cell(r[c]) for c in cols) + " |" for _, r in table.iterrows()]
    return "\n".join(lines)
