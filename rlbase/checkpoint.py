"""Checkpoints written atomically, verified on load, the last few kept.

A checkpoint is ``ckpt-<updates>.pt`` plus ``ckpt-<updates>.sha256``. Both are written to a
temporary name, flushed to disk and renamed, the checksum last: a checkpoint without its
checksum, or whose bytes do not match it, is incomplete or corrupt and is skipped in favour of
the previous one. Loading returns what was skipped so the run can record it.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import torch

_NAME = re.compile(r"^ckpt-(\d{12})\.pt$")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write data to path so that readers see either the old file or the whole new one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass
class LoadResult:
    state: dict | None
    path: Path | None
    skipped: list[str] = field(default_factory=list)  # "name: reason" for each bad checkpoint


class CheckpointManager:
    def __init__(self, directory: str | os.PathLike, keep: int = 2):
        if keep < 1:
            raise ValueError(f"keep={keep} must be >= 1")
        self.directory = Path(directory)
        self.keep = keep

    def paths(self) -> list[Path]:
        """Checkpoint files, oldest first."""
        if not self.directory.is_dir():
            return []
        found = [p for p in self.directory.iterdir() if _NAME.match(p.name)]
        return sorted(found, key=lambda p: int(_NAME.match(p.name).group(1)))

    def save(self, state: dict, step: int) -> Path:
        buf = io.BytesIO()
        torch.save(state, buf)
        data = buf.getvalue()
        path = self.directory / f"ckpt-{step:012d}.pt"
        atomic_write_bytes(path, data)
        atomic_write_bytes(path.with_suffix(".sha256"), hashlib.sha256(data).hexdigest().encode())
        self._prune()
        return path

    def _prune(self) -> None:
        for old in self.paths()[:-self.keep]:
            old.with_suffix(".sha256").unlink(missing_ok=True)
            old.unlink(missing_ok=True)

    def load_latest(self, map_location: str | torch.device = "cpu") -> LoadResult:
        """The newest checkpoint that verifies; older ones are tried when it does not."""
        skipped: list[str] = []
        for path in reversed(self.paths()):
            reason = self._verify(path)
            if reason is None:
                try:
                    state = torch.load(path, map_location=map_location, weights_only=False)
                    return LoadResult(state, path, skipped)
                except Exception as exc:  # a file that verifies but fails to load is still bad
                    reason = f"load failed: {exc}"
            skipped.append(f"{path.name}: {reason}")
        return LoadResult(None, None, skipped)

    @staticmethod
    def _verify(path: Path) -> str | None:
        digest_path = path.with_suffix(".sha256")
        if not digest_path.exists():
            return "no checksum (write did not finish)"
        expected = digest_path.read_text().strip()
        actual = hashlib.sha256(path.read_bytes()).hexdigest()
        return None if actual == expected else "checksum mismatch (corrupt or truncated)"
