"""Where generated tables and figures go: next to the results root and preset they come from.

Only the project's own results tree (``<repo>/results``) writes into ``paper_tables/``, and each
preset into its own directory, so a smoke run or a run of another preset never touches the
committed cpu tables::

    <repo>/results          -> paper_tables/<preset>/           tables
                               paper_tables/figures/<preset>/   figures
    any other results root  -> <root>/paper_tables/<preset>/, <root>/paper_tables/figures/<preset>/

``paper_tables/smoke/`` and ``paper_tables/figures/smoke/`` are git-ignored: smoke numbers are
not results.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.records import REPO_ROOT

PAPER_TABLES = REPO_ROOT / "paper_tables"
COMMITTED_RESULTS = REPO_ROOT / "results"


def is_committed_tree(results: Path | str) -> bool:
    """True if ``results`` is the repository's own results tree (however the path is spelled)."""
    return Path(results).resolve() == COMMITTED_RESULTS.resolve()


def outputs_root(results: Path | str) -> Path:
    """``paper_tables/`` for the repository's results tree, else ``<results>/paper_tables``."""
    return PAPER_TABLES if is_committed_tree(results) else Path(results) / "paper_tables"


def tables_dir(results: Path | str, preset: str) -> Path:
    return outputs_root(results) / preset


def figures_root(results: Path | str) -> Path:
    """The parent of the per-preset figure directories (``<figures_root>/<preset>/``)."""
    return outputs_root(results) / "figures"
