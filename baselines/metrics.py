"""Training metrics kept on the device, read back once per interval.

An update adds its metrics to a float64 sum on the device, with no host read (a read waits for
the device to finish its queued work). The loops read the sums every ``READ_EVERY_UPDATES``
updates and at every evaluation and checkpoint; a NaN or inf among the values since the last
logged row makes the sum non-finite, and the read raises ``TrainingDiverged``, at most
``READ_EVERY_UPDATES`` updates after the update that caused it. Float64 sums of float32 values
added in order are the float sums of the per-update values, so the logged means do not depend on
when they are read.
"""

from __future__ import annotations

import math

import torch

from rlbase.training import TrainingDiverged

READ_EVERY_UPDATES = 100  # the baselines' loops read their metrics, and look for a divergence, this often


class DeviceMeans:
    """Sums of named per-update metrics since the last logged row, kept on ``device``."""

    def __init__(self, names: tuple[str, ...], device: torch.device | str = "cpu"):
        self.names, self.device = tuple(names), torch.device(device)
        self._sums: torch.Tensor | None = None
        self.count = 0

    def add(self, values: dict[str, torch.Tensor]) -> None:
        """Add one update's metrics (0-d tensors, keyed by ``names``); no host read."""
        stacked = torch.stack([values[n].detach() for n in self.names]).double()
        if self._sums is None:
            self._sums = torch.zeros(len(self.names), dtype=torch.float64, device=stacked.device)
        self._sums += stacked
        self.count += 1

    def means(self, what: str, updates: int) -> dict[str, float]:
        """The means since the last logged row (one host read); raises ``TrainingDiverged``
        naming ``what`` and the update count when one of them is NaN or inf."""
        if not self.count:
            return {}
        out = {n: s / self.count for n, s in zip(self.names, self._sums.tolist(), strict=True)}
        bad = {n: v for n, v in out.items() if not math.isfinite(v)}
        if bad:
            raise TrainingDiverged(f"{what} losses {bad} within the {self.count} updates up to update {updates}")
        return out

    def pop(self, what: str, updates: int) -> dict[str, float]:
        """``means``, then a fresh window for the next logged row."""
        out = self.means(what, updates)
        self._sums, self.count = None, 0
        return out

    def state_dict(self) -> dict:
        """The sums as floats (a checkpoint's layout: ``{"sums": {name: float}, "count": n}``)."""
        sums = dict(zip(self.names, self._sums.tolist(), strict=True)) if self.count else {}
        return {"sums": sums, "count": self.count}

    def load_state_dict(self, state: dict) -> None:
        self.count = int(state["count"])
        self._sums = (torch.tensor([float(state["sums"][n]) for n in self.names], dtype=torch.float64,
                                   device=self.device) if self.count else None)


def read_metrics(values: dict[str, torch.Tensor], what: str, update: int) -> dict[str, float]:
    """One update's metrics as floats (one host read); raises ``TrainingDiverged`` when one is
    NaN or inf. For scripts and tests that want floats after every update."""
    out = dict(zip(values, torch.stack([v.detach() for v in values.values()]).tolist(), strict=True))
    if not all(math.isfinite(v) for v in out.values()):
        raise TrainingDiverged(f"{what} losses {out} at update {update}")
    return out
