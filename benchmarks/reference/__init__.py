"""The paper's own numbers, transcribed once from its LaTeX source, each file naming its table."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

HERE = Path(__file__).resolve().parent


@cache
def load(name: str) -> dict:
    """``load("table1")``, ``load("table_rtg")``, ``load("hyperparameters")``."""
    path = HERE / f"{name}.json"
    if not path.exists():
        known = sorted(p.stem for p in HERE.glob("*.json"))
        raise KeyError(f"no reference {name!r}; known: {', '.join(known)}")
    return json.loads(path.read_text())
