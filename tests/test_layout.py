"""Evidence lives apart from code: no results, logs or reports inside the code packages.

``odt/``, ``baselines/`` and ``benchmarks/`` hold code and the reference data the code reads
(the paper's numbers, expected score ranges, packaged behaviour policies); reports, measurements
and their raw data go under ``paper_tables/``. The perf tools write there by default, and the
index of ``paper_tables/`` names every file it holds, with links that resolve.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CODE_PACKAGES = ("odt", "baselines", "benchmarks")
EVIDENCE_SUFFIXES = {".json", ".md", ".png", ".csv", ".log"}
REFERENCE_DATA = ("benchmarks/reference", "benchmarks/expected", "benchmarks/datasets/policies")
SKIPPED_DIRS = {"__pycache__", ".pytest_cache", ".ruff_cache"}
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _evidence_in_code() -> list[str]:
    """Paths (relative to the repository) of result-like files inside the code packages."""
    found = []
    for package in CODE_PACKAGES:
        for path in (REPO / package).rglob("*"):
            rel = path.relative_to(REPO)
            if SKIPPED_DIRS & set(rel.parts) or any(p.endswith(".egg-info") for p in rel.parts):
                continue
            if path.is_file() and path.suffix.lower() in EVIDENCE_SUFFIXES:
                if not any(rel.as_posix().startswith(folder + "/") for folder in REFERENCE_DATA):
                    found.append(rel.as_posix())
    return sorted(found)


def test_no_results_logs_or_reports_inside_code_packages():
    stray = _evidence_in_code()
    assert not stray, (f"results/logs/reports inside code packages: {stray}; move them under "
                       f"paper_tables/ (only {', '.join(REFERENCE_DATA)} may hold data files)")


def test_the_check_sees_a_stray_report(tmp_path, monkeypatch):
    """The scan itself works: a report dropped into a code package is found, reference data is not."""
    for package in CODE_PACKAGES:
        (tmp_path / package).mkdir()
    (tmp_path / "benchmarks" / "reference").mkdir()
    (tmp_path / "benchmarks" / "reference" / "table1.json").write_text("{}")
    (tmp_path / "benchmarks" / "__pycache__").mkdir()
    (tmp_path / "benchmarks" / "__pycache__" / "x.json").write_text("{}")
    (tmp_path / "odt" / "notes.MD").write_text("# notes")
    (tmp_path / "benchmarks" / "run.log").write_text("")
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    assert _evidence_in_code() == ["benchmarks/run.log", "odt/notes.MD"]


def test_perf_tools_write_beside_the_perf_report():
    from benchmarks.perf.official import parse_args as official_args
    from benchmarks.perf.speed import PerfConfig

    assert Path(PerfConfig().out).parent == Path("paper_tables/perf")
    assert official_args(["--project-side"]).out.parent == Path("paper_tables/perf")
    assert (REPO / "paper_tables" / "perf" / "PERF.md").is_file()


def _broken_links(page: Path) -> list[str]:
    """Relative link targets of a markdown page that do not exist."""
    broken = []
    for target in LINK.findall(page.read_text()):
        target = target.split("#")[0]
        if target and not re.match(r"[a-z]+:", target) and not (page.parent / target).exists():
            broken.append(target)
    return broken


@pytest.mark.parametrize("page", ["paper_tables/README.md", "paper_tables/perf/PERF.md",
                                  "docs/performance.md"])
def test_links_of_the_index_and_perf_pages_resolve(page):
    assert not _broken_links(REPO / page), f"{page}: broken links {_broken_links(REPO / page)}"


def test_paper_tables_index_names_every_committed_entry():
    """Each top-level file or folder of paper_tables/ that git tracks is listed in its index."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs the git checkout")
    tracked = subprocess.run(["git", "ls-files", "paper_tables"], cwd=REPO, capture_output=True,
                             text=True, check=True).stdout.split()
    entries = {Path(p).parts[1] for p in tracked if len(Path(p).parts) > 1} - {"README.md", ".gitignore"}
    index = (REPO / "paper_tables" / "README.md").read_text()
    missing = sorted(e for e in entries if f"]({e}" not in index)
    assert not missing, f"paper_tables/README.md does not list {missing}: add one line each"
