"""The no-new-data control (``odt-control``): ODT's finetuning schedule without online data.

What makes it a control: it shares everything with ``odt`` (pretraining, the rate switch, the
buffer's initial trajectories, one exploration rollout per round, the sample budget) except
that the rollouts never enter the buffer. On an environment whose episodes all have the same
length, both arms then spend the budget in the same number of rounds and updates.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from benchmarks.methods import method_config
from odt.train import ODTTrainer
from rlbase.envs import random_policy_episodes
from rlbase.trajectories import Trajectories

EPISODE = 25  # Pendulum never terminates: every rollout is exactly this long


def make_pendulum() -> gym.Env:
    return gym.make("Pendulum-v1", max_episode_steps=EPISODE)


@pytest.fixture(scope="module")
def pendulum_data() -> Trajectories:
    return Trajectories.from_episodes(random_policy_episodes(make_pendulum, 20 * EPISODE, seed=3))


def _trainer(method: str, data: Trajectories) -> ODTTrainer:
    overrides = {"online.online_samples": 4 * EPISODE, "online.buffer_size": 6,
                 "online.eval_every_rounds": 100, "online.lr": 5e-4}
    cfg = method_config(method, "hopper-medium", "smoke", seed=7, overrides=overrides)
    return ODTTrainer(cfg, data, make_pendulum, progress=False)


def _params(trainer: ODTTrainer) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in trainer.model.parameters()])


def _buffer_arrays(trainer: ODTTrainer) -> dict[str, np.ndarray]:
    return {k: np.array(v) for k, v in trainer.buffer.state_dict().items() if isinstance(v, np.ndarray)}


def _run(method: str, data: Trajectories) -> dict:
    """One whole run, start to end (dropout draws from torch's global generator, which each
    trainer seeds when it is built: two trainers must not interleave in one process)."""
    trainer = _trainer(method, data)
    trainer.pretrain()
    after_pretraining = dict(params=_params(trainer), buffer=_buffer_arrays(trainer),
                             lr=[g["lr"] for g in trainer.optimizer.param_groups])
    trainer.finetune()
    trainer.close()
    return dict(trainer=trainer, **after_pretraining)


def test_control_differs_from_odt_only_in_the_buffer_insertions(pendulum_data):
    odt, control = _run("odt", pendulum_data), _run("odt-control", pendulum_data)
    a, b = odt["trainer"], control["trainer"]
    assert a.cfg.online.add_rollouts and not b.cfg.online.add_rollouts
    # bit-identical pretraining, the same rate switch and the same initial buffer
    torch.testing.assert_close(odt["params"], control["params"], rtol=0, atol=0)
    assert odt["lr"] == control["lr"]
    start = control["buffer"]
    for k, v in odt["buffer"].items():
        np.testing.assert_array_equal(v, start[k])

    for key in ("updates", "online_samples", "rounds"):
        assert getattr(a.counters, key) == getattr(b.counters, key), key
    assert b.counters.rounds == 4 and b.counters.online_samples == 4 * EPISODE

    # the control's buffer never changed; ODT's took in the four rollouts
    for k, v in _buffer_arrays(b).items():
        np.testing.assert_array_equal(v, start[k], err_msg=k)
    assert len(a.buffer) == 6
    assert a.buffer.data.lengths[-4:].tolist() == [EPISODE] * 4
    assert not np.array_equal(a.buffer.data.observations[-EPISODE:], start["observations"][-EPISODE:])
    # and the two policies did train on different data online
    assert not torch.equal(_params(a), _params(b))


def test_control_is_registered_and_overridable():
    cfg = method_config("odt-control", "hopper-medium", "cpu", seed=0)
    base = method_config("odt", "hopper-medium", "cpu", seed=0)
    assert cfg.online.add_rollouts is False and base.online.add_rollouts is True
    cfg.online.add_rollouts = True
    assert cfg == base  # nothing else differs
