"""``make mutation``: mutation testing of the algorithm core with mutmut, and its report.

Runs mutmut (configured in ``pyproject.toml`` under ``[tool.mutmut]``) on the functions in
:data:`SCOPE` (the math and bookkeeping the paper defines; not progress bars, logging or
checkpoint plumbing), then writes ``tests/MUTATION.md``: per module the mutants killed,
surviving and judged equivalent, the score killed / (all - equivalent), and every survivor
with its diff and either the reason it is equivalent (from ``tests/mutation_equivalent.json``,
written by hand after reading the diff) or "UNEXPLAINED".

    python scripts/mutation.py run [MODULE ...]   # mutate and test (hours for everything; resumable)
    python scripts/mutation.py report            # merge all of mutants/ into the stored results (stamped with HEAD), write the report

Each module's result is stored in ``tests/mutation_results.json`` with the code version it ran
on; a run replaces the rows of the modules it ran and keeps the others, so modules can be run
in different sessions (``mutants/`` does not outlive a machine).

mutmut copies the sources into ``mutants/`` (git-ignored) and runs the tests there; leave the
checkout unchanged while it runs, or run it in another worktree with this venv's python
(``cd ../wt-mut && ../main/.venv/bin/python scripts/mutation.py run odt.relabel``).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REPORT = REPO / "tests" / "MUTATION.md"
EQUIVALENT = REPO / "tests" / "mutation_equivalent.json"
RESULTS = REPO / "tests" / "mutation_results.json"
TARGET = 0.90

# module -> mutant-name globs (mutmut names methods x<U+01C1>Class<U+01C1>method__mutmut_N)
SCOPE: dict[str, list[str]] = {
    "odt.objective": ["odt.objective.*"],
    "odt.policy": ["odt.policy.*"],
    "odt.sampling": ["odt.sampling.*"],
    "odt.relabel": ["odt.relabel.*"],
    "odt.buffer": ["odt.buffer.*"],
    "rlbase.trajectories": ["rlbase.trajectories.*"],
    "odt.lamb": ["odt.lamb.*"],
    "odt.rollout": ["odt.rollout.*"],
    "rlbase.envs": ["rlbase.envs.*"],
    "rlbase.seeds": ["rlbase.seeds.*"],
    "odt.learner": [f"odt.learner.*{name}__mutmut_*" for name in ("step", "warmup_factor", "lam", "set_base_lr")],
    "odt.train": [f"odt.train.*{name}__mutmut_*" for name in (
        "batch_tensors", "update", "conditioning", "exploration_rtg", "explore")],
    "baselines.iql": [f"baselines.iql.*{name}__mutmut_*" for name in (
        "expectile_loss", "awr_weights", "td_target", "cosine_factor", "reward_scale", "transitions",
        "update", "_scale", "_set_actor_lr")],
    "baselines.sac": [f"baselines.sac.*{name}__mutmut_*" for name in (
        "squashed_gaussian_log_prob", "td_target", "polyak_update", "update", "alpha")],
    "baselines.dt": ["baselines.dt.*"],
}


def mutmut(*args: str, capture: bool = False) -> str:
    exe = Path(sys.executable).with_name("mutmut")
    out = subprocess.run([str(exe), *args], cwd=REPO, text=True, check=False,
                         stdout=subprocess.PIPE if capture else None)
    return out.stdout or ""


def statuses() -> dict[str, str]:
    """mutant name -> mutmut's status (killed, survived, no tests, timeout, not checked, ...)."""
    out = {}
    for line in mutmut("results", "--all", "true", capture=True).splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and "__mutmut_" in name:
            out[name] = status.strip()
    return out


def in_scope(name: str) -> str | None:
    for module, globs in SCOPE.items():
        if any(fnmatch.fnmatchcase(name, g) for g in globs):
            return module
    return None


def _head() -> str:
    """The commit the mutants were made from; flagged when tracked files differ from it, except
    this report's own two files (a run rewrites them, so they differ after the first run)."""
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                            capture_output=True, text=True).stdout.splitlines()
    own = {str(path.relative_to(REPO)) for path in (REPORT, RESULTS)}
    dirty = [line for line in status if line[3:] not in own]
    return (out.stdout.strip() or "unknown") + (" (with uncommitted changes)" if dirty else "")


def diff_of(name: str) -> str:
    lines = mutmut("show", name, capture=True).splitlines()
    return "\n".join(x for x in lines if x[:1] in "+-" and not x.startswith(("+++", "---")))


def results_from_mutmut() -> dict[str, dict]:
    """Per module that mutmut has run (any mutant checked): its counts with mutmut's own statuses
    and every survivor with its diff. Modules whose mutants are all 'not checked' are left out,
    so a run of some modules never erases the stored results of the others."""
    found: dict[str, dict[str, str]] = {m: {} for m in SCOPE}
    for name, status in statuses().items():
        module = in_scope(name)
        if module is not None:
            found[module][name] = status
    out = {}
    for module, names in found.items():
        counts = Counter(names.values())
        if not names or counts["not checked"] == len(names):
            continue
        out[module] = dict(
            code=_head(), written=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            counts=dict(sorted(counts.items())),
            survivors={n: diff_of(n) for n, st in sorted(names.items()) if st == "survived"})
    return out


def merge_results(stored: dict[str, dict], fresh: dict[str, dict]) -> dict[str, dict]:
    """Stored per-module results with the freshly run modules replacing theirs whole."""
    return {m: fresh.get(m, stored.get(m)) for m in SCOPE if m in fresh or m in stored}


def module_row(module: str, result: dict | None, explained: dict[str, str]) -> str:
    """One table row; survivors with a reason in ``explained`` count as equivalent."""
    if result is None:
        return f"| `{module}` | - | - | - | - | - | - | - | - | not run yet | - |"
    c = Counter(result["counts"])
    equivalent = sum(1 for n in result["survivors"] if n in explained)
    survived = c["survived"] - equivalent
    judged = c["killed"] + c["timeout"] + survived
    score = c["killed"] + c["timeout"]
    pct = f"{100 * score / judged:.1f}%" if judged else "-"
    ok = "yes" if judged and score / judged >= TARGET and not c["not checked"] else "no"
    return (f"| `{module}` | {sum(c.values())} | {c['killed']} | {c['timeout']} | {survived} | {equivalent} | "
            f"{c['no tests']} | {c['not checked']} | {pct} | {ok} | {result['code']} |")


def render_report(results: dict[str, dict], explained: dict[str, str]) -> str:
    text = [
        "# Mutation testing of the algorithm core (`make mutation`)",
        "",
        "Generated by `scripts/mutation.py report` from `tests/mutation_results.json` (each module's",
        "result from the mutmut run that last covered it, with the code version it ran on); do not",
        "edit by hand. Score = (killed + timeout) / (killed + timeout + survived): equivalent mutants",
        "(a reason for each below, from `tests/mutation_equivalent.json`) and mutants no in-scope test",
        f"reaches (`no tests`) are left out of it. Target: >= {TARGET:.0%} per module. The fixed-seed",
        "loss snapshot (`tests/test_perf_invariants.py`) is not among the tests, so no kill here",
        "rests on it. `not checked`: mutants of a run that stopped early (the module counts as not done).",
        "",
        "| module | mutants | killed | timeout | survived | equivalent | no tests | not checked | score | >= 90% | code |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *(module_row(m, results.get(m), explained) for m in SCOPE),
        "",
        "## Survivors",
        "",
    ]
    for module in SCOPE:
        for name, diff in (results.get(module) or {}).get("survivors", {}).items():
            status = "equivalent" if name in explained else "survived"
            why = explained.get(name, "UNEXPLAINED: needs a test or a reason")
            text += [f"### `{name}` ({status})", "", "```diff", diff, "```", "", why, ""]
    return "\n".join(text).rstrip() + "\n"


def write_report(fresh: dict[str, dict] | None = None) -> Path:
    """Merge mutmut's results (``fresh``, default: read from mutants/) into the stored ones and
    write the report of every module in SCOPE."""
    explained: dict[str, str] = json.loads(EQUIVALENT.read_text()) if EQUIVALENT.exists() else {}
    stored = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    results = merge_results(stored, results_from_mutmut() if fresh is None else fresh)
    RESULTS.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    REPORT.write_text(render_report(results, explained))
    return REPORT


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python scripts/mutation.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=("run", "report"))
    p.add_argument("modules", nargs="*", help=f"modules to run (default all): {', '.join(SCOPE)}")
    p.add_argument("--max-children", type=int, default=None, help="parallel mutant runs (default: cores)")
    args = p.parse_args(argv)
    for m in args.modules:
        if m not in SCOPE:
            p.error(f"unknown module {m!r}; known: {', '.join(SCOPE)}")
    fresh = None
    if args.action == "run":
        globs = [g for m in (args.modules or SCOPE) for g in SCOPE[m]]
        extra = ["--max-children", str(args.max_children)] if args.max_children else []
        mutmut("run", *extra, *globs)
        # only the modules this run covered: mutants/ may still hold older results of others,
        # which must keep the code version they ran on
        fresh = {m: r for m, r in results_from_mutmut().items() if m in (args.modules or SCOPE)}
    print(f"wrote {write_report(fresh)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
