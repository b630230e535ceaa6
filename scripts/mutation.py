"""``make mutation``: mutation testing of the algorithm core with mutmut, and its report.

Runs mutmut (configured in ``pyproject.toml`` under ``[tool.mutmut]``) on the functions in
:data:`SCOPE` (the math and bookkeeping the paper defines; not progress bars, logging or
checkpoint plumbing), then writes ``tests/MUTATION.md``: per module the mutants killed,
surviving and judged equivalent, the score killed / (all - equivalent), and every survivor
with its diff and either the reason it is equivalent (from ``tests/mutation_equivalent.json``,
written by hand after reading the diff) or "UNEXPLAINED".

    python scripts/mutation.py run [MODULE ...]   # mutate and test (hours for everything; resumable)
    python scripts/mutation.py report            # tests/MUTATION.md from mutants/ as it is

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
TARGET = 0.90

# module -> mutant-name globs (mutmut names methods x<U+01C1>Class<U+01C1>method__mutmut_N)
SCOPE: dict[str, list[str]] = {
    "odt.objective": ["odt.objective.*"],
    "odt.policy": ["odt.policy.*"],
    "odt.sampling": ["odt.sampling.*"],
    "odt.relabel": ["odt.relabel.*"],
    "odt.buffer": ["odt.buffer.*"],
    "odt.trajectories": ["odt.trajectories.*"],
    "odt.lamb": ["odt.lamb.*"],
    "odt.rollout": ["odt.rollout.*"],
    "odt.train": [f"odt.train.*{name}__mutmut_*" for name in (
        "batch_tensors", "update", "conditioning", "exploration_rtg", "warmup_factor", "lam", "explore")],
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
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                           capture_output=True, text=True).stdout.strip()
    return (out.stdout.strip() or "unknown") + (" (with uncommitted changes)" if dirty else "")


def diff_of(name: str) -> str:
    lines = mutmut("show", name, capture=True).splitlines()
    return "\n".join(x for x in lines if x[:1] in "+-" and not x.startswith(("+++", "---")))


def write_report() -> Path:
    """The report of every module in SCOPE, from mutmut's results as they are (modules not run
    yet show as such)."""
    explained: dict[str, str] = json.loads(EQUIVALENT.read_text()) if EQUIVALENT.exists() else {}
    rows, survivors = [], []
    by_module: dict[str, Counter] = {m: Counter() for m in SCOPE}
    for name, status in sorted(statuses().items()):
        module = in_scope(name)
        if module is None:
            continue
        if status == "survived" and name in explained:
            status = "equivalent"
        by_module[module][status] += 1
        if status in ("survived", "equivalent"):
            survivors.append((module, name, status, diff_of(name)))
    for module, c in by_module.items():
        if not c:
            continue
        judged = c["killed"] + c["survived"] + c["timeout"]
        score = c["killed"] + c["timeout"]
        pct = f"{100 * score / judged:.1f}%" if judged else "-"
        if c["not checked"] == sum(c.values()):
            pct, ok = "-", "not run yet"
        else:
            ok = "yes" if judged and score / judged >= TARGET and not c["not checked"] else "no"
        rows.append(f"| `{module}` | {sum(c.values())} | {c['killed']} | {c['timeout']} | {c['survived']} | "
                    f"{c['equivalent']} | {c['no tests']} | {c['not checked']} | {pct} | {ok} |")
    text = [
        "# Mutation testing of the algorithm core (`make mutation`)",
        "",
        "Generated by `scripts/mutation.py report` from mutmut's results; do not edit by hand.",
        f"Code: {_head()}; written {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        "Score = (killed + timeout) / (killed + timeout + survived): equivalent mutants (a reason",
        "for each below, from `tests/mutation_equivalent.json`) and mutants no in-scope test",
        f"reaches (`no tests`) are left out of it. Target: >= {TARGET:.0%} per module. The fixed-seed",
        "loss snapshot (`tests/test_perf_invariants.py`) is not among the tests, so no kill here",
        "rests on it. `not checked`: mutants not run yet (the module counts as not done).",
        "",
        "| module | mutants | killed | timeout | survived | equivalent | no tests | not checked | score | >= 90% |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        "## Survivors",
        "",
    ]
    for _module, name, status, diff in survivors:
        why = explained.get(name, "UNEXPLAINED: needs a test or a reason")
        text += [f"### `{name}` ({status})", "", "```diff", diff, "```", "", why, ""]
    REPORT.write_text("\n".join(text).rstrip() + "\n")
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
    if args.action == "run":
        globs = [g for m in (args.modules or SCOPE) for g in SCOPE[m]]
        extra = ["--max-children", str(args.max_children)] if args.max_children else []
        mutmut("run", *extra, *globs)
    print(f"wrote {write_report()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
