"""What the reference checks share: loading a reference file, recording findings, writing a section.

A reference file is imported from the folder an environment variable names, under stand-ins
for the modules it imports at the top and this project does not install (experiment trackers,
CLI parsers, the old ``gym``): the checks only use its classes and functions, never its
training entry point, so the stand-ins only have to let the import succeed.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sys
import types
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from rlbase.config import ConfigError


@dataclass(frozen=True)
class Reference:
    module: types.ModuleType
    path: Path  # the file imported
    root: Path  # the folder the environment variable names
    sha256: str
    commit: str | None  # the upstream commit this file is known to come from (None: unknown)


def locate(env_var: str, relative: str, hint: str, environ: Mapping[str, str] | None = None) -> tuple[Path, Path]:
    """(root, file): the folder ``env_var`` names and ``relative`` inside it; ConfigError naming
    the variable when it is unset or the file is not there."""
    env = os.environ if environ is None else environ
    where = env.get(env_var)
    if not where:
        raise ConfigError(f"{env_var} is not set: this check needs {relative} from outside the repository; {hint}")
    root = Path(where).expanduser().resolve()
    path = root / relative
    if not path.is_file():
        raise ConfigError(f"{env_var}={where}: no {relative} there; {hint}")
    return root, path


def stand_in(name: str, **attributes: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attributes)
    return module


def _importable(name: str) -> bool:
    """Whether ``import name`` works here (a module can be found and still fail to import, e.g.
    ``torch.utils.tensorboard`` without the ``tensorboard`` package)."""
    try:
        importlib.import_module(name)
    except Exception:  # noqa: BLE001 - any failure means the stand-in is needed
        return False
    return True


@contextlib.contextmanager
def _modules(stand_ins: Mapping[str, types.ModuleType]) -> Iterator[None]:
    """``stand_ins`` in ``sys.modules`` for the duration, each only where the real module cannot
    be imported; what was there before is put back."""
    saved = {name: sys.modules.get(name) for name in stand_ins}
    try:
        for name, module in stand_ins.items():
            if name not in sys.modules and not _importable(name):
                sys.modules[name] = module
        yield
    finally:
        for name, before in saved.items():
            if before is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = before


def load(env_var: str, relative: str, hint: str, stand_ins: Mapping[str, types.ModuleType],
         known: Mapping[str, str], environ: Mapping[str, str] | None = None) -> Reference:
    """Import the reference file ``relative`` under the folder ``env_var`` names, as a module of
    its own (``known``: sha256 of the file -> the upstream commit it is from)."""
    root, path = locate(env_var, relative, hint, environ)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    spec = importlib.util.spec_from_file_location(f"_reference_{path.stem}_{digest[:8]}", path)
    module = importlib.util.module_from_spec(spec)
    with _modules(stand_ins):
        spec.loader.exec_module(module)
    return Reference(module, path, root, digest, known.get(digest))


class BoxEnv(gym.Env):
    """Observations N(0, 1) of ``obs_dim``, actions in [low, high], reward the action's sum;
    episodes truncate at ``length``. What the codes' constructors read of an environment."""

    def __init__(self, low, high, obs_dim: int, length: int = 1000):
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (obs_dim,), np.float32)
        self.action_space = gym.spaces.Box(np.asarray(low, np.float32), np.asarray(high, np.float32))
        self.length, self._t = length, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        return self.np_random.normal(size=self.observation_space.shape).astype(np.float32), {}

    def step(self, action):
        self._t += 1
        obs = self.np_random.normal(size=self.observation_space.shape).astype(np.float32)
        return obs, float(np.sum(action)), False, self._t >= self.length, {}


# ----- findings and their section ------------------------------------------------------------
@dataclass(frozen=True)
class Finding:
    component: str
    same: bool
    measured: str  # what was compared and the largest difference, or the two values
    note: str = ""  # for a difference: why it is kept, and what it would change


def findings_table(findings: list[Finding]) -> str:
    rows = ["| component | verdict | measured | why / effect |", "| --- | --- | --- | --- |"]
    for f in findings:
        cells = [f.component, "same" if f.same else "**differs**", f.measured, f.note or ""]
        rows.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    return "\n".join(rows)


TITLE = "# Baselines against their reference code (component checks)\n"


def write_section(path: Path, heading: str, body: str) -> Path:
    """Put ``heading`` + ``body`` into the markdown file at ``path``: replace the section of that
    heading (up to the next ``## `` heading) where it exists, else append it; the file is
    created with a title where absent. Other sections are left as they are."""
    path = Path(path)
    text = path.read_text() if path.exists() else TITLE
    lines = text.splitlines()
    section = [heading, "", *body.strip("\n").splitlines(), ""]
    if heading in lines:
        start = lines.index(heading)
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
        lines = lines[:start] + section + lines[end:]
    else:
        lines = lines + ([""] if lines and lines[-1] else []) + section
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines).rstrip("\n") + "\n")
    return path


def code_version(paths: tuple[str, ...] = ("baselines", "odt", "benchmarks/reference_checks")) -> str:
    """This checkout's commit, with "+changes" where ``paths`` have uncommitted changes ("unknown" outside git)."""
    import subprocess
    root = Path(__file__).resolve().parents[2]
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", *paths], cwd=root, capture_output=True,
                               text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return sha + ("+changes" if dirty else "")


def max_abs(a: Any, b: Any) -> float:
    """Largest absolute difference of two arrays or tensors (compared in float64)."""
    import torch

    def f64(x):
        return (x.detach() if isinstance(x, torch.Tensor) else torch.as_tensor(np.asarray(x))).to(torch.float64)
    return float((f64(a) - f64(b)).abs().max())
