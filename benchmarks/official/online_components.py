"""The online phase, part by part, through our ODT and the unmodified official code.

:mod:`benchmarks.official.components` compares one pretraining update; this module compares
what the online phase adds, feeding both codes the same inputs (the same weights through the
same parameter map, the same trajectories, the same environment seed and the same injected
Gaussian noise), at the ``cpu`` preset's finetuning config of one dataset with dropout 0
(hopper-medium, or another of ``components.DATASETS`` with ``--dataset``), on synthetic data of
its shapes and rollouts in its environment (the registry's: Walker2d-v5 with D4RL's feet):

1. the replay buffer: the initial top-N buffer, then the same rollouts added one by one (FIFO),
   and the returns-to-go each code trains a stored rollout with (hindsight relabelling);
2. segment sampling in the online phase: the law of (trajectory, start) over the buffer, compared
   exactly (trajectory probabilities) and over many draws (chi-square), the padding, the state
   statistics and our data path on the official loader's windows over the online buffer;
3. one exploration rollout in the dataset's environment: the official
   ``Experiment._augment_trajectories`` against our ``ODTTrainer.explore``, step by step
   (conditioning, action mean and std, sampled action, observations, rewards) and the
   trajectory each stores in its buffer;
4. one mean-action evaluation episode at g_eval: the official ``vec_evaluate_episode_rtg`` (as the
   driver calls it) against our ``run_episodes``;
5. the optimisation across the phase switch: pretraining updates then online updates of each
   code's own trainer on the same batches and noise, with the driver's learning-rate switch
   (``OfficialODTAgent._wrap``) on the official side and ours inside ``ODTTrainer.pretrain``:
   learning rate per update, LAMB and temperature-optimizer state, parameters after;
6. 3 and 4 over a whole episode: both codes fed one recorded 1000-step episode of the dataset's
   environment (:class:`ReplayEnv`), so the rolling context, timesteps, returns-to-go and the
   time limit compare step by step where the real environment would amplify float32 rounding.

Noise. Our rollout draws one (1, act_dim) standard normal per step from a generator seeded as
``explore`` seeds it; the official rollout draws from the global torch stream a sample for all K
positions of its padded context and keeps the last. :func:`inject_official_noise` makes the
official distribution's ``base_dist.sample`` return ``loc + eps * scale`` (Normal's formula) with
our step's draw at the last position, so both sample the same action from the same law.

Every row has a verdict: ok (within its tolerance), known difference (reported, not judged) or
DIFFERS. The official code is CC-BY-NC: it is imported from ``ODT_OFFICIAL_SRC``, never copied.
``python -m benchmarks.official.online_components [--dataset NAME] [--out PATH]`` prints the
markdown report.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import torch
from scipy import stats

from benchmarks.datasets.registry import get_spec
from benchmarks.official import components as C
from benchmarks.official.adapters import InProcessVecEnv, OldGymEnv
from benchmarks.official.driver import (
    OFFICIAL_MAX_EP_LEN,
    OfficialODTAgent,
    OfficialODTConfig,
    locate_source,
    official_variant,
)
from odt.buffer import TrajectoryBuffer
from odt.config import ODTConfig
from odt.rollout import run_episodes
from rlbase.config import ConfigError
from rlbase.envs import VectorEnvPool
from rlbase.seeds import exploration_seed

SMALL_CAPACITY = 3  # a buffer smaller than the 5 trajectories the official code keeps offline
NEW_ROLLOUTS = (30, 7, 64, 19, 150)  # lengths of the synthetic rollouts added to both buffers
DRAWS = 20_000  # windows drawn from each code's sampler for the distribution tests
P_MIN = 1e-3  # a sampling-law test fails below this p-value
TOL_ROLLOUT = 1e-4  # rollout: relative difference of float32 quantities over a whole episode
TOL_EXACT = 0.0


# ----- rows --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Check:
    """One comparison. ``value``: the measure's value (see ``measure``); ``tol``: the bound it is
    judged against (None: a known difference, reported and not judged); ``higher_ok``: the value
    passes when >= tol (a p-value) instead of <= tol."""

    area: str
    check: str
    measure: str
    value: float
    tol: float | None
    note: str = ""
    higher_ok: bool = False

    @property
    def ok(self) -> bool | None:
        if self.tol is None:
            return None
        return self.value >= self.tol if self.higher_ok else self.value <= self.tol

    @property
    def verdict(self) -> str:
        return {True: "ok", False: "DIFFERS", None: "known difference"}[self.ok]


class Checks:
    """Collects the Checks of one area."""

    def __init__(self, area: str):
        self.area = area
        self.out: list[Check] = []

    def add(self, check: str, measure: str, value: float, tol: float | None, note: str = "",
            higher_ok: bool = False) -> None:
        self.out.append(Check(self.area, check, measure, float(value), tol, note, higher_ok))

    def rel(self, check: str, official: Any, ours: Any, tol: float | None = TOL_ROLLOUT, note: str = "") -> None:
        """max |official - ours| / max(|official|, |ours|) of two arrays of one shape."""
        self.add(check, "max rel", C.difference(np.asarray(official, dtype=np.float64),
                                                np.asarray(ours, dtype=np.float64))[1], tol, note)

    def same(self, check: str, official: Any, ours: Any, note: str = "", tol: float | None = TOL_EXACT) -> None:
        """0 when the two are equal (compared as Python objects), else 1."""
        self.add(check, "unequal", float(official != ours), tol, note)


# ----- pure helpers (no official code) ------------------------------------------------------------

def ring_in_age_order(items: Sequence[Any], start_idx: int) -> list[Any]:
    """The official ``ReplayBuffer``'s list (a ring whose next slot to overwrite is ``start_idx``)
    from its oldest entry to its newest: the order our FIFO buffer stores."""
    return list(items[start_idx:]) + list(items[:start_idx])


def identify(trajectories: Sequence[np.ndarray], candidates: Sequence[np.ndarray]) -> list[int]:
    """For each array of ``trajectories``, the index of the equal array in ``candidates``
    (ValueError if there is none)."""
    out = []
    for t in trajectories:
        found = [i for i, c in enumerate(candidates) if c.shape == t.shape and np.array_equal(c, t)]
        if not found:
            raise ValueError("a trajectory of one code has no equal in the other's")
        out.append(found[0])
    return out


def window_cells(traj: np.ndarray, start: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Each window (trajectory ``traj``, first step ``start``) as one index among all steps of the
    trajectories of ``lengths``: the cell of a draw under the law 'trajectory by length, start
    uniform', which is uniform over the cells."""
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    if ((start < 0) | (start >= lengths[traj])).any():
        raise ValueError("a window starts outside its trajectory")
    return offsets[traj] + start


def uniformity_pvalue(cells: np.ndarray, n_cells: int) -> float:
    """Chi-square p-value of the counts of ``cells`` against the uniform law on ``n_cells``."""
    counts = np.bincount(cells, minlength=n_cells)
    return float(stats.chisquare(counts).pvalue)


def homogeneity_pvalue(cells_a: np.ndarray, cells_b: np.ndarray, n_cells: int) -> float:
    """Chi-square p-value that two samples of cells come from one law (cells empty in both
    dropped)."""
    table = np.stack([np.bincount(cells_a, minlength=n_cells), np.bincount(cells_b, minlength=n_cells)])
    table = table[:, table.sum(axis=0) > 0]
    return float(stats.chi2_contingency(table, correction=False)[1])


def padding_share(lengths: Sequence[int], k: int) -> float:
    """The expected share of padded positions in a window of ``k`` steps drawn with trajectory
    probability proportional to length and a uniform start (both codes' law): each (trajectory,
    start) is equally likely and a window starting r steps before its trajectory's end has
    k - r padded positions when r < k, so a trajectory of length L contributes
    m*k - m(m+1)/2 padded positions over its L starts, m = min(L, k)."""
    lengths = np.asarray(lengths, dtype=np.float64)
    m = np.minimum(lengths, k)
    return float((m * k - m * (m + 1) / 2).sum() / (lengths.sum() * k))


def official_rtg(rewards: np.ndarray, reward_scale: float) -> np.ndarray:
    """The returns-to-go the official loader trains a trajectory with: the suffix sums of its
    rewards (``data.discount_cumsum`` with gamma 1, in the rewards' float32) times
    ``reward_scale``. Computed here only to state the law; the check calls the official function."""
    r = np.asarray(rewards, dtype=np.float32)
    return np.cumsum(r[::-1])[::-1] * reward_scale


# ----- the official code, driven ---------------------------------------------------------------

def synthetic_rollouts(seed: int, lengths: Sequence[int] = NEW_ROLLOUTS, dataset: str = C.DATASET) -> list[dict]:
    """Rollouts in our episode layout (observations, actions, rewards float32, terminated) in the
    dataset's shapes, the actions sampled through tanh so that some are exactly +-1 in float32."""
    obs_dim, act_dim = C.dataset_shapes(dataset)
    rng = np.random.default_rng(seed + 1)
    out = []
    for i, n in enumerate(lengths):
        out.append({"observations": rng.normal(size=(n, obs_dim)).astype(np.float32) * 2 + 0.5,
                    "actions": np.tanh(6.0 * rng.normal(size=(n, act_dim))).astype(np.float32),
                    "rewards": rng.uniform(0.0, 3.5, n).astype(np.float32), "terminated": bool(i % 2)})
    return out


def as_official_rollout(episode: dict, action_range: Sequence[float]) -> dict:
    """An episode as ``vec_evaluate_episode_rtg`` returns a trajectory: float32 arrays, the
    actions as it executed them (clamped to ``action_range``), ``terminals`` 1 at the last step."""
    n = len(episode["rewards"])
    terminals = np.zeros(n)
    terminals[-1] = 1
    return {"observations": episode["observations"].astype(np.float32),
            "actions": np.clip(episode["actions"], *action_range).astype(np.float32),
            "rewards": episode["rewards"].astype(np.float32), "terminals": terminals}


def dataset_env(dataset: str, **kwargs: Any) -> Callable[[], gymnasium.Env]:
    """The dataset's environment factory, the registry's (the one both codes' runs step), capped
    at the official 1000 steps; ``kwargs`` go to the environment (``FULL_LENGTH``)."""
    spec = get_spec(dataset)
    if spec.max_episode_steps != OFFICIAL_MAX_EP_LEN:
        raise ConfigError(f"{dataset}: episodes of {spec.max_episode_steps} steps, the official code caps them at "
                          f"{OFFICIAL_MAX_EP_LEN}")
    return functools.partial(spec.make_env, **kwargs)


def official_vec_env(seed: int, make_env: Callable[[], gymnasium.Env]) -> InProcessVecEnv:
    """One environment behind the old gym API, seeded as the official ``get_env_builder`` seeds it."""
    def make() -> OldGymEnv:
        env = OldGymEnv(make_env())
        env.seed(seed)
        return env
    return InProcessVecEnv([make])


@dataclass
class Trace:
    """Per step of one rollout: the conditioning return-to-go, the pre-tanh mean and std of the
    action, and the action sampled (before any clamp)."""

    rtg: list[float]
    mean: list[np.ndarray]
    std: list[np.ndarray]
    action: list[np.ndarray]

    @classmethod
    def empty(cls) -> Trace:
        return cls([], [], [], [])


@contextlib.contextmanager
def inject_official_noise(model: Any, eps: Sequence[torch.Tensor] | None, trace: Trace) -> Iterator[None]:
    """The official model's ``get_predictions`` recorded per call (one per step), and, with
    ``eps``, its distribution drawing ``eps[t]`` at the last position at step t (``loc + eps *
    scale`` in its base Normal's ``sample``; zeros at the other positions, which the rollout
    drops)."""
    original = model.get_predictions

    def recorded(states, actions, rewards, returns_to_go, timesteps, num_envs=1, **kwargs):
        t = len(trace.rtg)
        out = original(states, actions, rewards, returns_to_go, timesteps, num_envs=num_envs, **kwargs)
        dist = out[1]
        base = dist.base_dist
        trace.rtg.append(float(returns_to_go.reshape(num_envs, -1)[0, -1]))
        trace.mean.append(base.loc[0, -1].detach().double().numpy().copy())
        trace.std.append(base.scale[0, -1].detach().double().numpy().copy())
        if eps is not None:
            e = torch.zeros_like(base.loc)
            e[:, -1] = eps[t].to(e.dtype)
            base.sample = lambda sample_shape=(): base.loc + e * base.scale
            trace.action.append(torch.tanh(base.loc[0, -1] + e[0, -1] * base.scale[0, -1]).double().numpy())
        return out

    model.get_predictions = recorded
    try:
        yield
    finally:
        del model.get_predictions


@contextlib.contextmanager
def record_ours(model: torch.nn.Module, trace: Trace, sample: bool) -> Iterator[None]:
    """Our model's rollout calls recorded: the last return-to-go fed (a forward pre-hook) and the
    head's mean and std at the last position, and the action it samples."""
    head = model.head
    sample_action, mean_action = head.sample_action, head.mean_action

    def hook(_module, args):
        trace.rtg.append(float(args[2][0, -1, 0]))

    def note(params):
        trace.mean.append(params[0][0].double().numpy().copy())
        trace.std.append(params[1][0].exp().double().numpy().copy())

    def sampled(params, generator=None):
        note(params)
        a = sample_action(params, generator)
        trace.action.append(a[0].double().numpy().copy())
        return a

    def meaned(params):
        note(params)
        return mean_action(params)

    handle = model.register_forward_pre_hook(hook)
    head.sample_action, head.mean_action = sampled, meaned
    try:
        yield
    finally:
        handle.remove()
        del head.sample_action, head.mean_action


def explore_seed(cfg: ODTConfig, rounds: int = 0) -> int:
    """The reset seed and generator seed of our round ``rounds``' exploration (``ODTTrainer.explore``)."""
    return exploration_seed(cfg.seed, rounds)


def our_noise(seed: int, steps: int, act_dim: int) -> list[torch.Tensor]:
    """The standard normals our sampled rollout draws, step by step, from a generator seeded ``seed``."""
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn((1, act_dim), generator=gen) for _ in range(steps)]


# ----- 1. the replay buffer -----------------------------------------------------------------------

@dataclass
class Buffers:
    """Both buffers after the same rollouts, and the official loader's settings."""

    official: Any  # official ReplayBuffer
    ours: TrajectoryBuffer
    capacity: int


def buffer_checks(session: C.Session, pair: C.Pair, cfg: ODTConfig, seed: int, out: Checks) -> Buffers:
    exp = pair.experiment
    data = session.trajectories
    ours_obs = lambda buf: [buf.data.episode(i)["observations"] for i in range(len(buf))]  # noqa: E731
    # the Experiment's own buffer, at the preset's capacity (25 >= the 6 synthetic trajectories)
    preset = TrajectoryBuffer.from_offline(data, cfg.online.buffer_size, "top")
    out.add("initial buffer at the preset's capacity: trajectories", "count official - ours",
            len(exp.replay_buffer) - len(preset), None,
            note=f"capacity {cfg.online.buffer_size} >= the data's {len(data)} trajectories: the official buffer starts "
                 "from the pretraining set, which leaves out the lowest-return trajectory; ours from all of them. "
                 "Only when the capacity exceeds the data less one (never at the cpu preset on the generated "
                 "medium files: 25 of thousands)")
    # a buffer smaller than the data: top-N by return
    official = session.main.ReplayBuffer(SMALL_CAPACITY, exp.offline_trajs)
    ours = TrajectoryBuffer.from_offline(data, SMALL_CAPACITY, "top")
    got = identify([t["observations"] for t in official.trajectories], ours_obs(ours))
    out.same(f"initial buffer (capacity {SMALL_CAPACITY}): the top-{SMALL_CAPACITY} by return, ascending",
             got, list(range(SMALL_CAPACITY)), note="official list position i holds our position i")
    # the same rollouts, one per round
    orders, sets = [], []
    for episode in synthetic_rollouts(seed, dataset=session.dataset):
        official.add_new_trajs([as_official_rollout(episode, exp.action_range)])
        ours.add(episode, relabel=True)
        aged = ring_in_age_order(official.trajectories, official.start_idx)
        orders.append(identify([t["observations"] for t in aged], ours_obs(ours)) == list(range(len(ours))))
        sets.append(len(aged) == len(ours))
    out.add(f"after {len(orders)} rollouts: the same trajectories kept, oldest evicted first", "rounds unequal",
            sum(not (o and s) for o, s in zip(orders, sets)), TOL_EXACT,
            note="the official ring list read from start_idx (its oldest) equals ours in order after every round; "
                 "the evicted offline trajectories go lowest return first in both")
    out.add("list order inside the buffer", "rotation start_idx", official.start_idx, None,
            note="the official list is a ring (new rollouts overwrite the oldest slot), ours is age-ordered: "
                 "the same multiset, so the same sampling law (draws are i.i.d. by length)")
    # hindsight returns-to-go of every stored trajectory (all rollouts by now)
    where = identify([t["observations"] for t in official.trajectories], ours_obs(ours))
    rtg_o = np.concatenate([session.data.discount_cumsum(official.trajectories[j]["rewards"], gamma=1.0)
                            for j in np.argsort(where)]) * exp.reward_scale
    out.rel("returns-to-go of the stored rollouts (hindsight: suffix sums of the rewards received, x reward scale)",
            rtg_o, ours.rtg / cfg.rtg_scale, tol=1e-5,
            note="official: data.discount_cumsum in float32 x 0.001 in the loader; ours: float64 suffix sums "
                 "stored as float32, / 1000 in the batch; neither uses the commanded g_online")
    stored = official.trajectories[identify([ours.data.episode(len(ours) - 1)["observations"]],
                                            [x["observations"] for x in official.trajectories])[0]]
    ep = ours.data.episode(len(ours) - 1)
    out.rel("stored rollout actions (official: clamped to +-(1 - 1e-6) when executed)", stored["actions"], ep["actions"],
            tol=None, note="ours stores the sampled action as drawn (tanh can give exactly +-1 in float32) and clamps "
                           "inside the log-likelihood only; the NLL is the same (see the components report)")
    return Buffers(official=official, ours=ours, capacity=SMALL_CAPACITY)


# ----- 2. segment sampling over the online buffer ------------------------------------------------

def official_windows(session: C.Session, exp: Any, trajectories: list[dict], rows: int, seed: int
                     ) -> tuple[C.OfficialBatch, np.ndarray]:
    """``rows`` windows of the official loader (as ``online_tuning`` builds it) over ``trajectories``."""
    session.utils.set_seed_everywhere(seed)
    loader = session.data.create_dataloader(
        trajectories=trajectories, num_iters=1, batch_size=rows, max_len=exp.variant["K"],
        state_dim=exp.state_dim, act_dim=exp.act_dim, state_mean=exp.state_mean, state_std=exp.state_std,
        reward_scale=exp.reward_scale, action_range=exp.action_range, num_workers=0)
    return C.OfficialBatch(*next(iter(loader))), np.asarray(loader.dataset.sampling_ind)


def window_starts(batch: C.OfficialBatch) -> np.ndarray:
    """The first step (within its trajectory) of each official window."""
    first = (batch.states.shape[1] - C.valid_lengths(batch)).unsqueeze(1)
    return batch.timesteps.gather(1, first).squeeze(1).numpy()


def sampling_checks(session: C.Session, pair: C.Pair, cfg: ODTConfig, bufs: Buffers, seed: int, out: Checks) -> None:
    exp, trainer = pair.experiment, pair.trainer
    k = cfg.model.context_len
    ours = bufs.ours
    trajs = list(bufs.official.trajectories)
    to_ours = np.asarray(identify([t["observations"] for t in trajs], [ours.data.episode(i)["observations"]
                                                                       for i in range(len(ours))]))
    lengths = ours.data.lengths
    p_official = np.array([len(t["observations"]) for t in trajs], dtype=np.float64)
    p_official /= p_official.sum()
    out.rel("trajectory probabilities (proportional to length)", p_official,
            ours.probabilities("length")[to_ours], tol=1e-12, note="data.sample_trajs against odt.sampling, exact")
    # many draws: both uniform over the buffer's (trajectory, start) cells
    batch, inds = official_windows(session, exp, trajs, DRAWS, seed)
    cells_o = window_cells(to_ours[inds], window_starts(batch), lengths)
    idx, _ = ours.sample(np.random.default_rng(seed), DRAWS, k, "length")
    traj_u = np.searchsorted(ours.data.starts, idx.flat[:, 0], side="right") - 1
    cells_u = window_cells(traj_u, idx.timesteps[:, 0], lengths)
    n_cells = int(lengths.sum())
    note = f"{DRAWS} windows over {n_cells} (trajectory, start) cells; chi-square p-value, fails below {P_MIN:g}"
    out.add("official windows: trajectory by length, start uniform", "p-value", uniformity_pvalue(cells_o, n_cells),
            P_MIN, note, higher_ok=True)
    out.add("our windows: trajectory by length, start uniform", "p-value", uniformity_pvalue(cells_u, n_cells),
            P_MIN, note, higher_ok=True)
    out.add("official and our windows: one law", "p-value", homogeneity_pvalue(cells_o, cells_u, n_cells),
            P_MIN, note, higher_ok=True)
    real_o = C.valid_lengths(batch).numpy()
    expected = padding_share(lengths, k)
    out.add("share of padded positions (official draws vs the exact law)", "abs diff",
            abs(1 - real_o.mean() / k - expected), 0.01,
            note=f"exact {expected:.2%} for this buffer; official pads on the left, ours on the right, masked alike")
    out.add("share of padded positions (our draws vs the exact law)", "abs diff",
            abs(1 - idx.mask.mean() - expected), 0.01)
    hop = {L: padding_share([L] * 25, k) for L in (1000, 500, 150)}
    out.add("share of padded positions in a buffer of 25 rollouts of L steps", "share at L=150", hop[150], None,
            note="the official entropy term averages over these positions too (components report): "
                 + ", ".join(f"L={L}: {s:.2%}" for L, s in hop.items()))
    # the statistics and the data path
    out.rel("state mean used online", exp.state_mean, trainer.state_mean, tol=1e-6,
            note="both: the whole offline dataset's, fixed for the whole run (official float64, ours float32)")
    out.rel("state std used online", exp.state_std, trainer.state_std, tol=1e-6, note="both: std + 1e-6")
    rows = cfg.optim.batch_size
    batch, inds = official_windows(session, exp, trajs, rows, seed + 1)
    expected_batch = C.our_batch(batch)
    gen, trainer.rng = trainer.rng, C.FixedWindows(to_ours[inds], window_starts(batch), lengths)
    try:
        got = trainer.batch_tensors(ours)
    finally:
        trainer.rng = gen
    mask = expected_batch["mask"]
    out.same("online batch: mask (real steps per window)", expected_batch["mask"].tolist(), got["mask"].tolist())
    out.rel("online batch: normalised states", expected_batch["states"][mask], got["states"][mask], tol=1e-5)
    out.rel("online batch: returns-to-go", expected_batch["rtg"][mask], got["rtg"][mask], tol=1e-5,
            note="official rtg[:, :-1] of its K + 1")
    out.rel("online batch: timesteps", expected_batch["timesteps"][mask], got["timesteps"][mask], tol=TOL_EXACT)
    out.rel("online batch: actions", expected_batch["actions"][mask], got["actions"][mask], tol=None,
            note="official clamps to +-(1 - 1e-6) in the batch; the stored rollouts here have actions at +-1")


# ----- 3, 4. the rollouts --------------------------------------------------------------------------

def rollout_rows(out: Checks, label: str, trace_o: Trace, trace_u: Trace, sampled: bool) -> None:
    n = min(len(trace_o.rtg), len(trace_u.rtg))
    out.same(f"{label}: steps until done", len(trace_o.rtg), len(trace_u.rtg),
             note=f"{len(trace_u.rtg)} steps (ours), {len(trace_o.rtg)} (official)")
    out.rel(f"{label}: return-to-go fed, per step", trace_o.rtg[:n], trace_u.rtg[:n],
            note="official: g * 0.001, minus reward * 0.001 per step; ours: g / 1000, minus reward / 1000")
    out.rel(f"{label}: action mean (pre-tanh), per step", np.stack(trace_o.mean[:n]), np.stack(trace_u.mean[:n]))
    out.rel(f"{label}: action std, per step", np.stack(trace_o.std[:n]), np.stack(trace_u.std[:n]))
    if sampled:
        out.rel(f"{label}: sampled action before the clamp, per step", np.stack(trace_o.action[:n]),
                np.stack(trace_u.action[:n]))


class ReplayEnv(gymnasium.Env):
    """Plays one recorded episode back whatever the actions: the same observations and rewards
    reach both codes at every step, so their rollouts over a whole episode compare step by step.
    (In the real environment the two codes' float32 roundings, ~1e-7 at the first step, grow
    chaotically: a sampled walker rollout separates within ~150 steps.)"""

    def __init__(self, observations: np.ndarray, rewards: np.ndarray, action_space: gymnasium.Space):
        self.observations, self.rewards = observations, rewards
        self.observation_space = gymnasium.spaces.Box(-np.inf, np.inf, observations.shape[1:], np.float64)
        self.action_space = action_space
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        return self.observations[0].copy(), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        return self.observations[self.t].copy(), float(self.rewards[self.t - 1]), False, False, {}


def recorded_episode(dataset: str, seed: int, steps: int = OFFICIAL_MAX_EP_LEN) -> tuple[np.ndarray, np.ndarray, Any]:
    """``steps`` steps of the dataset's environment under uniform random actions, never ending
    early (``terminate_when_unhealthy`` off): observations (steps + 1), rewards, action space."""
    env = dataset_env(dataset, terminate_when_unhealthy=False)()
    try:
        env.action_space.seed(seed)
        obs, _ = env.reset(seed=seed)
        observations, rewards = [obs], []
        for _ in range(steps):
            obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            observations.append(obs)
            rewards.append(reward)
            if terminated:
                raise RuntimeError(f"{dataset}: the recorded episode terminated; it must run {steps} steps")
        return np.asarray(observations), np.asarray(rewards), env.action_space
    finally:
        env.close()


def replay_env(dataset: str, seed: int) -> Callable[[], gymnasium.Env]:
    """A factory of :class:`ReplayEnv` over one recorded episode, behind the 1000-step time limit."""
    observations, rewards, space = recorded_episode(dataset, seed)
    return lambda: gymnasium.wrappers.TimeLimit(ReplayEnv(observations, rewards, space), OFFICIAL_MAX_EP_LEN)


FULL_LABEL = ", 1000 replayed steps"


def exploration_checks(session: C.Session, pair: C.Pair, cfg: ODTConfig, out: Checks,
                       make_env: Callable[[], gymnasium.Env] | None = None) -> None:
    """One exploration round of each code from the same weights, env seed and noise, in the
    dataset's environment or ``make_env`` (a :func:`replay_env`: a whole episode, to its time limit)."""
    exp, trainer = pair.experiment, pair.trainer
    s = explore_seed(cfg)
    trace_o, trace_u = Trace.empty(), Trace.empty()
    label = "exploration" + (FULL_LABEL if make_env else "")
    make_env = make_env or dataset_env(session.dataset)
    envs = official_vec_env(s, make_env)
    before = len(exp.replay_buffer.trajectories)
    try:
        with inject_official_noise(exp.model, our_noise(s, OFFICIAL_MAX_EP_LEN, exp.act_dim), trace_o):
            got_o = exp._augment_trajectories(envs, exp.variant["online_rtg"], n=1)
    finally:
        envs.close()
    stored_o = exp.replay_buffer.trajectories[-1] if len(exp.replay_buffer.trajectories) > before else \
        exp.replay_buffer.trajectories[exp.replay_buffer.start_idx - 1]
    trainer._envs = VectorEnvPool(make_env)
    try:
        with record_ours(trainer.model, trace_u, sample=True):
            got_u = trainer.explore()
    finally:
        trainer.close()
    episode = trainer.buffer.data.episode(len(trainer.buffer) - 1)
    rollout_rows(out, label, trace_o, trace_u, sampled=True)
    out.same(f"{label}: conditioning target g_online (raw)", exp.variant["online_rtg"], trainer.exploration_rtg())
    out.same(f"{label}: context of the rollout (eval_context_length)", exp.model.eval_context_length,
             cfg.model.eval_context_len, note="both read the last eval_context_len steps; official pads to K")
    n = min(len(stored_o["rewards"]), len(episode["rewards"]))
    out.same(f"{label}: stored length", len(stored_o["rewards"]), len(episode["rewards"]))
    out.rel(f"{label}: stored observations", stored_o["observations"][:n], episode["observations"][:n])
    out.rel(f"{label}: stored rewards", stored_o["rewards"].reshape(-1)[:n], episode["rewards"][:n])
    out.rel(f"{label}: stored actions", stored_o["actions"][:n], episode["actions"][:n], tol=None,
            note="official stores (and executes) the action clamped to +-(1 - 1e-6); ours as sampled")
    out.rel(f"{label}: episode return", got_o["aug_traj/return"], got_u.returns[0])
    out.same(f"{label}: samples counted", int(exp.total_transitions_sampled), trainer.counters.online_samples)


def evaluation_checks(session: C.Session, pair: C.Pair, cfg: ODTConfig, out: Checks, seed: int,
                      make_env: Callable[[], gymnasium.Env] | None = None) -> None:
    """One mean-action episode at g_eval, the official loop called as the driver calls it, in the
    dataset's environment or ``make_env`` (see ``exploration_checks``)."""
    exp, trainer = pair.experiment, pair.trainer
    evaluation = importlib.import_module("evaluation")
    trace_o, trace_u = Trace.empty(), Trace.empty()
    label = "evaluation" + (FULL_LABEL if make_env else "")
    make_env = make_env or dataset_env(session.dataset)
    envs = official_vec_env(seed, make_env)
    try:
        with inject_official_noise(exp.model, None, trace_o):
            returns, lengths, _ = evaluation.vec_evaluate_episode_rtg(
                envs, exp.state_dim, exp.act_dim, exp.model, target_return=[exp.variant["eval_rtg"] * exp.reward_scale],
                max_ep_len=OFFICIAL_MAX_EP_LEN, reward_scale=exp.reward_scale, state_mean=exp.state_mean,
                state_std=exp.state_std, device="cpu", mode="normal", use_mean=True)
    finally:
        envs.close()
    vec = gymnasium.vector.SyncVectorEnv([make_env])
    try:
        with record_ours(trainer.model, trace_u, sample=False):
            got = run_episodes(trainer.model, vec, trainer.conditioning(cfg.g_eval), seeds=[seed], sample=False)
    finally:
        vec.close()
    rollout_rows(out, label, trace_o, trace_u, sampled=False)
    out.rel(f"{label}: episode return (mean action)", returns[0], got.returns[0])
    out.same(f"{label}: episode length", int(lengths[0]), int(got.lengths[0]))


# ----- 5. the optimisation across the phase switch --------------------------------------------------

def full_batches(session: C.Session, pair: C.Pair, n: int, seed: int) -> list[C.OfficialBatch]:
    """``n`` official batches of windows without padding (the padded entropy average is the known
    difference of the components report; here the continuation is compared)."""
    out = []
    for i in range(n):
        batch, _ = C.draw_batch(session, pair.experiment, 24, seed + 100 + i)
        out.append(batch.rows((batch.padding_mask > 0).all(dim=1).nonzero().squeeze(1)))
    return out


def optimisation_checks(session: C.Session, cfg: ODTConfig, out: Checks, seed: int,
                        pretrain: int = 3, online: int = 3, warmup: int = 8) -> None:
    """``pretrain`` updates then ``online`` updates of each code's trainer on the same batches and
    noise, at a warmup of ``warmup`` updates so that the switch falls inside it."""
    cfg = replace(cfg, pretrain_updates=pretrain, optim=replace(cfg.optim, warmup_steps=warmup))
    pair = C.build_pair(session, cfg, torch.float32)
    exp, trainer = pair.experiment, pair.trainer
    batches = full_batches(session, pair, pretrain + online, seed)
    seeds = [seed + 1000 + i for i in range(len(batches))]
    lr_o, lr_u, lam_o, lam_u = [], [], [], []

    def official_step(i: int) -> None:
        b = batches[i]
        eps = C.noise(seeds[i], C.our_batch(b)["actions"].shape, torch.float32)
        step_trainer = session.trainer.SequenceTrainer(
            model=exp.model, optimizer=exp.optimizer, log_temperature_optimizer=exp.log_temperature_optimizer,
            scheduler=exp.scheduler, device="cpu")
        lr_o.append(exp.optimizer.param_groups[0]["lr"])
        step_trainer.train_step_stochastic(lambda dist, *a: session.loss_fn(C.aligned_noise(dist, eps, C.valid_lengths(b)), *a),
                                           tuple(b))
        lam_o.append(float(exp.model.temperature()))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(pretrain):
            official_step(i)
        # the driver's switch: its wrapper around online_tuning, around a stand-in for the loop
        agent = OfficialODTAgent(OfficialODTConfig(odt=cfg, dataset=session.dataset,
                                                   variant=official_variant(cfg, session.dataset)),
                                 session.trajectories, session.make_env, progress=False)
        exp.online_tuning = lambda *a, **kw: [official_step(i) for i in range(pretrain, pretrain + online)]
        agent._wrap(exp, {}, lambda row: None)
        exp.online_tuning(None, None, session.loss_fn)
        # ours: pretrain() on the same batches and noise (evaluation stubbed), then online steps
        ours = [C.our_batch(b) for b in batches]
        step, fed = trainer.step, iter(range(len(batches)))

        def seeded_step(batch):
            i = next(fed)
            lr_u.append(trainer.optimizer.param_groups[0]["lr"])
            torch.manual_seed(seeds[i])
            m = step(ours[i])
            lam_u.append(float(trainer.log_lambda.exp()))
            return m

        trainer.step = seeded_step
        trainer.batch_tensors = lambda buffer: None
        trainer.evaluate = lambda episodes=None, g_eval=None: {"return_mean": 0.0}
        trainer.pretrain()
        for _ in range(online):
            trainer.step(None)
    out.rel(f"learning rate at each of {pretrain} pretraining + {online} online updates", lr_o, lr_u, tol=1e-12,
            note=f"warmup {warmup}: {switch_note(cfg)} (lr {', '.join(f'{x:.2e}' for x in lr_u)})")
    out.same("weight decay in the online phase", exp.optimizer.param_groups[0]["weight_decay"],
             trainer.optimizer.param_groups[0]["weight_decay"], note="one rate for both phases in both codes")
    steps_o = exp.optimizer.param_groups[0].get("step")
    steps_u = int(next(iter(trainer.optimizer.state.values()))["step"])
    out.same("LAMB state kept across the switch: step count after all updates", steps_o, steps_u,
             note=f"{steps_u} = pretraining + online: neither code resets the optimizer")
    moments_o = {n: exp.optimizer.state[p]["exp_avg"] for n, p in exp.model.named_parameters() if n in pair.mapping}
    moments_u = {n: trainer.optimizer.state[p]["exp_avg"] for n, p in trainer.model.named_parameters()}
    out.add("LAMB first moments after all updates", "norm rel",
            C.mapped_difference(moments_o, moments_u, pair.mapping)[0][2], 1e-4)
    out.rel("temperature lambda after each update", lam_o, lam_u, tol=1e-5,
            note="one Adam on log lambda, its state continuing across the switch in both")
    adam_o = exp.log_temperature_optimizer.state[exp.model.log_temperature]
    adam_u = trainer.lambda_optimizer.state[trainer.log_lambda]
    out.same("temperature Adam step count after all updates", int(adam_o["step"]), int(adam_u["step"]))
    out.add("parameters after all updates", "norm rel",
            C.mapped_difference(C._params(exp.model), C._params(trainer.model), pair.mapping)[0][2], 1e-5)
    variant = official_variant(cfg, session.dataset)
    out.same("updates per online round", variant["num_updates_per_online_iter"], cfg.online.updates_per_round)
    out.same("online batch size", variant["batch_size"], cfg.optim.batch_size)


# ----- the whole check -------------------------------------------------------------------------

@dataclass
class Report:
    rows: list[Check]
    config: str


def switch_note(cfg: ODTConfig) -> str:
    """What happens to the learning rate at the phase switch, in words."""
    if cfg.online.lr is None:
        return (f"no switch: online.lr is unset, both codes finetune at optim.lr {cfg.optim.lr:g} (the driver's "
                "wrapper leaves the rate alone)")
    return (f"the switch to online.lr {cfg.online.lr:g} falls inside it; both keep the warmup factor and apply "
            "it to the new base rate")


def compare(source: Path, seed: int = 0, dataset: str = C.DATASET) -> Report:
    cfg = C.component_config(seed, dataset=dataset)
    rows: list[Check] = []
    with C.official_session(source, C.synthetic_data(seed, dataset), dataset) as session:
        pair = C.build_pair(session, cfg, torch.float32)
        buf, smp = Checks("1 buffer"), Checks("2 sampling")
        bufs = buffer_checks(session, pair, cfg, seed, buf)
        sampling_checks(session, pair, cfg, bufs, seed, smp)
        rows += buf.out + smp.out
        # the rollouts, from the same fresh weights: the Experiment's buffer and ours at the
        # preset's capacity, as the online phase starts
        pair = C.build_pair(session, cfg, torch.float32)
        pair.trainer.buffer = TrajectoryBuffer.from_offline(session.trajectories, cfg.online.buffer_size, "top")
        expl, ev = Checks("3 exploration"), Checks("4 evaluation")
        exploration_checks(session, pair, cfg, expl)
        evaluation_checks(session, pair, cfg, ev, seed)
        opt = Checks("5 optimisation")
        optimisation_checks(session, cfg, opt, seed)
        rows += expl.out + ev.out + opt.out
        # whole episodes: the same fresh weights fed one recorded 1000-step episode
        pair = C.build_pair(session, cfg, torch.float32)
        pair.trainer.buffer = TrajectoryBuffer.from_offline(session.trajectories, cfg.online.buffer_size, "top")
        full, replay = Checks("6 whole episodes"), replay_env(dataset, seed)
        exploration_checks(session, pair, cfg, full, replay)
        evaluation_checks(session, pair, cfg, full, seed, replay)
        rows += full.out
    m = cfg.model
    online_lr = f"unset (optim.lr {cfg.optim.lr:g})" if cfg.online.lr is None else f"{cfg.online.lr:g}"
    config = (f"{dataset} cpu preset: embed {m.embed_dim}, {m.n_layers} layers, K {m.context_len}, eval context "
              f"{m.eval_context_len}, dropout 0, buffer {cfg.online.buffer_size}, g_online {cfg.online.g_online:g}, "
              f"g_eval {cfg.g_eval:g}, online lr {online_lr}, {cfg.online.updates_per_round} updates "
              f"per round; synthetic offline data ({len(C.LENGTHS)} trajectories), rollouts on {get_spec(dataset).env_id}"
              f"{' ' + str(dict(get_spec(dataset).env_kwargs)) if get_spec(dataset).env_kwargs else ''}; seed {seed}")
    return Report(rows=rows, config=config)


def render(report: Report) -> str:
    lines = ["# The online phase, part by part, through both codes", "", f"Config: {report.config}.", "",
             "| area | check | measure | value | tol | verdict | note |", "|---|---|---|---|---|---|---|"]
    for r in report.rows:
        tol = "-" if r.tol is None else (f">= {r.tol:.0e}" if r.higher_ok else f"<= {r.tol:.0e}")
        lines.append(f"| {r.area} | {r.check} | {r.measure} | {r.value:.3g} | {tol} | {r.verdict} | {r.note} |")
    lines += ["", "max rel: max |official - ours| over the largest magnitude of either side; norm rel: "
              "||official - ours|| / ||ours||; unequal: 1 when the two differ, 0 when equal; p-value: chi-square."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.official.online_components",
                                     description="The online phase of our ODT and the official online-dt code "
                                                 "(ODT_OFFICIAL_SRC), part by part: a table of differences.")
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    parser.add_argument("--seed", type=int, default=0, help="data, weights, rollouts and noise")
    parser.add_argument("--dataset", choices=sorted(C.DATASETS), default=C.DATASET,
                        help="whose cpu-preset config, shapes and environment (default %(default)s)")
    args = parser.parse_args(argv)
    try:
        source = locate_source()
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    text = render(compare(source.path, seed=args.seed, dataset=args.dataset))
    print(text, end="")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
