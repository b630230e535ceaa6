"""Every command in the README and in docs/ works as written (issue 18, part 4).

Each shell line of a fenced ``bash`` block, and each inline ``python -m ...`` span, is checked:
``make`` targets exist in the Makefile; ``python -m MODULE ARGS`` reaches the end of MODULE's
argument parsing with exactly those arguments (the module exists, every option is known, every
value parses; nothing after the parsing runs); scripts exist; other programs are installed.
Blocks whose info string is ``bash run`` are also run for real, with empty results and data
directories, and must exit 0. The long commands (the quickstart, the smoke Table 1) are run by
CI (``.ci/run``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHELL_BUILTINS = {"source", "eval", "export", "cd"}
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```", re.M | re.S)
INLINE = re.compile(r"`((?:\.venv/bin/)?python -m [^`]+)`")


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(info string, body) of every fenced code block."""
    return [(m.group(1).strip(), m.group(2)) for m in FENCE.finditer(text)]


def shell_commands(body: str) -> list[list[str]]:
    """The commands of a shell block as argv lists: continuations joined, comments dropped,
    ``a && b`` split into two commands."""
    joined = re.sub(r"\\\n\s*", " ", body)
    out = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        while words:
            cut = words.index("&&") if "&&" in words else len(words)
            out.append(words[:cut])
            words = words[cut + 1:]
    return [w for w in out if w]


def documented() -> list[tuple[str, list[str], bool]]:
    """(where, argv, run it) for every documented command."""
    found = []
    for page in PAGES:
        text = page.read_text()
        name = page.relative_to(REPO)
        for info, body in fenced_blocks(text):
            lang, *flags = info.split() or [""]
            if lang in ("bash", "sh"):
                found += [(f"{name}: {shlex.join(c)}", c, "run" in flags) for c in shell_commands(body)]
        for m in INLINE.finditer(FENCE.sub("", text)):
            found.append((f"{name}: {m.group(1)}", shlex.split(m.group(1)), False))
    return found


COMMANDS = documented()


def _python_module(argv: list[str]) -> tuple[str, list[str]] | None:
    if Path(argv[0]).name.startswith("python") and len(argv) > 2 and argv[1] == "-m":
        return argv[2], argv[3:]
    return None


class _Parsed(Exception):
    """Raised right after a successful parse_args, so that nothing after it runs."""


PLACEHOLDER = re.compile(r"^[A-Z][A-Z_]*(=[A-Z_]+)?$|<")  # EXPERIMENT, FIELD=VALUE, <id>


def _pytest_markers_known(args: list[str]) -> None:
    """``python -m pytest -m EXPR``: every marker EXPR names is registered in pyproject.toml."""
    registered = set(re.findall(r'^\s*"(\w+):', (REPO / "pyproject.toml").read_text(), re.M))
    if "-m" in args:
        named = set(re.findall(r"\w+", args[args.index("-m") + 1])) - {"not", "and", "or"}
        assert named <= registered, f"unregistered pytest markers {named - registered}"


def _parses(module: str, args: list[str], monkeypatch) -> None:
    if module == "pytest":  # pytest.main would run the suite: check its marker expression instead
        _pytest_markers_known(args)
        return
    mod = importlib.import_module(module)
    if not hasattr(mod, "main"):
        mod = importlib.import_module(f"{module}.__main__")
    if not args or any(PLACEHOLDER.search(a) for a in args):  # a module named in prose, or a template
        return
    if "--help" in args or "-h" in args:
        with pytest.raises(SystemExit) as exit_:
            mod.main(args)
        assert exit_.value.code == 0
        return
    original = argparse.ArgumentParser.parse_args

    def parse_then_stop(self, *a, **k):
        original(self, *a, **k)
        raise _Parsed
    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_then_stop)
    with pytest.raises(_Parsed):
        mod.main(args)


def _makefile_targets() -> set[str]:
    return set(re.findall(r"^([A-Za-z][\w-]*):", (REPO / "Makefile").read_text(), re.M))


def test_the_pages_hold_commands_and_the_parser_sees_them():
    assert len(COMMANDS) > 30
    readme = [argv for where, argv, _ in COMMANDS if where.startswith("README.md")]
    assert ["make", "install"] in readme and ["make", "test"] in readme
    assert ["python", "-m", "benchmarks.run", "quickstart", "--make-datasets"] in readme
    assert shell_commands("a --x 1 \\\n   --y 2  # note\nb && c d\n") == [["a", "--x", "1", "--y", "2"], ["b"], ["c", "d"]]


@pytest.mark.parametrize("where,argv", [(w, a) for w, a, _ in COMMANDS], ids=[w for w, _, _ in COMMANDS])
def test_documented_command_is_valid(where, argv, monkeypatch, capsys):
    word = argv[0]
    if word == "make":
        assert set(argv[1:]) <= _makefile_targets(), f"{where}: no such make target"
    elif (module := _python_module(argv)) is not None:
        _parses(*module, monkeypatch)
    elif word in SHELL_BUILTINS:
        pass
    elif "/" in word:
        assert (REPO / word).is_file(), f"{where}: {word} does not exist"
    else:
        assert shutil.which(word) or shutil.which(word, path=str(Path(sys.executable).parent)), \
            f"{where}: {word} is not installed"


RUN = [(w, a) for w, a, run in COMMANDS if run]


def test_some_blocks_are_marked_to_run():
    assert len(RUN) >= 3


@pytest.mark.parametrize("where,argv", RUN, ids=[w for w, _ in RUN])
def test_runnable_documented_command_exits_0(where, argv, tmp_path):
    module = _python_module(argv)
    assert module is not None, f"{where}: only python -m commands are run here"
    env = {**os.environ, "ODT_RESULTS": str(tmp_path / "results"), "ODT_DATA_DIR": str(tmp_path / "data"),
           "CUDA_VISIBLE_DEVICES": ""}
    out = subprocess.run([sys.executable, "-m", module[0], *module[1]], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, f"{where}\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}"
