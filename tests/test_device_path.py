"""The GPU path (issue 23): batches drawn on the training device, an update loop that never
reads the device, bf16/TF32 as options. Each test taking ``device`` runs on the CPU here and
again on a CUDA GPU where one is present (``pytest -m cuda``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import make_hopper, toy_trajectories

from odt.buffer import TrajectoryBuffer
from odt.config import make_config
from odt.device_batches import DeviceBatches
from odt.train import READ_EVERY_UPDATES, ODTTrainer, resolve_batch_sampling
from rlbase.config import ConfigError
from rlbase.training import TrainingDiverged

READS = ("item", "tolist", "cpu", "numpy", "__bool__", "__float__", "__int__", "__index__")


def _cfg(device: str, **overrides):
    base = {"online.online_samples": 150, "pretrain_updates": 30, "eval_every_updates": 1000,
            "checkpoint_every_updates": 10, "online.eval_every_rounds": 100, "device": device}
    return make_config("hopper-medium", "online", "smoke", {**base, **overrides})


def _params(trainer: ODTTrainer) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in trainer.model.parameters()]).cpu()


# ----- Algorithm 3 on the device ----------------------------------------------------------
def _batches(data, device: str, seed: int = 0, max_ep_len: int = 1000, rtg_scale: float = 10.0) -> DeviceBatches:
    mean, std = data.state_statistics()
    return DeviceBatches(torch.device(device), mean, std, rtg_scale, max_ep_len, seed)


def _locate(data, states: np.ndarray) -> np.ndarray:
    """The flat step index of each normalised state (toy observations are all distinct)."""
    mean, std = data.state_statistics()
    table = (data.observations - mean) / std
    return np.array([int(np.argmin(np.abs(table - s).sum(axis=1))) for s in states])


def test_device_windows_are_algorithm3_windows(device):
    """Each row: K consecutive steps of one trajectory from its start step, cut at the
    trajectory's end and padded on the right (mask False, timestep 0); states normalised by
    the dataset's statistics, RTG the suffix sum of rewards divided by the scale."""
    data = toy_trajectories([1, 4, 7, 30])
    K, scale = 6, 10.0
    b = {k: v.cpu().numpy() for k, v in _batches(data, device).sample(TrajectoryBuffer(len(data), data), 256, K).items()}
    first = _locate(data, b["states"][:, 0])
    starts = np.concatenate([[0], np.cumsum(data.lengths)])
    mean, std = data.state_statistics()
    for i, flat in enumerate(first):
        traj = int(np.searchsorted(starts, flat, side="right") - 1)
        offset, length = flat - starts[traj], data.lengths[traj]
        valid = min(K, length - offset)
        assert b["mask"][i].tolist() == [True] * valid + [False] * (K - valid)
        assert b["timesteps"][i].tolist() == list(range(offset, offset + valid)) + [0] * (K - valid)
        steps = np.arange(flat, flat + valid)
        np.testing.assert_allclose(b["states"][i, :valid], (data.observations[steps] - mean) / std, rtol=1e-6)
        np.testing.assert_array_equal(b["actions"][i, :valid], data.actions[steps])
        rewards = data.rewards[starts[traj]:starts[traj + 1]].astype(np.float64)
        suffix = np.cumsum(rewards[::-1])[::-1][offset:offset + valid]
        np.testing.assert_allclose(b["rtg"][i, :valid, 0], suffix / scale, rtol=1e-5)


def test_device_timesteps_are_capped_at_the_embedding_table(device):
    data = toy_trajectories([40])
    b = _batches(data, device, max_ep_len=10).sample(TrajectoryBuffer(1, data), 64, 8)
    assert int(b["timesteps"].max()) == 9 and b["timesteps"].dtype == torch.long


@pytest.mark.parametrize("strategy", ["length", "return"])
def test_device_batches_draw_trajectories_by_length_or_return_and_starts_uniformly(device, strategy):
    data = toy_trajectories([2, 6, 12], seed=1)
    n = 30_000
    b = _batches(data, device, seed=5).sample(TrajectoryBuffer(len(data), data), n, 1, strategy)
    flat = _locate(data, b["states"][:, 0].cpu().numpy())
    traj = np.searchsorted(np.cumsum(data.lengths), flat, side="right")
    weight = data.lengths if strategy == "length" else data.returns()  # the paper: by length; ablation: by return
    expected = weight / weight.sum()
    np.testing.assert_allclose(np.bincount(traj, minlength=3) / n, expected, atol=4 * np.sqrt(0.25 / n))
    starts_in_longest = flat[traj == 2] - 8  # steps 8..19 are the third trajectory
    counts = np.bincount(starts_in_longest, minlength=12)
    assert counts.min() > 0 and counts.std() / counts.mean() < 0.1  # uniform over its 12 steps


def test_device_batches_repeat_per_seed_and_resume_from_their_state(device):
    data = toy_trajectories([5, 9, 3])
    buffer = TrajectoryBuffer(len(data), data)
    a, b, other = _batches(data, device, seed=3), _batches(data, device, seed=3), _batches(data, device, seed=4)
    first = a.sample(buffer, 32, 4)
    torch.testing.assert_close(first, b.sample(buffer, 32, 4), rtol=0, atol=0)
    assert not torch.equal(first["states"], other.sample(buffer, 32, 4)["states"])
    state = a.state_dict()
    resumed = _batches(data, device, seed=99)
    resumed.load_state_dict(state)
    torch.testing.assert_close(a.sample(buffer, 32, 4), resumed.sample(buffer, 32, 4), rtol=0, atol=0)


def test_device_copy_follows_the_buffer_as_rollouts_arrive(device):
    data = toy_trajectories([4, 4])
    buffer = TrajectoryBuffer(2, data)
    batches = _batches(data, device)
    batches.sample(buffer, 8, 2)
    episode = data.episode(1)
    episode = {**episode, "observations": np.full_like(episode["observations"], 50.0)}
    buffer.add(episode)  # the first trajectory leaves, this one enters
    mean, std = data.state_statistics()
    seen = batches.sample(buffer, 400, 1)["states"][:, 0].cpu().numpy()
    new = np.isclose(seen, (50.0 - mean) / std).all(axis=1)
    assert 0 < new.sum() < len(seen)
    evicted = (data.observations[:4] - mean) / std
    assert not any(np.isclose(seen, row).all(axis=1).any() for row in evicted)


def test_auto_draws_on_the_device_on_a_gpu_and_on_the_host_on_a_cpu():
    assert resolve_batch_sampling("auto", torch.device("cpu")) == "host"
    assert resolve_batch_sampling("auto", torch.device("cuda")) == "device"
    assert resolve_batch_sampling("device", torch.device("cpu")) == "device"


def test_trainer_with_device_batches_resumes_to_the_same_parameters(hopper_random, device):
    cfg = _cfg(device, batch_sampling="device")
    straight = ODTTrainer(cfg, hopper_random, make_hopper, progress=False)
    straight.pretrain()
    straight.finetune()
    first = ODTTrainer(cfg, hopper_random, make_hopper, progress=False)
    first.pretrain()
    state = first.state_dict()
    resumed = ODTTrainer(cfg, hopper_random, make_hopper, progress=False)
    resumed.load_state_dict(state)
    resumed.finetune()
    assert resumed.counters.updates == straight.counters.updates
    # bit-identical on the CPU; CUDA's embedding backward adds atomically, in no fixed order
    tol = {"rtol": 0, "atol": 0} if device == "cpu" else {"rtol": 1e-4, "atol": 1e-6}
    torch.testing.assert_close(_params(resumed), _params(straight), **tol)


# ----- no host read in the update loop ----------------------------------------------------
def _count_host_reads(monkeypatch, trainer: ODTTrainer, reads: list, where=lambda: None) -> None:
    """Record every Python-level read of a tensor's value (with ``where()``'s tag). The lambda
    optimiser's step counter is left out: torch keeps it as a CPU scalar (not capturable), so
    reading it is no device sync."""
    host_scalars = {id(st["step"]) for st in trainer.lambda_optimizer.state.values()
                    if isinstance(st.get("step"), torch.Tensor) and st["step"].device.type == "cpu"}
    for name in READS:
        real = getattr(torch.Tensor, name)

        def wrapper(self, *args, _real=real, _name=name, **kwargs):
            if id(self) not in host_scalars:
                reads.append((_name, where()))
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, wrapper)


@pytest.mark.parametrize("sampling", ["host", "device"])
def test_host_read_none_in_an_update(hopper_random, device, sampling, monkeypatch):
    trainer = ODTTrainer(_cfg(device, batch_sampling=sampling), hopper_random, make_hopper, progress=False)
    trainer.step(trainer.batch_tensors(trainer.buffer))  # the optimisers make their state
    reads: list[tuple] = []
    _count_host_reads(monkeypatch, trainer, reads)
    for _ in range(20):
        trainer.step(trainer.batch_tensors(trainer.buffer))
    monkeypatch.undo()
    assert reads == []


def test_host_read_none_inside_the_updates_of_a_whole_run(hopper_random, device, monkeypatch):
    """Pretraining and finetuning end to end: reads happen at intervals and in rollouts, never
    inside an update."""
    trainer = ODTTrainer(_cfg(device, batch_sampling="device"), hopper_random, make_hopper, progress=False)
    trainer.step(trainer.batch_tensors(trainer.buffer))
    reads: list[tuple] = []
    inside = {"update": False}
    real_step = trainer.step

    def watched_step(batch):
        inside["update"] = True
        try:
            return real_step(batch)
        finally:
            inside["update"] = False

    monkeypatch.setattr(trainer, "step", watched_step)
    _count_host_reads(monkeypatch, trainer, reads, where=lambda: inside["update"])
    trainer.pretrain()
    trainer.finetune()
    monkeypatch.undo()
    assert trainer.counters.rounds > 0 and reads  # the run did read, between updates
    assert [name for name, in_update in reads if in_update] == []


def test_host_read_pretraining_reads_twice_per_logging_interval(hopper_random, monkeypatch):
    """The divergence flag and the metrics, once per READ_EVERY_UPDATES updates: a run with two
    more intervals makes exactly four more reads."""
    def reads_of(updates: int) -> int:
        trainer = ODTTrainer(_cfg("cpu", pretrain_updates=updates, checkpoint_every_updates=10_000),
                             hopper_random, make_hopper, progress=False)
        trainer.evaluate = lambda *args, **kwargs: {}  # rollouts read the device every step; not counted here
        trainer.step(trainer.batch_tensors(trainer.buffer))
        reads: list[tuple] = []
        with monkeypatch.context() as m:
            _count_host_reads(m, trainer, reads)
            trainer.pretrain()
        return len(reads)

    assert reads_of(1 + 3 * READ_EVERY_UPDATES) - reads_of(1 + READ_EVERY_UPDATES) == 4


# ----- divergence and metrics, read at intervals ------------------------------------------
def test_a_nan_loss_in_the_loop_raises_at_the_next_read_and_saves_nothing(hopper_random, device):
    trainer = ODTTrainer(_cfg(device, pretrain_updates=100), hopper_random, make_hopper, progress=False)
    with torch.no_grad():
        trainer.model.embed_state.weight.fill_(float("nan"))
    saves = []
    with pytest.raises(TrainingDiverged, match=r"^loss is nan at update 0$"):
        trainer.pretrain(checkpoint=lambda: saves.append(trainer.counters.updates))
    assert saves == [] and trainer.counters.updates == 10  # the first checkpoint is the first read


def test_update_raises_the_same_divergence_message_at_once(hopper_random):
    trainer = ODTTrainer(_cfg("cpu"), hopper_random, make_hopper, progress=False)
    trainer.update(trainer.batch_tensors(trainer.buffer))
    with torch.no_grad():
        trainer.model.embed_state.weight.fill_(float("nan"))
    with pytest.raises(TrainingDiverged, match=r"^loss is nan at update 1$"):
        trainer.update(trainer.batch_tensors(trainer.buffer))


def test_logged_means_equal_the_means_of_each_updates_floats(hopper_random):
    """The device-side float64 sums give exactly the means of per-update Python floats."""
    rows: list[dict] = []
    looped = ODTTrainer(_cfg("cpu", pretrain_updates=20, eval_every_updates=10), hopper_random, make_hopper,
                        progress=False)
    looped.pretrain(log=rows.append)
    stepped = ODTTrainer(_cfg("cpu", pretrain_updates=20, eval_every_updates=10), hopper_random, make_hopper,
                         progress=False)
    per_update = [stepped.update(stepped.batch_tensors(stepped.buffer)) for _ in range(10)]
    for key in ("loss", "nll", "entropy"):
        assert rows[0][key] == sum(m[key] for m in per_update) / 10


# ----- precision ---------------------------------------------------------------------------
def test_bf16_runs_the_forward_in_bf16_and_the_loss_in_fp32(hopper_random, device):
    trainer = ODTTrainer(_cfg(device, precision="bf16"), hopper_random, make_hopper, progress=False)
    batch = trainer.batch_tensors(trainer.buffer)
    with trainer._precision():
        mean, _ = trainer.model(batch["states"], batch["actions"], batch["rtg"], batch["timesteps"])
    assert mean.dtype == torch.bfloat16
    before = _params(trainer)
    metrics = [trainer.update(trainer.batch_tensors(trainer.buffer)) for _ in range(5)]
    assert trainer.step(batch)["nll"].dtype == torch.float32  # the loss math ran on fp32 outputs
    assert all(np.isfinite(m["loss"]) for m in metrics)
    assert all(p.dtype == torch.float32 for p in trainer.model.parameters())
    assert not torch.equal(before, _params(trainer))


def test_tf32_is_refused_without_cuda_and_scoped_to_the_forward_with_it(hopper_random, device):
    if device == "cpu":
        with pytest.raises(ValueError, match=r"precision='tf32' needs a CUDA device"):
            ODTTrainer(_cfg("cpu", precision="tf32"), hopper_random, make_hopper, progress=False)
        return
    trainer = ODTTrainer(_cfg(device, precision="tf32"), hopper_random, make_hopper, progress=False)
    before = torch.backends.cuda.matmul.allow_tf32
    with trainer._precision():
        assert torch.backends.cuda.matmul.allow_tf32
    assert torch.backends.cuda.matmul.allow_tf32 == before
    trainer.update(trainer.batch_tensors(trainer.buffer))


@pytest.mark.parametrize("field, value", [("precision", "fp16"), ("batch_sampling", "gpu")])
def test_unknown_precision_or_batch_sampling_is_refused_naming_the_field(field, value):
    with pytest.raises(ConfigError, match=rf"^{field}='{value}' is out of range"):
        make_config("hopper-medium", "online", "smoke", {field: value}).validate()
