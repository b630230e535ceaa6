"""Curve rows for TensorBoard and Weights & Biases: the metrics of a run's ``curve.jsonl``.

``curve.jsonl`` stays the record; these are views of it that users' tools open. Each row
becomes scalars named ``<phase>/<key>`` (``pretrain/score_mean``, ``online/return_mean``,
``online/lambda``, ...; a g_eval sweep row ``<phase>/g_eval=<multiple>x/<key>``) at step
``updates`` (gradient updates so far, increasing over pretraining and finetuning). Every numeric
field of the row is logged except lists (per-episode ``returns``) and the row's labels.

* ``tensorboard``: event files written by ``torch.utils.tensorboard.SummaryWriter`` (needs the
  ``tensorboard`` extra) into ``<run dir>/tensorboard/``; view with
  ``tensorboard --logdir results/<preset>/<experiment>``.
* ``wandb``: a W&B run in ``<run dir>/wandb/``, offline unless ``WANDB_MODE`` says otherwise
  (clusters often have no network; ``wandb sync <dir>`` uploads it later). Project
  ``$WANDB_PROJECT`` (default ``odt-bench``), run name = the run id.

``open_loggers`` starts a run's live loggers and replays the rows it already has (a resumed run
starts from its checkpoint's rows), so what the tools show is exactly ``curve.jsonl``.
"""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

LOGGERS = ("tensorboard", "wandb")
STEP = "updates"
LABELS = ("phase", "g_eval_multiple", STEP)
EXTRAS = {"tensorboard": "pip install -e '.[tensorboard]'", "wandb": "pip install -e '.[wandb]'"}


class LoggerUnavailable(ImportError):
    """The package a logger needs is not installed; the message says which extra installs it."""


def check_loggers(kinds: Sequence[str]) -> tuple[str, ...]:
    """The logger names, validated (ConfigError naming a bad one), without duplicates."""
    from rlbase.config import ConfigError
    for kind in kinds:
        if kind not in LOGGERS:
            raise ConfigError(f"--log {kind!r} is not valid; choose from {', '.join(LOGGERS)}")
    return tuple(dict.fromkeys(kinds))


def require_loggers(kinds: Sequence[str]) -> tuple[str, ...]:
    """``check_loggers``, and each one's package importable (ConfigError naming the extra if not)."""
    import importlib.util

    from rlbase.config import ConfigError
    kinds = check_loggers(kinds)
    for kind in kinds:
        if importlib.util.find_spec(kind) is None:
            raise ConfigError(f"--log {kind} needs the {kind} package, which is not installed: {EXTRAS[kind]}")
    return kinds


def scalars(row: dict[str, Any]) -> tuple[int, dict[str, float]]:
    """(step, {name: value}) of one curve row."""
    phase = str(row.get("phase", "curve"))
    if "g_eval_multiple" in row:
        phase = f"{phase}/g_eval={row['g_eval_multiple']:g}x"
    values = {f"{phase}/{k}": float(v) for k, v in row.items()
              if k not in LABELS and isinstance(v, (int, float)) and not isinstance(v, bool)}
    return int(row.get(STEP, 0)), values


class CurveLogger(Protocol):
    def log(self, row: dict[str, Any]) -> None: ...
    def close(self) -> None: ...


class TensorBoardLogger:
    """Curve rows as TensorBoard scalars in ``directory`` (flushed after each row)."""

    def __init__(self, directory: Path):
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as exc:  # torch's writer needs the tensorboard package
            raise LoggerUnavailable(f"--log tensorboard needs the tensorboard package: {EXTRAS['tensorboard']} "
                                    f"({exc})") from None
        self.writer = SummaryWriter(log_dir=str(directory))

    def log(self, row: dict[str, Any]) -> None:
        step, values = scalars(row)
        for name, value in values.items():
            self.writer.add_scalar(name, value, global_step=step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


@dataclass(frozen=True)
class WandbSettings:
    """Where and as what a W&B run is written."""

    directory: Path
    name: str
    group: str | None = None
    config: dict | None = None
    project: str = ""  # default: $WANDB_PROJECT or "odt-bench"
    mode: str = ""  # default: $WANDB_MODE or "offline"


class WandbLogger:
    """Curve rows as a W&B run (offline by default) under ``settings.directory``."""

    def __init__(self, settings: WandbSettings):
        try:
            import wandb
        except ImportError as exc:
            raise LoggerUnavailable(f"--log wandb needs the wandb package: {EXTRAS['wandb']} ({exc})") from None
        settings.directory.mkdir(parents=True, exist_ok=True)
        self.run = wandb.init(
            project=settings.project or os.environ.get("WANDB_PROJECT") or "odt-bench",
            mode=settings.mode or os.environ.get("WANDB_MODE") or "offline", dir=str(settings.directory),
            name=settings.name, group=settings.group, config=settings.config or {},
            settings=wandb.Settings(silent=True, console="off"), reinit="create_new")

    def log(self, row: dict[str, Any]) -> None:
        step, values = scalars(row)
        values = {k: v for k, v in values.items() if math.isfinite(v)} | {STEP: step}
        self.run.log(values, step=step)

    def close(self) -> None:
        """Finish the run and, unless another W&B run of this process is still open (a caller's
        own run), shut the W&B service down: ``finish`` only informs the service, which closes the
        offline ``.wandb`` file later, so without the teardown a reader (``wandb sync``, a test)
        right after could find it half-written. With another run open the teardown would end that
        run too, so it is left to the caller's own ``finish``/``teardown`` or the process's exit."""
        import wandb

        self.run.finish()
        if not _other_wandb_run_open():
            wandb.teardown()


def _other_wandb_run_open() -> bool:
    """Whether this process has a W&B run not yet finished (wandb 0.31's setup singleton tracks them)."""
    from wandb.sdk import wandb_setup

    return wandb_setup.singleton().most_recent_active_run is not None


def open_logger(kind: str, directory: Path, name: str, group: str | None = None,
                config: dict | None = None) -> CurveLogger:
    """A fresh logger of ``kind`` writing into ``directory`` (emptied first: it is replayed from the curve)."""
    shutil.rmtree(directory, ignore_errors=True)
    if kind == "tensorboard":
        return TensorBoardLogger(directory)
    if kind == "wandb":
        return WandbLogger(WandbSettings(directory, name, group, config))
    check_loggers([kind])
    raise AssertionError(kind)  # unreachable: check_loggers raised


class Loggers:
    """A run's live loggers: ``log(row)`` sends a curve row to each; ``close()`` ends them."""

    def __init__(self, loggers: Sequence[CurveLogger] = ()):
        self.loggers = list(loggers)

    def log(self, row: dict[str, Any]) -> None:
        for logger in self.loggers:
            logger.log(row)

    def close(self) -> None:
        """Close every logger (each even if another fails; the first failure is raised after)."""
        failure = None
        for logger in self.loggers:
            try:
                logger.close()
            except Exception as exc:  # noqa: BLE001 - close the others first
                failure = failure or exc
        self.loggers = []
        if failure is not None:
            raise failure


def open_loggers(kinds: Sequence[str], run_directory: Path, name: str, rows: Sequence[dict] = (),
                 group: str | None = None, config: dict | None = None) -> Loggers:
    """The live loggers of a run (``<run dir>/<kind>/``), with ``rows`` (the curve so far) replayed."""
    out = Loggers()
    try:
        for kind in check_loggers(kinds):
            out.loggers.append(open_logger(kind, Path(run_directory) / kind, name, group, config))
        for row in rows:
            out.log(row)
    except BaseException:
        out.close()
        raise
    return out
