"""Algorithm 1 and 2: offline pretraining, then the online loop, resumable at every step.

The trainer owns a learner (model, optimisers, lambda: odt/learner.py), the replay buffer, the
RNGs, the counters, the environments and evaluation; ``state_dict`` captures all of them, so a
run restored from a checkpoint takes the same next batch and reaches the same result as one that
never stopped. Loops, progress and logging live here; the update is the learner's, the math is
in objective.py, sampling.py and relabel.py.

The update loop never waits for the device: ``step`` keeps its metrics as device tensors
(summed in float64, so the logged means equal float sums of per-update values) and the learner
records a non-finite loss instead of reading it; the loops read both once per logging interval
(every ``READ_EVERY_UPDATES`` updates while pretraining, once per online round) and at
checkpoints, where a recorded divergence raises ``TrainingDiverged`` with the update it
happened at.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch

from odt.buffer import TrajectoryBuffer
from odt.config import ODTConfig
from odt.device_batches import DeviceBatches
from odt.learner import ODTLearner
from odt.rollout import Conditioning, RolloutResult, run_episodes
from rlbase.clock import Stopwatch
from rlbase.envs import VectorEnvPool, summarize_returns
from rlbase.progress import ProgressBar, progress_bar
from rlbase.protocol import evaluation_episodes
from rlbase.seeds import device_batch_seed, evaluation_seeds, exploration_seed, run_seed
from rlbase.training import (
    RunningMeans,
    SafePoints,
    TrainingDiverged,
    read_floats,
    resolve_device,
)
from rlbase.trajectories import Trajectories

EnvFactory = Callable[[], gym.Env]
ScoreFn = Callable[[np.ndarray], np.ndarray]  # raw returns -> normalised scores
Logger = Callable[[dict], None]
READ_EVERY_UPDATES = 50  # pretraining reads its metrics and divergence flag this often


def resolve_batch_sampling(name: str, device: torch.device) -> str:
    """``auto``: batches drawn on the device when it is a GPU, by numpy on the host on a CPU."""
    if name == "auto":
        return "host" if device.type == "cpu" else "device"
    return name


@dataclass
class Counters:
    updates: int = 0  # gradient updates, pretraining and online together
    online_samples: int = 0  # environment steps taken by exploration rollouts
    rounds: int = 0  # online rounds (rollout + I updates) completed
    evaluations: int = 0
    pretrain_done: bool = False
    wall_time: float = 0.0  # seconds of training, summed over restarts
    cpu_time: float = 0.0  # this process's CPU seconds over the same spans


class ODTTrainer:
    """The loop around an ``ODTLearner``: data and replay buffer, batches, exploration,
    evaluation, the two phases, counters, RNGs and checkpoints."""

    def __init__(self, cfg: ODTConfig, dataset: Trajectories, make_env: EnvFactory,
                 score_fn: ScoreFn | None = None, progress: bool = True):
        cfg.validate()
        self.cfg, self.dataset, self.make_env = cfg, dataset, make_env
        self.score_fn = score_fn
        self.progress = progress
        self.device = resolve_device(cfg.device)
        self.obs_dim, self.act_dim = dataset.obs_dim, dataset.act_dim
        self._check_env_shapes()

        torch.manual_seed(run_seed(cfg.seed))  # the model's initial weights are the first draws after it
        self.rng = np.random.default_rng(run_seed(cfg.seed))
        self.learner = ODTLearner(cfg, self.obs_dim, self.act_dim, self.device)
        self.state_mean, self.state_std = dataset.state_statistics()
        self.buffer = TrajectoryBuffer(len(dataset), dataset)  # pretraining samples all the data
        self.batch_sampling = resolve_batch_sampling(cfg.batch_sampling, self.device)
        self._device_batches = (DeviceBatches(self.device, self.state_mean, self.state_std, cfg.rtg_scale,
                                              cfg.model.max_ep_len, device_batch_seed(cfg.seed))
                                if self.batch_sampling == "device" else None)
        self.counters = Counters()
        self._running = RunningMeans()
        self._envs = VectorEnvPool(make_env)
        self.safe_points = SafePoints()  # the stop flag; safe points: after an update, after a round

    # ----- construction helpers ----------------------------------------------------------
    def _check_env_shapes(self) -> None:
        env = self.make_env()
        try:
            obs_shape, act_shape = env.observation_space.shape, env.action_space.shape
        finally:
            env.close()
        if obs_shape != (self.obs_dim,) or act_shape != (self.act_dim,):
            raise ValueError(
                f"dataset shapes (obs {self.obs_dim}, act {self.act_dim}) do not fit the environment "
                f"(obs {obs_shape}, act {act_shape})")

    # ----- the learner's parts, as attributes of the trainer --------------------------------
    @property
    def model(self) -> torch.nn.Module:
        return self.learner.model

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        return self.learner.optimizer

    @property
    def scheduler(self) -> torch.optim.lr_scheduler.LambdaLR:
        return self.learner.scheduler

    @property
    def log_lambda(self) -> torch.Tensor:
        return self.learner.log_lambda

    @property
    def lambda_optimizer(self) -> torch.optim.Optimizer:
        return self.learner.lambda_optimizer

    @property
    def target_entropy(self) -> float:
        return self.learner.target_entropy

    @property
    def lam(self) -> float:
        return self.learner.lam

    def _precision(self) -> AbstractContextManager[None]:
        return self.learner.precision()

    def request_stop(self) -> None:
        """Ask the running phase to checkpoint and raise StopRequested at its next safe
        point (after the current update while pretraining, after the current round online).
        Safe to call from a signal handler."""
        self.safe_points.request()

    def _save(self, checkpoint: Callable[[], None] | None) -> None:
        """Checkpoint only a model whose losses and parameters are finite, so the last good one stays."""
        self.safe_points.save(checkpoint, self._check_state_finite)

    def _check_state_finite(self) -> None:
        self.check_finite()
        if not self.learner.parameters_finite():
            raise TrainingDiverged(f"parameters became NaN or inf by update {self.counters.updates}; "
                                   "the last good checkpoint is kept")

    def _stop_if_requested(self) -> None:
        self.safe_points.stop_if_requested(f"update {self.counters.updates}")

    # ----- one gradient update (Algorithm 2, lines 3-8) ----------------------------------
    def batch_tensors(self, buffer: TrajectoryBuffer) -> dict[str, torch.Tensor]:
        c = self.cfg
        if self._device_batches is not None:
            return self._device_batches.sample(buffer, c.optim.batch_size, c.model.context_len, c.online.sampling)
        idx, raw = buffer.sample(self.rng, c.optim.batch_size, c.model.context_len, c.online.sampling)
        to = lambda a, dtype=torch.float32: torch.as_tensor(a, dtype=dtype, device=self.device)  # noqa: E731
        return {
            "states": to((raw["observations"] - self.state_mean) / self.state_std),
            "actions": to(raw["actions"]),
            "rtg": to(raw["rtg"][..., None] / c.rtg_scale),
            "timesteps": to(np.minimum(idx.timesteps, c.model.max_ep_len - 1), torch.long),
            "mask": to(idx.mask, torch.bool),
        }

    def check_finite(self) -> None:
        """Raise TrainingDiverged if a loss since the start was NaN or inf (one host read)."""
        found = self.learner.first_divergence()
        if found is not None:
            at, loss = found
            raise TrainingDiverged(f"loss is {loss} at update {at}")

    def step(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The learner's update, counted and added to the running means; no host read (read
        the metrics with read_floats at a logging interval; check_finite raises a divergence)."""
        metrics = self.learner.step(batch)
        self.counters.updates += 1
        self._running.add(metrics)
        return metrics

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """``step``, then its divergence check and metrics read at once: for scripts and tests
        that want floats after every update (the training loops read once per interval)."""
        metrics = self.step(batch)
        self.check_finite()
        return read_floats(metrics)

    # ----- evaluation --------------------------------------------------------------------
    def conditioning(self, target_return: float) -> Conditioning:
        return Conditioning(target_return=target_return, rtg_scale=self.cfg.rtg_scale,
                            state_mean=self.state_mean, state_std=self.state_std,
                            context_len=self.cfg.model.eval_context_len)

    def evaluate(self, episodes: int | None = None, g_eval: float | None = None) -> dict:
        """Mean-action episodes in parallel; returns raw and (if known) normalised scores."""
        n = episodes or self.cfg.eval_episodes
        g = self.cfg.g_eval if g_eval is None else g_eval
        result = run_episodes(self.model, self._envs.get(n), self.conditioning(g),
                              seeds=evaluation_seeds(self.cfg.seed, self.counters.evaluations, n), sample=False)
        self.counters.evaluations += 1
        return {**summarize_returns(result.returns, result.lengths, self.score_fn), "g_eval": g}

    def _lambda_now(self) -> dict[str, float]:
        """The current lambda for stochastic policies (DT's deterministic head has none)."""
        return {"lambda": self.lam} if self.cfg.model.stochastic else {}

    def _postfix(self, m: dict[str, float], **first: str) -> dict[str, str]:
        shown = {**first, "nll": f"{m['nll']:.3f}"}
        if "entropy" in m:
            shown.update(ent=f"{m['entropy']:.2f}", lam=f"{m['lambda']:.3f}")
        return shown

    def _eval_row(self, phase: str, log: Logger | None, ends_phase: bool = True, **extra: float) -> dict:
        """Evaluate and log one curve row; ``ends_phase`` False: an evaluation in between, which
        runs ``eval_episodes_interim`` episodes where that is set."""
        self.check_finite()
        c = self.cfg
        episodes = evaluation_episodes(c.eval_episodes, c.eval_episodes_interim, ends_phase)
        row = {"phase": phase, "updates": self.counters.updates,
               "online_samples": self.counters.online_samples, "rounds": self.counters.rounds,
               **self._running.pop(), **self._lambda_now(), **extra, **self.evaluate(episodes)}
        if log is not None:
            log(row)
        return row

    def _say(self, bar: ProgressBar, row: dict) -> None:
        if self.progress:
            bar.write(describe_row(row))

    # ----- Algorithm 2 on the offline data -----------------------------------------------
    def pretrain(self, log: Logger | None = None, checkpoint: Callable[[], None] | None = None) -> dict | None:
        """Pretrain until cfg.pretrain_updates; resumes from the counters. Returns the
        evaluation row at the end of pretraining (None if it was already done)."""
        c, k = self.cfg, self.counters
        if k.pretrain_done:
            return None
        bar = progress_bar(total=c.pretrain_updates, initial=k.updates, desc="pretrain", unit="upd",
                           enabled=self.progress)
        clock = Stopwatch(k)
        row = None
        while k.updates < c.pretrain_updates:
            m = self.step(self.batch_tensors(self.buffer))
            bar.update(1)
            if k.updates % READ_EVERY_UPDATES == 0:  # the logging interval: one host read
                self.check_finite()
                bar.set_postfix(self._postfix(read_floats(m)))
            if k.updates % c.eval_every_updates == 0 and k.updates < c.pretrain_updates:
                row = self._eval_row("pretrain", log, ends_phase=False)
                self._say(bar, row)
            if SafePoints.crossed(k.updates - 1, k.updates, c.checkpoint_every_updates) or self.safe_points.requested:
                clock.lap()
                self._save(checkpoint)
                self._stop_if_requested()
        bar.close()
        row = self._eval_row("pretrain", log)
        self._say(bar, row)
        k.pretrain_done = True
        clock.lap()
        if c.online.lr is not None:  # the warmup factor keeps applying to the new base rate
            self.learner.set_base_lr(c.online.lr)
        self.buffer = TrajectoryBuffer.from_offline(self.dataset, c.online.buffer_size,
                                                    c.online.buffer_init, self.rng)
        self._save(checkpoint)
        self._stop_if_requested()
        return row

    # ----- Algorithm 1: the online loop --------------------------------------------------
    def exploration_rtg(self) -> float:
        o = self.cfg.online
        if o.exploration_rtg == "curriculum":
            return float(np.percentile(self.buffer.returns(), o.curriculum_q))
        return o.g_online

    def explore(self) -> RolloutResult:
        """One exploration episode with sampled actions, conditioned on g_online; it enters the
        buffer unless ``online.add_rollouts`` is off (the control), and counts toward the budget
        either way."""
        g = self.exploration_rtg()
        seed = exploration_seed(self.cfg.seed, self.counters.rounds)
        gen = torch.Generator(device=self.device).manual_seed(seed)
        result = run_episodes(self.model, self._envs.get(1), self.conditioning(g), seeds=[seed],
                              sample=True, generator=gen)
        if self.cfg.online.add_rollouts:  # False: the no-new-data control (odt-control)
            self.buffer.add(result.episodes[0], relabel=self.cfg.online.hindsight_relabel, initial_rtg=g)
        self.counters.online_samples += int(result.lengths[0])
        return result

    @property
    def online_updates(self) -> int:
        """Gradient updates made in the online phase (every round makes updates_per_round)."""
        return self.counters.rounds * self.cfg.online.updates_per_round

    def online_progress(self) -> tuple[int, int]:
        """(spent, budget) of the online phase's stopping rule: environment steps against
        ``online.online_samples``, or, where ``online.online_updates`` is set, online updates
        against it."""
        o = self.cfg.online
        if o.online_updates > 0:
            return self.online_updates, o.online_updates
        return self.counters.online_samples, o.online_samples

    def online_done(self) -> bool:
        spent, budget = self.online_progress()
        return spent >= budget

    def finetune(self, log: Logger | None = None, checkpoint: Callable[[], None] | None = None) -> dict | None:
        """Rounds of (rollout, buffer refresh, I updates) until the online budget is spent:
        ``online.online_samples`` environment steps, or ``online.online_updates`` updates where set."""
        c, k = self.cfg, self.counters
        if not k.pretrain_done:
            raise RuntimeError("finetune() before pretrain() finished")
        spent, budget = self.online_progress()
        by_updates = c.online.online_updates > 0
        bar = progress_bar(total=budget, initial=min(spent, budget), desc="online", unit="upd" if by_updates else "step",
                           enabled=self.progress and budget > 0)
        row = None
        while not self.online_done():
            clock = Stopwatch(k)
            before = self.online_progress()[0]
            explored = self.explore()
            for _ in range(c.online.updates_per_round):
                m = self.step(self.batch_tensors(self.buffer))
            k.rounds += 1
            self.check_finite()  # the round is the online logging interval: one host read
            bar.update(min(self.online_progress()[0], budget) - min(before, budget))
            bar.set_postfix(self._postfix(read_floats(m), ret=f"{explored.returns[0]:.0f}"))
            done = self.online_done()
            if k.rounds % c.online.eval_every_rounds == 0 or done:
                # the exploration side of the round too: Fig. 6 plots g_online over time
                row = self._eval_row("online", log, ends_phase=done,
                                     exploration_rtg=self.exploration_rtg(),
                                     exploration_return=float(explored.returns[0]))
                self._say(bar, row)
            clock.lap()
            crossed = SafePoints.crossed(k.updates - c.online.updates_per_round, k.updates, c.checkpoint_every_updates)
            if crossed or self.safe_points.requested or done:
                self._save(checkpoint)
            self._stop_if_requested()
        bar.close()
        return row

    # ----- checkpointing -----------------------------------------------------------------
    def state_dict(self) -> dict:
        """One flat dict: the learner's keys (model, optimizer, scheduler, log_lambda,
        lambda_optimizer, divergence) beside the loop's; checkpoints of either layout load."""
        return {
            **self.learner.state_dict(),
            "buffer": self.buffer.state_dict(),
            "counters": dict(vars(self.counters)),
            "running": self._running.state_dict(),
            "batch_generator": None if self._device_batches is None else self._device_batches.state_dict(),
            "rng_numpy": self.rng.bit_generator.state,
            "rng_torch": torch.get_rng_state(),
            "rng_cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
        }

    def load_state_dict(self, state: dict) -> None:
        self.learner.load_state_dict(state)
        self.buffer = TrajectoryBuffer.from_state_dict(state["buffer"])
        self.counters = Counters(**state["counters"])
        self._running = RunningMeans(dict(state["running"]["sums"]), state["running"]["count"])
        if self._device_batches is not None and state.get("batch_generator") is not None:
            self._device_batches.load_state_dict(state["batch_generator"])
        self.rng.bit_generator.state = state["rng_numpy"]
        torch.set_rng_state(state["rng_torch"])
        if state.get("rng_cuda") is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["rng_cuda"])

    def close(self) -> None:
        self._envs.close()


def describe_row(row: dict) -> str:
    score = f" score {row['score_mean']:.1f}" if "score_mean" in row else ""
    lam = f" lambda {row['lambda']:.4f}" if "lambda" in row else ""
    return (f"[{row['phase']}] updates {row['updates']} samples {row['online_samples']} "
            f"return {row['return_mean']:.1f}{score}{lam}")
