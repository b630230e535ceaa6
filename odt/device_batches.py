"""Training batches drawn on the training device (Algorithm 3 without a host round-trip).

The replay buffer keeps its trajectories as numpy arrays (the FIFO and the relabeling are host
work done once per round). This module mirrors them on the training device, already in the
form the model reads (states normalised, returns-to-go scaled), and draws each batch there with
a torch generator: trajectory by length (or return), start uniformly within it, K steps with
right padding, all as tensor ops. A GPU update then never waits for numpy or a copy.

The mirror is refreshed when the buffer's arrays change (a rollout entered it, or a new buffer
replaced it): at most once per online round, one copy of the buffer each time.

On the CPU, the host sampler (``TrajectoryBuffer.sample`` with numpy) stays the default: it is
what every committed cpu-preset record ran, so those runs can be redone bit for bit, and it is
no slower there (see ``paper_tables/perf/PERF.md``). Both draw from the same law; a seed gives other
windows in each.
"""

from __future__ import annotations

import numpy as np
import torch

from odt.buffer import TrajectoryBuffer
from odt.sampling import sample_windows_torch


class DeviceBatches:
    def __init__(self, device: torch.device, state_mean: np.ndarray, state_std: np.ndarray,
                 rtg_scale: float, max_ep_len: int, seed: int):
        self.device = device
        self.generator = torch.Generator(device=device).manual_seed(seed)
        self.state_mean = torch.as_tensor(state_mean, dtype=torch.float32, device=device)
        self.state_std = torch.as_tensor(state_std, dtype=torch.float32, device=device)
        self.rtg_scale, self.max_ep_len = rtg_scale, max_ep_len
        self._source: tuple[object, object] | None = None  # the buffer arrays last mirrored
        self._probs: dict[str, torch.Tensor] = {}  # per strategy, for the arrays last mirrored

    def _mirror(self, buffer: TrajectoryBuffer) -> None:
        """Copy the buffer to the device if its arrays changed since the last copy."""
        if self._source is not None and self._source[0] is buffer.data and self._source[1] is buffer.rtg:
            return
        d = buffer.data
        to = lambda a, dtype=torch.float32: torch.as_tensor(a, dtype=dtype, device=self.device)  # noqa: E731
        self.states = (to(d.observations) - self.state_mean) / self.state_std
        self.actions = to(d.actions)
        self.rtg = to(buffer.rtg) / self.rtg_scale
        self.starts, self.lengths = to(d.starts, torch.long), to(d.lengths, torch.long)
        self._probs = {}
        self._source = (buffer.data, buffer.rtg)

    def _probabilities(self, buffer: TrajectoryBuffer, strategy: str) -> torch.Tensor:
        if strategy not in self._probs:
            self._probs[strategy] = torch.as_tensor(buffer.probabilities(strategy), device=self.device)
        return self._probs[strategy]

    def sample(self, buffer: TrajectoryBuffer, batch_size: int, context_len: int,
               strategy: str = "length") -> dict[str, torch.Tensor]:
        """A batch of windows as the model reads them (the same keys as the host path)."""
        self._mirror(buffer)
        flat, mask, timesteps = sample_windows_torch(self.generator, self.starts, self.lengths,
                                                     self._probabilities(buffer, strategy), batch_size, context_len)
        return {
            "states": self.states[flat],
            "actions": self.actions[flat],
            "rtg": self.rtg[flat][..., None],
            "timesteps": timesteps.clamp_max(self.max_ep_len - 1),
            "mask": mask,
        }

    def state_dict(self) -> dict:
        return {"generator": self.generator.get_state()}

    def load_state_dict(self, state: dict) -> None:
        self.generator.set_state(state["generator"])
