"""The same batch and the same weights through our ODT and the unmodified official code.

Whole runs of the two codes share no random streams, so when their results differ this check
says where. It builds both codes' models at one small config (the ``cpu`` preset's finetuning
config of one dataset, hopper-medium unless ``--dataset`` names another of ``DATASETS``,
dropout 0) on synthetic trajectories of that dataset's shapes, copies the official weights into
ours through an explicit parameter-name map (:func:`parameter_map`, checked by
:func:`check_map`), draws one batch with the official data loader and feeds it to both, each in
its own tensor layout, and compares:

* the action distribution, pre-tanh mean and std, at every real position (float64);
* the log-likelihood of the target actions and the entropy sample per position, and the NLL,
  entropy and loss terms as each code's loss computes them (float64);
* the gradient of every mapped parameter (float64);
* each code's optimizer alone (clip 0.25, LAMB, warmup factor) fed the same gradients (float64);
* one full update by each code's own trainer step, the official
  ``SequenceTrainer.train_step_stochastic`` and our ``ODTTrainer.step``, and the temperature
  after its dual step (float32: our step computes its loss in float32 by design);
* both models in training mode at the preset's dropout (0.1), every dropout site (embeddings;
  per block the attention weights, the attention output, the MLP output) applying the same
  multipliers (:class:`SharedMasks`): drop probabilities, sites, action distribution, loss and
  gradients (float64, windows without padding); the other rows run without dropout;
* our data transform against the official one on the same windows.

Layouts. The official loader pads a window on the left and marks real steps in
``padding_mask``; its return-to-go has K + 1 entries, of which the trainer feeds ``rtg[:, :-1]``.
Ours pads on the right (padded steps repeat the window's first step, timestep 0) with a boolean
``mask`` and K return-to-go entries. :func:`to_our_layout` moves the official rows into ours.

Noise. Both codes estimate the entropy from one reparameterised sample and, seeded alike, draw
the same standard normals; but a window's step j sits at index j in our layout and at p + j in
the official one (p: its padding), so on a padded row the two would use different draws for the
same step. :func:`aligned_noise` hands the official distribution our draw permuted into its
layout (it replaces ``rsample`` of that one distribution's base Normal, whose formula
``loc + eps * scale`` it keeps); the official formulas run unchanged.

Known differences, reported and not judged: on a batch with padding the official entropy term is
``entropy().mean()`` over all B*K positions, padding included, where ours averages over the real
positions (and so the loss, the gradients, the update and the temperature's gradient differ
with it); the official batch clamps actions to +-(1 - 1e-6), ours clamps only inside the
log-likelihood. Not met at any preset: the official embedding dropout is GPT-2's default 0.1
whatever ``model.dropout`` is (main.py sets only the attention and residual rates).

The official code is CC-BY-NC: it is imported from ``ODT_OFFICIAL_SRC`` (as the ``official-odt``
driver does), never copied here. ``python -m benchmarks.official.components [--dataset NAME] [--out PATH]``
prints the differences as a markdown table.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import importlib
import io
import pickle
import sys
import tempfile
import types
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import gymnasium
import numpy as np
import torch

from benchmarks.official.adapters import stand_in_modules, to_official_trajectories
from benchmarks.official.driver import (
    DEPS_DIR,
    OFFICIAL_GRAD_CLIP,
    locate_source,
    official_variant,
    working_directory,
)
from odt.config import ModelConfig, ODTConfig, make_config
from odt.objective import masked_mean, stochastic_policy_loss
from odt.policy import sample_squashed, squashed_action_log_prob
from odt.train import ODTTrainer
from rlbase.config import ConfigError
from rlbase.trajectories import Trajectories

DATASET = "hopper-medium"  # whose cpu-preset config (lr, weight decay, K, ...) both codes get by default
# the datasets the checks run at: (observation, action) dimensions of their environments
DATASETS = {"hopper-medium": (11, 3), "walker2d-medium": (17, 6)}
OBS_DIM, ACT_DIM = DATASETS[DATASET]
LENGTHS = (7, 13, 26, 45, 120, 200)  # synthetic trajectories: below and above K = 20
# Tolerances on a relative difference (see Diff: max_rel, or norm_rel for parameter updates).
# float64: eps is 2.2e-16; the codes order the same arithmetic differently (GPT-2's Conv1D addmm
# against nn.Linear, explicit softmax against fused attention, masks of -1e4 against -inf, both
# giving weights of exactly 0), which leaves ~1e-16 to 1e-13. 1e-10 keeps a 1000x margin, while
# a wrong operation (a mask, a scale, a transposed weight) moves results by more than 1e-3.
TOL_FLOAT64 = 1e-10
# float32 (eps 1.2e-7), one full step: the loss and its terms agree to a few ulps.
TOL_FLOAT32_TERMS = 1e-5
# The float32 update, on its norm: LAMB's first step is g / (|g| + 1e-8) per element times the
# trust ratio, so gradients that are zero but for rounding (the attention key biases', ~1e-13,
# rounded differently by the two codes) give update entries of different size, and p + update
# is stored to ulp(p), which the warmup's rate of 1e-6 makes comparable to the update; measured
# 6e-6 to 3e-5 over seeds, while a wrong clip, rate, decay or trust ratio moves it by > 1e-3.
TOL_FLOAT32_UPDATE = 1e-4


# ----- the parameter map ---------------------------------------------------------------------

@dataclass(frozen=True)
class Link:
    """Where an official parameter lives in our model. ``transpose``: GPT-2's ``Conv1D`` stores
    its weight as (in, out), ``nn.Linear`` as (out, in)."""

    ours: str
    transpose: bool = False


# Official parameters with no counterpart in our model, and why none is needed.
OFFICIAL_ONLY = {
    "transformer.wte.weight": "GPT-2's token embedding (vocab_size=1); the model feeds "
                              "inputs_embeds, so it is never read",
    "embed_timestep.weight": "built by the official DecisionTransformer and never read: its "
                             "forward embeds timesteps with embed_ordering (when ordering=1)",
    "predict_state.weight": "next-state head on the action tokens: computed by forward, in no "
                            "loss, so it gets no gradient and LAMB skips it (no weight decay)",
    "predict_state.bias": "as predict_state.weight",
    "predict_return.weight": "return head on the action tokens: computed by forward, in no loss, "
                             "so it gets no gradient and LAMB skips it (no weight decay)",
    "predict_return.bias": "as predict_return.weight",
}
_OUTSIDE_BLOCKS = (("embed_return", "embed_return"), ("embed_state", "embed_state"),
                   ("embed_action", "embed_action"), ("embed_ln", "embed_ln"),
                   ("transformer.ln_f", "ln_f"), ("predict_action.mu", "head.mean"),
                   ("predict_action.log_std", "head.log_std"))
_IN_BLOCK = (("ln_1.weight", "ln1.weight", False), ("ln_1.bias", "ln1.bias", False),
             ("attn.c_attn.weight", "attn.qkv.weight", True), ("attn.c_attn.bias", "attn.qkv.bias", False),
             ("attn.c_proj.weight", "attn.proj.weight", True), ("attn.c_proj.bias", "attn.proj.bias", False),
             ("ln_2.weight", "ln2.weight", False), ("ln_2.bias", "ln2.bias", False),
             ("mlp.c_fc.weight", "mlp.0.weight", True), ("mlp.c_fc.bias", "mlp.0.bias", False),
             ("mlp.c_proj.weight", "mlp.2.weight", True), ("mlp.c_proj.bias", "mlp.2.bias", False))


def parameter_map(n_layers: int, positional: bool) -> dict[str, Link]:
    """Official parameter name -> our parameter, for a model of ``n_layers`` blocks; with
    ``positional`` the official ``embed_ordering`` (its timestep embedding) is our
    ``embed_timestep``."""
    mapping = {f"{o}.{kind}": Link(f"{u}.{kind}") for o, u in _OUTSIDE_BLOCKS for kind in ("weight", "bias")}
    for i in range(n_layers):
        mapping.update({f"transformer.h.{i}.{o}": Link(f"blocks.{i}.{u}", t) for o, u, t in _IN_BLOCK})
    if positional:
        mapping["embed_ordering.weight"] = Link("embed_timestep.weight")
    return mapping


class MapError(ValueError):
    """The parameter map does not pair the two models' parameters one to one."""


Shapes = dict[str, tuple[int, ...]]


def shapes(model: torch.nn.Module) -> Shapes:
    return {name: tuple(p.shape) for name, p in model.named_parameters()}


def check_onto(ours: Shapes, mapping: dict[str, Link]) -> None:
    """MapError unless every parameter of ours is the image of exactly one official name."""
    counts = Counter(link.ours for link in mapping.values())
    for name in counts:
        if name not in ours:
            raise MapError(f"the map targets {name}, which our model does not have")
    for name in ours:
        if counts[name] != 1:
            raise MapError(f"our parameter {name} {ours[name]} is mapped {counts[name]} times (once expected)")


def check_map(official: Shapes, ours: Shapes, mapping: dict[str, Link]) -> None:
    """MapError naming the first official parameter neither mapped nor declared official-only,
    a mapped name the official model lacks, our parameter not mapped exactly once, or a pair
    whose shapes disagree."""
    for name, shape in official.items():
        if name in mapping and name in OFFICIAL_ONLY:
            raise MapError(f"official parameter {name} is both mapped and declared official-only")
        if name not in mapping and name not in OFFICIAL_ONLY:
            raise MapError(f"official parameter {name} {shape} is not mapped and not declared official-only")
    for name in mapping:
        if name not in official:
            raise MapError(f"the map names official {name}, which the official model does not have")
    check_onto(ours, mapping)
    for name, link in mapping.items():
        want = official[name][::-1] if link.transpose else official[name]
        if ours[link.ours] != want:
            raise MapError(f"official {name} {official[name]} -> our {link.ours} {ours[link.ours]}: "
                           f"shapes disagree{' (transposed)' if link.transpose else ''}")


def as_ours(tensor: torch.Tensor, link: Link) -> torch.Tensor:
    return tensor.T if link.transpose else tensor


def copy_weights(official: torch.nn.Module, ours: torch.nn.Module, mapping: dict[str, Link]) -> None:
    """Our model's parameters set, in place, to the official model's through ``mapping``."""
    target = dict(ours.named_parameters())
    with torch.no_grad():
        for name, p in official.named_parameters():
            if name in mapping:
                target[mapping[name].ours].copy_(as_ours(p, mapping[name]))


# ----- the batch and the two layouts -----------------------------------------------------------

class OfficialBatch(NamedTuple):
    """One batch as the official loader yields it (``TransformSamplingSubTraj``, collated)."""

    states: torch.Tensor  # (B, K, obs), normalised, left padded
    actions: torch.Tensor  # (B, K, act), clamped to the action range
    rewards: torch.Tensor
    dones: torch.Tensor
    rtg: torch.Tensor  # (B, K + 1, 1), scaled by reward_scale
    timesteps: torch.Tensor
    ordering: torch.Tensor
    padding_mask: torch.Tensor  # (B, K), 1 at real steps

    def rows(self, index: torch.Tensor) -> OfficialBatch:
        return OfficialBatch(*(t[index] for t in self))

    def cast(self, dtype: torch.dtype) -> OfficialBatch:
        """The model inputs in ``dtype`` (the mask, indices and dones as they are)."""
        floats = ("states", "actions", "rewards", "rtg")
        return self._replace(**{f: getattr(self, f).to(dtype) for f in floats})


def valid_lengths(batch: OfficialBatch) -> torch.Tensor:
    return (batch.padding_mask > 0).sum(dim=1)


def _gather_steps(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """x[b, index[b, j]] along the step axis of a (B, K, ...) tensor."""
    shaped = index.view(*index.shape, *([1] * (x.dim() - 2))).expand_as(x)
    return torch.gather(x, 1, shaped)


def to_our_layout(x: torch.Tensor, n_valid: torch.Tensor) -> torch.Tensor:
    """Official left-padded rows (B, K, ...) -> ours: step j < n at position j, padded positions
    repeating the window's first step (as ``odt.sampling`` pads)."""
    k = x.shape[1]
    j = torch.arange(k)[None, :]
    pad = (k - n_valid)[:, None]
    return _gather_steps(x, torch.where(j < n_valid[:, None], pad + j, pad))


def roll_to_official(x: torch.Tensor, n_valid: torch.Tensor) -> torch.Tensor:
    """A (B, K, ...) tensor in our layout permuted into the official one: official position k
    holds our position (k - p) mod K, p = K - n (real steps to real steps, padding to padding)."""
    k = x.shape[1]
    return _gather_steps(x, (torch.arange(k)[None, :] - (k - n_valid)[:, None]) % k)


def our_batch(batch: OfficialBatch) -> dict[str, torch.Tensor]:
    """The batch as ``ODTTrainer.step`` takes it (``ODTTrainer.batch_tensors``' layout)."""
    n = valid_lengths(batch)
    mask = torch.arange(batch.states.shape[1])[None, :] < n[:, None]
    return {"states": to_our_layout(batch.states, n), "actions": to_our_layout(batch.actions, n),
            "rtg": to_our_layout(batch.rtg[:, :-1], n),
            "timesteps": torch.where(mask, to_our_layout(batch.timesteps, n), 0), "mask": mask}


def aligned_noise(dist: Any, eps_ours: torch.Tensor, n_valid: torch.Tensor) -> Any:
    """The official distribution ``dist``, drawing from now on the standard normals ``eps_ours``
    (our layout) permuted into its layout: its base Normal's ``rsample`` returns
    ``loc + eps * scale``, Normal's own formula, with that eps."""
    eps = roll_to_official(eps_ours, n_valid)
    base = dist.base_dist
    base.rsample = lambda sample_shape=(): base.loc + eps.expand(*sample_shape, *eps.shape) * base.scale
    return dist


def noise(seed: int, shape: torch.Size, dtype: torch.dtype) -> torch.Tensor:
    """The standard normals ``odt.policy.sample_squashed`` draws right after ``manual_seed(seed)``."""
    torch.manual_seed(seed)
    return torch.randn(shape, dtype=dtype)


# ----- the synthetic data ------------------------------------------------------------------------

def dataset_shapes(dataset: str) -> tuple[int, int]:
    """(observation, action) dimensions of a dataset the checks know; ConfigError otherwise."""
    if dataset not in DATASETS:
        raise ConfigError(f"the component checks know {', '.join(DATASETS)}, not {dataset!r}")
    return DATASETS[dataset]


def synthetic_data(seed: int, dataset: str = DATASET) -> Trajectories:
    """Trajectories of ``LENGTHS`` steps in the dataset's shapes: observations of per-dimension
    scale and offset, actions in [-1, 1] with about 2% exactly at +-1 (the official transform
    clamps them), rewards in [0.5, 3.5]; the shortest has the lowest return, which the official
    code leaves out."""
    obs_dim, act_dim = dataset_shapes(dataset)
    rng = np.random.default_rng(seed)
    episodes = []
    for i, n in enumerate(LENGTHS):
        obs = rng.normal(size=(n, obs_dim)) * rng.uniform(0.1, 3.0, obs_dim) + rng.normal(size=obs_dim)
        act = np.tanh(1.5 * rng.normal(size=(n, act_dim)))
        edge = rng.random(act.shape) < 0.02
        act[edge] = np.sign(act[edge])
        episodes.append({"observations": obs, "actions": act, "rewards": rng.uniform(0.5, 3.5, n),
                         "terminated": bool(i % 2)})
    return Trajectories.from_episodes(episodes)


def synthetic_hopper(seed: int) -> Trajectories:
    """``synthetic_data`` in Hopper's shapes."""
    return synthetic_data(seed, "hopper-medium")


class ShapeOnlyEnv:
    """What both codes read of an environment before training: its spaces."""

    def __init__(self, obs_dim: int, act_dim: int):
        self.observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (obs_dim,), np.float64)
        self.action_space = gymnasium.spaces.Box(-1.0, 1.0, (act_dim,), np.float32)

    def close(self) -> None:
        pass


class FixedWindows:
    """Stands in for the numpy Generator of ``odt.sampling.sample_windows`` so that its draws
    select given windows: trajectory ``trajs[b]`` from step ``offsets[b]``."""

    def __init__(self, trajs: np.ndarray, offsets: np.ndarray, lengths: np.ndarray):
        self.trajs, self.offsets, self.lengths = trajs, offsets, lengths

    def choice(self, n: int, size: int, p: np.ndarray) -> np.ndarray:
        return self.trajs

    def random(self, size: int) -> np.ndarray:
        return (self.offsets + 0.5) / self.lengths[self.trajs]


# ----- the two codes, side by side -------------------------------------------------------------

@dataclass
class Session:
    """The official modules imported from its source, in a scratch folder holding the dataset."""

    main: Any
    data: Any
    trainer: Any
    utils: Any
    loss_fn: Callable
    work: Path
    trajectories: Trajectories
    make_env: Callable[[], ShapeOnlyEnv]
    dataset: str = DATASET  # the name the official code reads its data and environment under


@dataclass
class Pair:
    """The official Experiment (model, LAMB, scheduler, temperature optimizer as main.py builds
    them) and our trainer, our model holding the official weights."""

    experiment: Any
    trainer: ODTTrainer
    mapping: dict[str, Link]


def official_loss_fn(main: Any) -> Callable:
    """The official loss: the closure ``loss_fn`` that ``Experiment.__call__`` defines, made
    callable from its code object (it reads nothing from the enclosing scope)."""
    for const in main.Experiment.__call__.__code__.co_consts:
        if getattr(const, "co_name", None) == "loss_fn":
            if const.co_freevars:
                raise RuntimeError(f"the official loss_fn reads {const.co_freevars} from Experiment.__call__")
            return types.FunctionType(const, vars(main), "loss_fn")
    raise RuntimeError("main.Experiment.__call__ defines no loss_fn: not the official code this check knows")


@contextlib.contextmanager
def official_session(source: Path, data: Trajectories, dataset: str = DATASET,
                     make_env: Callable | None = None) -> Iterator[Session]:
    """The official code importable (``stand_in_modules``) and working in a scratch folder with
    ``data`` in its pickle layout under the name ``dataset``, its prints kept off stdout; its
    ``gym.make`` builds ``make_env`` (default: an environment of the data's shapes only)."""
    make_env = make_env or functools.partial(ShapeOnlyEnv, data.obs_dim, data.act_dim)
    with (tempfile.TemporaryDirectory(prefix="odt-components-") as work,
          stand_in_modules({dataset: make_env}, [source, source / DEPS_DIR]),
          working_directory(Path(work)), contextlib.redirect_stdout(io.StringIO())):
        (Path(work) / "data").mkdir()
        with open(Path(work) / "data" / f"{dataset}.pkl", "wb") as f:
            pickle.dump(to_official_trajectories(data), f)
        main = importlib.import_module("main")
        yield Session(main=main, data=importlib.import_module("data"), trainer=importlib.import_module("trainer"),
                      utils=importlib.import_module("utils"), loss_fn=official_loss_fn(main), work=Path(work),
                      trajectories=data, make_env=make_env, dataset=dataset)


def component_config(seed: int, positional: bool = False, dataset: str = DATASET) -> ODTConfig:
    """The cpu preset's finetuning config of ``dataset`` on the CPU without dropout: our trainer
    step runs the model in training mode, the official one in the mode it finds it (eval here)."""
    return make_config(dataset, "online", "cpu", {"seed": seed, "device": "cpu", "model.dropout": 0.0,
                                                  "model.positional_embedding": positional})


def build_pair(session: Session, cfg: ODTConfig, dtype: torch.dtype) -> Pair:
    """Both codes built from ``cfg`` (the official one through the driver's ``official_variant``),
    the official weights copied into ours, both models in ``dtype`` (optimizers keep their
    parameters: ``Module.to`` converts in place)."""
    variant = {k: v for k, v in official_variant(cfg, session.dataset).items() if not k.startswith("driver_")}
    variant["save_dir"] = str(session.work / "exp")
    torch.manual_seed(cfg.seed)
    experiment = session.main.Experiment(variant)
    trainer = ODTTrainer(cfg, session.trajectories, session.make_env, progress=False)
    mapping = parameter_map(cfg.model.n_layers, cfg.model.positional_embedding)
    check_map(shapes(experiment.model), shapes(trainer.model), mapping)
    copy_weights(experiment.model, trainer.model, mapping)
    experiment.model.to(dtype).eval()
    trainer.model.to(dtype)
    for optimizer, model in ((experiment.optimizer, experiment.model), (trainer.optimizer, trainer.model)):
        if {id(p) for group in optimizer.param_groups for p in group["params"]} != {id(p) for p in model.parameters()}:
            raise RuntimeError("an optimizer lost its model's parameters in the dtype conversion")
    return Pair(experiment=experiment, trainer=trainer, mapping=mapping)


def draw_batch(session: Session, experiment: Any, rows: int, seed: int) -> tuple[OfficialBatch, np.ndarray]:
    """``rows`` windows from the official data loader over the Experiment's trajectories, seeded
    as main.py seeds, and the index of each window's trajectory in ``experiment.offline_trajs``."""
    session.utils.set_seed_everywhere(seed)
    loader = session.data.create_dataloader(
        trajectories=experiment.offline_trajs, num_iters=1, batch_size=rows, max_len=experiment.variant["K"],
        state_dim=experiment.state_dim, act_dim=experiment.act_dim, state_mean=experiment.state_mean,
        state_std=experiment.state_std, reward_scale=experiment.reward_scale,
        action_range=experiment.action_range, num_workers=0)
    return OfficialBatch(*next(iter(loader))), np.asarray(loader.dataset.sampling_ind)


# ----- differences -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Diff:
    """One comparison of official against ours. ``max_abs``: max |official - ours|; ``max_rel``:
    max_abs over the largest magnitude of either side (for parameters: per parameter, the worst);
    ``norm_rel``: ||official - ours|| / ||ours|| (for parameters: all together); ``scale``: max
    |ours|. ``tol`` bounds the metric ``judged``; None marks a known difference, reported and
    not judged."""

    check: str
    batch: str
    dtype: str
    max_abs: float
    max_rel: float
    norm_rel: float
    scale: float
    tol: float | None
    judged: str = "max_rel"
    note: str = ""

    @property
    def ok(self) -> bool | None:
        return None if self.tol is None else getattr(self, self.judged) <= self.tol


def _ratio(num: float, den: float) -> float:
    return num / den if den > 0 else 0.0 if num == 0 else float("inf")


def difference(official: Any, ours: Any) -> tuple[float, float, float, float]:
    """(max_abs, max_rel, norm_rel, scale) of two tensors of one shape (see Diff)."""
    a = torch.as_tensor(official).detach().double()
    b = torch.as_tensor(ours).detach().double()
    if a.shape != b.shape:
        raise ValueError(f"shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be compared")
    if a.numel() == 0:
        return 0.0, 0.0, 0.0, 0.0
    max_abs = float((a - b).abs().max())
    scale = float(b.abs().max())
    return (max_abs, _ratio(max_abs, max(float(a.abs().max()), scale)),
            _ratio(float((a - b).norm()), float(b.norm())), scale)


def mapped_difference(official: dict[str, torch.Tensor], ours: dict[str, torch.Tensor],
                      mapping: dict[str, Link]) -> tuple[tuple[float, float, float, float], str]:
    """``difference`` over every mapped parameter (max_rel: the worst parameter's; norm_rel: all
    parameters as one vector), and the name of the worst parameter."""
    per = {name: difference(as_ours(official[name], link), ours[link.ours]) for name, link in mapping.items()}
    worst = max(per, key=lambda name: per[name][1])
    sq_diff = sum(float((as_ours(official[n], k).double() - ours[k.ours].double()).pow(2).sum()) for n, k in mapping.items())
    sq_norm = sum(float(ours[k.ours].double().pow(2).sum()) for k in mapping.values())
    stats = (max(d[0] for d in per.values()), per[worst][1], _ratio(sq_diff ** 0.5, sq_norm ** 0.5),
             max(d[3] for d in per.values()))
    return stats, worst


DEFAULT = "default"  # a row judged at its Rows' tolerance


class Rows:
    """Collects the Diffs of one batch at one dtype, judged at ``tol`` unless a row says otherwise."""

    def __init__(self, batch: str, dtype: torch.dtype, tol: float):
        self.batch, self.dtype, self.tol = batch, str(dtype).removeprefix("torch."), tol
        self.out: list[Diff] = []

    def add(self, check: str, official: Any, ours: Any, note: str = "", tol: Any = DEFAULT,
            judged: str = "max_rel") -> None:
        self._append(check, difference(official, ours), tol, judged, note)

    def add_mapped(self, check: str, official: dict, ours: dict, mapping: dict[str, Link], note: str = "",
                   tol: Any = DEFAULT, judged: str = "max_rel") -> None:
        stats, worst = mapped_difference(official, ours, mapping)
        self._append(check, stats, tol, judged, f"worst: {worst}" + (f"; {note}" if note else ""))

    def _append(self, check: str, stats: tuple, tol: Any, judged: str, note: str) -> None:
        self.out.append(Diff(check, self.batch, self.dtype, *stats, tol=self.tol if tol == DEFAULT else tol,
                             judged=judged, note=note))


def official_grads(model: torch.nn.Module, mapping: dict[str, Link]) -> dict[str, torch.Tensor]:
    return {name: p.grad.detach().clone() for name, p in model.named_parameters() if name in mapping}


def our_grads(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.grad.detach().clone() for name, p in model.named_parameters()}


def unused_official_grads(model: torch.nn.Module) -> list[str]:
    """Official-only parameters that received a gradient (none should)."""
    return [n for n, p in model.named_parameters() if n in OFFICIAL_ONLY and p.grad is not None]


@contextlib.contextmanager
def _kept_grads(*models: torch.nn.Module) -> Iterator[None]:
    """The models' gradients as they were before the block, after it."""
    kept = [(p, p.grad) for m in models for p in m.parameters()]
    try:
        yield
    finally:
        for p, grad in kept:
            p.grad = grad


def _backward_both(pair: Pair, official_loss: torch.Tensor, our_loss: torch.Tensor) -> None:
    pair.experiment.model.zero_grad(set_to_none=True)
    pair.trainer.model.zero_grad(set_to_none=True)
    official_loss.backward()
    our_loss.backward()
    unused = unused_official_grads(pair.experiment.model)
    if unused:
        raise MapError(f"official-only parameters received gradients: {', '.join(unused)}")


def _params(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def _delta(model: torch.nn.Module, before: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {name: p.detach() - before[name] for name, p in model.named_parameters()}


# ----- float64: forward, loss terms, gradients, optimizer ----------------------------------------

def official_forward(experiment: Any, batch: OfficialBatch) -> Any:
    """The official action distribution, called as ``train_step_stochastic`` calls the model."""
    return experiment.model.forward(batch.states, batch.actions, batch.rewards, batch.rtg[:, :-1],
                                    batch.timesteps, batch.ordering, padding_mask=batch.padding_mask)[1]


@dataclass
class Outputs:
    """Both models on one batch: the official distribution (drawing our noise, aligned) and our
    head's mean and log-std, with the batch in both layouts."""

    batch: OfficialBatch
    ours: dict[str, torch.Tensor]
    n: torch.Tensor
    dist: Any
    mean: torch.Tensor
    log_std: torch.Tensor

    @property
    def mask(self) -> torch.Tensor:
        return self.ours["mask"]

    def at(self, x: torch.Tensor) -> torch.Tensor:
        """An official (B, K, ...) tensor at our real positions, in our order."""
        return to_our_layout(x, self.n)[self.mask]


def run_both(pair: Pair, batch: OfficialBatch, seed: int) -> Outputs:
    n, ours = valid_lengths(batch), our_batch(batch)
    mean, log_std = pair.trainer.model(ours["states"], ours["actions"], ours["rtg"], ours["timesteps"])
    dist = aligned_noise(official_forward(pair.experiment, batch), noise(seed, mean.shape, mean.dtype), n)
    return Outputs(batch=batch, ours=ours, n=n, dist=dist, mean=mean, log_std=log_std)


def official_terms(session: Session, pair: Pair, out: Outputs) -> tuple[torch.Tensor, ...]:
    """(loss, nll, entropy) of the official loss_fn, called as the official trainer calls it."""
    temperature = pair.experiment.model.temperature().detach()
    return session.loss_fn(out.dist, out.batch.actions, out.batch.padding_mask, temperature)


def our_terms(pair: Pair, out: Outputs, seed: int) -> Any:
    """Our LossTerms, as ``ODTTrainer.step`` computes them (its noise drawn after ``seed``)."""
    torch.manual_seed(seed)
    return stochastic_policy_loss(out.mean, out.log_std, out.ours["actions"], out.mask, pair.trainer.log_lambda.exp())


def distribution_rows(out: Outputs, rows: Rows, seed: int) -> None:
    """(a) mean and std, (b) log-likelihood and entropy sample, per real position."""
    rows.add("action mean (pre-tanh), per real position", out.at(out.dist.loc), out.mean[out.mask])
    rows.add("action std, per real position", out.at(out.dist.std), out.log_std.exp()[out.mask])
    rows.add("log-likelihood of target actions, per real position", out.at(out.dist.log_likelihood(out.batch.actions)),
             squashed_action_log_prob(out.ours["actions"], out.mean, out.log_std)[out.mask])
    torch.manual_seed(seed)
    rows.add("entropy sample -log pi(a~), per real position (same noise)", out.at(out.dist.entropy()),
             -sample_squashed(out.mean, out.log_std)[1][out.mask])


def loss_rows(session: Session, pair: Pair, batch: OfficialBatch, rows: Rows, seed: int) -> None:
    """(a)-(d) on one float64 batch; leaves both models' gradients set by each code's own loss."""
    out = run_both(pair, batch, seed)
    distribution_rows(out, rows, seed)
    loss_o, nll_o, ent_o = official_terms(session, pair, out)
    terms = our_terms(pair, out, seed)
    padded = bool((~out.mask).any())
    known = None if padded else DEFAULT
    rows.add("NLL term", nll_o, terms.nll)
    rows.add("entropy term", ent_o, terms.entropy, tol=known,
             note="official: entropy().mean() over all B*K positions, padding included; ours: real positions only"
             if padded else "")
    rows.add("entropy term, official samples averaged over real positions only",
             masked_mean(out.dist.entropy(), batch.padding_mask > 0), terms.entropy)
    rows.add("loss at the same temperature", loss_o, terms.loss, tol=known,
             note="temperature x the entropy-term difference" if padded else "")
    _backward_both(pair, loss_o, terms.loss)
    rows.add_mapped("gradients of every mapped parameter", official_grads(pair.experiment.model, pair.mapping),
                    our_grads(pair.trainer.model), pair.mapping, tol=known,
                    note="from the entropy term's padded positions" if padded else "")
    if padded:
        padding_rows(session, pair, batch, rows, seed)


def padding_rows(session: Session, pair: Pair, batch: OfficialBatch, rows: Rows, seed: int) -> None:
    """Where the codes differ on a padded batch: the gradients of the entropy term alone, and the
    official gradients had its loss averaged the entropy over real positions only (the official
    distribution and log-likelihood unchanged). Both models' gradients are kept."""
    with _kept_grads(pair.experiment.model, pair.trainer.model):
        out = run_both(pair, batch, seed)
        _backward_both(pair, official_terms(session, pair, out)[2], our_terms(pair, out, seed).entropy)
        rows.add_mapped("gradients of the entropy term alone", official_grads(pair.experiment.model, pair.mapping),
                        our_grads(pair.trainer.model), pair.mapping, tol=None, judged="norm_rel",
                        note="the share of the entropy gradient that differs")
        out = run_both(pair, batch, seed)
        real = batch.padding_mask > 0
        log_likelihood = out.dist.log_likelihood(batch.actions)[real].mean()
        entropy = masked_mean(out.dist.entropy(), real)
        temperature = pair.experiment.model.temperature().detach()
        _backward_both(pair, -(log_likelihood + temperature * entropy), our_terms(pair, out, seed).loss)
        rows.add_mapped("gradients, official loss with its entropy over real positions only",
                        official_grads(pair.experiment.model, pair.mapping), our_grads(pair.trainer.model),
                        pair.mapping)


def optimizer_rows(pair: Pair, cfg: ODTConfig, rows: Rows) -> None:
    """(e') each code's optimizer alone: our gradients replaced by the official ones, then each
    code's clip (0.25), LAMB step and warmup step; the updates compared (judged on norm_rel:
    p_after - p_before carries the rounding of p, which max_rel sees at the warmup's small rate)."""
    exp, trainer = pair.experiment, pair.trainer
    ours = dict(trainer.model.named_parameters())
    for name, p in exp.model.named_parameters():
        if name in pair.mapping:
            ours[pair.mapping[name].ours].grad = as_ours(p.grad, pair.mapping[name]).clone()
    before_o, before_u = _params(exp.model), _params(trainer.model)
    torch.nn.utils.clip_grad_norm_(exp.model.parameters(), OFFICIAL_GRAD_CLIP)
    exp.optimizer.step()
    exp.scheduler.step()
    torch.nn.utils.clip_grad_norm_(trainer.model.parameters(), cfg.optim.grad_clip)
    trainer.optimizer.step()
    trainer.scheduler.step()
    rows.add_mapped("optimizer alone, same gradients: update (delta parameters)",
                    _delta(exp.model, before_o), _delta(trainer.model, before_u), pair.mapping, judged="norm_rel")
    rows.add("optimizer alone: learning rate after the warmup step", exp.optimizer.param_groups[0]["lr"],
             trainer.optimizer.param_groups[0]["lr"])


# ----- float32: one full update of each code's trainer ---------------------------------------------

def full_step_rows(session: Session, pair: Pair, batch: OfficialBatch, rows: Rows, seed: int) -> None:
    """(e) one ``train_step_stochastic`` against one ``ODTTrainer.step`` on the same batch and
    noise: loss terms, update and parameters after (judged on norm_rel, see ``optimizer_rows``),
    and (f) the temperature's gradient and value after the dual step."""
    exp, trainer = pair.experiment, pair.trainer
    n, ours = valid_lengths(batch), our_batch(batch)
    eps = noise(seed, ours["actions"].shape, ours["actions"].dtype)
    official_trainer = session.trainer.SequenceTrainer(
        model=exp.model, optimizer=exp.optimizer, log_temperature_optimizer=exp.log_temperature_optimizer,
        scheduler=exp.scheduler, device="cpu")
    loss_fn = lambda dist, *args: session.loss_fn(aligned_noise(dist, eps, n), *args)
    before_o, before_u = _params(exp.model), _params(trainer.model)
    loss_o, nll_o, ent_o = official_trainer.train_step_stochastic(loss_fn, tuple(batch))
    torch.manual_seed(seed)
    got = trainer.update(ours)
    padded = bool((n < batch.states.shape[1]).any())
    known, update_tol = (None, None) if padded else (DEFAULT, TOL_FLOAT32_UPDATE)
    rows.add("trainer step: NLL", nll_o, got["nll"])
    rows.add("trainer step: entropy term", ent_o, got["entropy"], tol=known,
             note="official averages over padding too" if padded else "")
    rows.add("trainer step: loss", loss_o, got["loss"], tol=known)
    rows.add_mapped("trainer step: update (delta parameters)", _delta(exp.model, before_o),
                    _delta(trainer.model, before_u), pair.mapping, tol=update_tol, judged="norm_rel")
    rows.add_mapped("trainer step: parameters after", _params(exp.model), _params(trainer.model), pair.mapping,
                    tol=known, judged="norm_rel")
    rows.add("trainer step: temperature gradient lambda*(H - target)", exp.model.log_temperature.grad,
             trainer.log_lambda.grad, tol=known)
    rows.add("trainer step: temperature lambda after the dual step", exp.model.temperature(),
             trainer.log_lambda.exp())
    rows.add("trainer step: learning rate after the warmup step", exp.optimizer.param_groups[0]["lr"],
             trainer.optimizer.param_groups[0]["lr"])


# ----- float64, training mode: dropout with the same masks -------------------------------------------

class SharedMasks:
    """Inverted-dropout multipliers (0 or 1 / (1 - p)) that both codes apply at the same sites:
    the embeddings, and in each block the attention weights, the attention output and the MLP
    output. Each site's multiplier is drawn once, in the official layout (every token a query);
    our last block, which computes the state tokens only, takes their rows. ``used`` records the
    sites each code called, in order."""

    def __init__(self, seed: int, p: float, batch: int, heads: int, tokens: int, width: int):
        self.gen = torch.Generator().manual_seed(seed)
        self.p, self.b, self.h, self.t, self.d = p, batch, heads, tokens, width
        self.masks: dict[tuple, torch.Tensor] = {}
        self.used: dict[str, list[tuple]] = {"official": [], "ours": []}
        self.block: int | None = None  # the block whose attention runs now (ours)

    def full(self, site: tuple) -> torch.Tensor:
        if site not in self.masks:
            shape = (self.b, self.h, self.t, self.t) if site[0] == "attention weights" else (self.b, self.t, self.d)
            keep = torch.rand(shape, generator=self.gen, dtype=torch.float64) >= self.p
            self.masks[site] = keep.double() / (1.0 - self.p)
        return self.masks[site]

    def official(self, site: tuple, x: torch.Tensor) -> torch.Tensor:
        self.used["official"].append(site)
        return x * self.full(site).to(x.dtype)

    def ours(self, site: tuple, x: torch.Tensor) -> torch.Tensor:
        """``x`` in our layout: (B, queries, d), or (B * heads, queries, tokens) for the weights."""
        self.used["ours"].append(site)
        m = self.full(site)
        queries = x.shape[1]
        rows = slice(None) if queries == self.t else STATE_ROWS
        if site[0] == "attention weights":
            m = m[:, :, rows].reshape(self.b * self.h, queries, self.t)
        else:
            m = m[:, rows]
        return x * m.to(x.dtype)


STATE_ROWS = slice(1, None, 3)  # the state tokens of (g, s, a, g, s, a, ...): our last block's queries


def _module_sites(model: torch.nn.Module, kind: type) -> dict[str, torch.nn.Module]:
    return {name: m for name, m in model.named_modules() if isinstance(m, kind)}


@contextlib.contextmanager
def shared_dropout(pair: Pair, masks: SharedMasks) -> Iterator[dict[str, dict[tuple, float]]]:
    """Both models' dropout replaced, for the block, by ``masks``: the official GPT-2 modules
    (``drop``, each block's ``attn_dropout``, ``resid_dropout``, ``mlp.dropout``) and ours
    (``embed_drop``, each block's attention-weight dropout, ``resid_drop``, the MLP's last
    module). Yields each side's drop probability per site; RuntimeError if a model has a dropout
    module this map does not name (it would draw its own masks)."""
    from odt import model as our_model

    official, ours = pair.experiment.model.transformer, pair.trainer.model
    o_sites = {"drop": ("embeddings",)}
    u_sites = {"embed_drop": ("embeddings",)}
    for i in range(len(ours.blocks)):
        o_sites.update({f"h.{i}.attn.attn_dropout": ("attention weights", i),
                        f"h.{i}.attn.resid_dropout": ("attention output", i), f"h.{i}.mlp.dropout": ("mlp output", i)})
        u_sites.update({f"blocks.{i}.attn.resid_drop": ("attention output", i), f"blocks.{i}.mlp.3": ("mlp output", i)})
    o_mods, u_mods = _module_sites(official, torch.nn.Dropout), _module_sites(ours, torch.nn.Dropout)
    for side, mods, sites in (("official", o_mods, o_sites), ("ours", u_mods, u_sites)):
        if set(mods) != set(sites):
            raise RuntimeError(f"{side} dropout modules {sorted(mods)} are not the sites this check maps {sorted(sites)}")
    probs = {"official": {site: float(o_mods[n].p) for n, site in o_sites.items()},
             "ours": {site: float(u_mods[n].p) for n, site in u_sites.items()}}
    for i, block in enumerate(ours.blocks):
        probs["ours"][("attention weights", i)] = float(block.attn.dropout)
    for name, site in o_sites.items():
        o_mods[name].forward = functools.partial(masks.official, site)
    for name, site in u_sites.items():
        u_mods[name].forward = functools.partial(masks.ours, site)
    hooks = [block.attn.register_forward_pre_hook(lambda _m, _a, i=i: setattr(masks, "block", i))
             for i, block in enumerate(ours.blocks)]
    functional = our_model.dropout
    our_model.dropout = lambda x, p, training: masks.ours(("attention weights", masks.block), x)
    try:
        yield probs
    finally:
        our_model.dropout = functional
        for h in hooks:
            h.remove()
        for mods in (o_mods, u_mods):
            for m in mods.values():
                del m.forward


def dropout_config(cfg: ODTConfig) -> ODTConfig:
    """``cfg`` at the preset's dropout (the config's own default, 0.1 as in Table C.3)."""
    return dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, dropout=ModelConfig().dropout))


def dropout_rows(session: Session, cfg: ODTConfig, batch: OfficialBatch, rows: Rows, seed: int) -> None:
    """Both models in training mode at the preset's dropout, every dropout site drawing the same
    multipliers (``shared_dropout``), on a batch without padding (the layouts then agree
    position for position): the drop probability per site, the sites called, the action
    distribution, the loss and the gradients."""
    cfg = dropout_config(cfg)
    pair = build_pair(session, cfg, torch.float64)
    pair.experiment.model.train()
    pair.trainer.model.train()
    b, k = batch.states.shape[:2]
    masks = SharedMasks(seed + 7, cfg.model.dropout, b, cfg.model.n_heads, 3 * k, cfg.model.embed_dim)
    with shared_dropout(pair, masks) as probs:
        out = run_both(pair, batch, seed)
        loss_o, _, _ = official_terms(session, pair, out)
        terms = our_terms(pair, out, seed)
        _backward_both(pair, loss_o, terms.loss)
    sites = sorted(probs["official"])
    rows.add("dropout: drop probability at every site", [probs["official"][s] for s in sites],
             [probs["ours"].get(s, float("nan")) for s in sites],
             note=f"{len(sites)} sites: embeddings; per block attention weights, attention output, MLP output")
    called = (sorted(set(masks.used["official"])) == sorted(set(masks.used["ours"])) == sites)
    rows.add("dropout: every site used once per forward, in both codes", 0.0 if called and
             len(masks.used["official"]) == len(masks.used["ours"]) == len(sites) else 1.0, 0.0,
             note="1 if a site is missing, extra or called twice in either code")
    rows.add("train mode, same dropout masks: action mean (pre-tanh), per position", out.at(out.dist.loc),
             out.mean[out.mask])
    rows.add("train mode, same dropout masks: action std, per position", out.at(out.dist.std),
             out.log_std.exp()[out.mask])
    rows.add("train mode, same dropout masks: loss at the same temperature", loss_o, terms.loss)
    rows.add_mapped("train mode, same dropout masks: gradients of every mapped parameter",
                    official_grads(pair.experiment.model, pair.mapping), our_grads(pair.trainer.model), pair.mapping)


# ----- the data transform --------------------------------------------------------------------------

def transform_rows(session: Session, pair: Pair, batch: OfficialBatch, traj_index: np.ndarray, rows: Rows) -> None:
    """Our data path (``ODTTrainer.batch_tensors``) on the official loader's windows, against the
    official batch moved into our layout."""
    n, expected = valid_lengths(batch), our_batch(batch)
    offline = pair.experiment.offline_trajs
    data = session.trajectories
    ours_of = [next(i for i in range(len(data)) if np.array_equal(data.episode(i)["observations"],
                                                                   offline[t]["observations"])) for t in traj_index]
    first = (batch.states.shape[1] - n).unsqueeze(1)
    offsets = batch.timesteps.gather(1, first).squeeze(1).numpy()  # the window's first step
    trainer = pair.trainer
    rng, trainer.rng = trainer.rng, FixedWindows(np.asarray(ours_of), offsets, data.lengths)
    try:
        got = trainer.batch_tensors(trainer.buffer)
    finally:
        trainer.rng = rng
    mask = expected["mask"]
    rows.add("data: mask", expected["mask"].float(), got["mask"].float())
    rows.add("data: timesteps", expected["timesteps"][mask].float(), got["timesteps"][mask].float())
    rows.add("data: normalised states", expected["states"][mask], got["states"][mask],
             note="official normalises in float64 then rounds; ours in float32")
    rows.add("data: actions", expected["actions"][mask], got["actions"][mask], tol=None,
             note="official clamps actions to +-(1 - 1e-6) in the batch; ours clamps inside the log-likelihood only")
    rows.add("data: returns-to-go", expected["rtg"][mask], got["rtg"][mask],
             note="official x 0.001 in float64 then rounds; ours / 1000 in float32")


# ----- the whole check -------------------------------------------------------------------------------

@dataclass
class Report:
    rows: list[Diff]
    official_only: dict[str, tuple[tuple[int, ...], str]]  # name -> (shape, why it has no counterpart)
    mapped: int  # official parameters mapped one to one onto ours
    batches: dict[str, str]  # label -> what the batch is
    config: str


def split_batches(batch: OfficialBatch) -> dict[str, OfficialBatch]:
    full = (batch.padding_mask > 0).all(dim=1)
    if not full.any() or full.all():
        raise RuntimeError("the drawn batch needs rows with and without padding; draw more rows")
    return {"full windows": batch.rows(full.nonzero().squeeze(1)), "with padding": batch}


def describe(batch: OfficialBatch) -> str:
    n = valid_lengths(batch)
    k = batch.states.shape[1]
    padded = int((k - n).sum())
    return (f"{len(n)} windows of K={k}, {int((n < k).sum())} padded; {padded} of {len(n) * k} "
            f"positions are padding ({padded / (len(n) * k):.1%})")


def compare(source: Path, seed: int = 0, rows: int = 16, positional: bool = False,
            dataset: str = DATASET) -> Report:
    """Every comparison of this module on one batch of ``rows`` official windows, split into
    its rows without padding and the whole batch, at ``dataset``'s config and shapes."""
    cfg = component_config(seed, positional, dataset)
    out: list[Diff] = []
    with official_session(source, synthetic_data(seed, dataset), dataset) as session:
        probe = build_pair(session, cfg, torch.float32)
        batch, traj_index = draw_batch(session, probe.experiment, rows, seed)
        batches = split_batches(batch)
        transform = Rows("with padding", torch.float32, TOL_FLOAT32_TERMS)
        transform_rows(session, probe, batch, traj_index, transform)
        out += transform.out
        for label, b in batches.items():
            r64 = Rows(label, torch.float64, TOL_FLOAT64)
            pair = build_pair(session, cfg, torch.float64)
            loss_rows(session, pair, b.cast(torch.float64), r64, seed)
            optimizer_rows(pair, cfg, r64)
            r32 = Rows(label, torch.float32, TOL_FLOAT32_TERMS)
            full_step_rows(session, build_pair(session, cfg, torch.float32), b, r32, seed)
            if label == "full windows":
                dropout_rows(session, cfg, b.cast(torch.float64), r64, seed)
            out += r64.out + r32.out
        official = shapes(probe.experiment.model)
    only = {name: (official[name], why) for name, why in OFFICIAL_ONLY.items() if name in official}
    m = cfg.model
    config = (f"{dataset} cpu preset: embed {m.embed_dim}, {m.n_layers} layers, {m.n_heads} heads, K {m.context_len}, "
              f"positional {m.positional_embedding}, dropout 0, lr {cfg.optim.lr:g}, weight decay "
              f"{cfg.optim.weight_decay:g}, warmup {cfg.optim.warmup_steps}, lambda {cfg.optim.init_lambda:g}; seed {seed}")
    return Report(rows=out, official_only=only, mapped=len(probe.mapping),
                  batches={label: describe(b) for label, b in batches.items()}, config=config)


def render(report: Report) -> str:
    """The report as markdown: the table, then the batches and the parameter map's findings."""
    lines = ["# The same batch and weights through both codes", "", f"Config: {report.config}.", "",
             "| check | batch | dtype | max abs | max rel | norm rel | max abs ours | tol | verdict | note |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for d in report.rows:
        verdict = {True: "ok", False: "DIFFERS", None: "known difference"}[d.ok]
        tol = "-" if d.tol is None else f"{d.tol:.0e} on {d.judged.replace('_', ' ')}"
        lines.append(f"| {d.check} | {d.batch} | {d.dtype} | {d.max_abs:.2e} | {d.max_rel:.2e} | {d.norm_rel:.2e} | "
                     f"{d.scale:.2e} | {tol} | {verdict} | {d.note} |")
    lines += ["", "max abs: max |official - ours|; max rel: max abs over the largest magnitude of either side "
              "(parameter rows: per parameter, the worst one named); norm rel: ||official - ours|| / ||ours|| "
              "(parameter rows: all parameters as one vector); max abs ours: max |ours|.", "", "Batches:"]
    lines += [f"- {label}: {text}" for label, text in report.batches.items()]
    numbers = sum(int(np.prod(shape)) for shape, _ in report.official_only.values())
    lines += ["", f"Parameter map: {report.mapped} official parameters map one to one onto all of ours; "
              f"{len(report.official_only)} official parameters ({numbers} numbers) have no counterpart:"]
    lines += [f"- `{name}` {shape}: {why}" for name, (shape, why) in report.official_only.items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.official.components",
                                     description="The same batch and weights through our ODT and the official "
                                                 "online-dt code (ODT_OFFICIAL_SRC): a table of differences.")
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    parser.add_argument("--seed", type=int, default=0, help="data, weights, batch and noise")
    parser.add_argument("--rows", type=int, default=16, help="windows the official loader draws")
    parser.add_argument("--positional", action="store_true",
                        help="with the timestep embedding (official ordering=1)")
    parser.add_argument("--dataset", choices=sorted(DATASETS), default=DATASET,
                        help="whose cpu-preset config and shapes (default %(default)s)")
    args = parser.parse_args(argv)
    try:
        source = locate_source()
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    text = render(compare(source.path, seed=args.seed, rows=args.rows, positional=args.positional,
                          dataset=args.dataset))
    print(text, end="")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
