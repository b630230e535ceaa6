"""Typed configuration for ODT and the paper's hyperparameter tables as presets.

Sources (the paper's appendix C): Table C.1 (common pretraining values), Table C.2
(per-dataset pretraining values), Table C.3 (common finetuning values) and Table C.4
(per-dataset finetuning values). Two protocols exist in the paper:

* ``offline``: pretrain for 1e5 updates with the offline tables; this is the
  "ODT (offline)" column of Table 1.
* ``online``: pretrain for a few thousand updates with the finetuning table's values, then
  finetune online with 200k samples; this is the "ODT (0.2m)" column.

Presets: ``paper`` is exactly the paper. ``cpu`` keeps the paper's structure (the same
algorithm, ratios and schedules) at a size a 2-core CPU finishes; ``cpu-200k`` is ``cpu`` with
the paper's online phase (200k samples, its replay buffer); ``smoke`` runs in seconds and
exists for tests. Results are always labelled with the preset they ran. Every preset's scaling
is in rlbase/presets.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rlbase.config import (
    ConfigError,
    apply_overrides,
    ensure,
    ensure_rates,
    ensure_sizes,
    is_finite,
    is_rate,
)
from rlbase.presets import PRESETS, scale_odt
from rlbase.protocol import domain_defaults, is_antmaze, known_datasets

PROTOCOLS = ("offline", "online")


@dataclass
class ModelConfig:
    embed_dim: int = 512
    n_layers: int = 4
    n_heads: int = 4
    dropout: float = 0.1
    activation: str = "relu"
    context_len: int = 20  # K, the training context
    eval_context_len: int = 5  # context used for rollouts (evaluation and exploration)
    max_ep_len: int = 1000  # size of the timestep embedding table
    positional_embedding: bool = False  # learned timestep embedding on/off
    stochastic: bool = True  # False: DT's deterministic head with MSE loss
    log_std_min: float = -5.0
    log_std_max: float = 2.0

    def validate(self) -> None:
        ensure_sizes(self, "model.", ("embed_dim", "n_layers", "n_heads", "context_len", "eval_context_len", "max_ep_len"))
        ensure(self.embed_dim % self.n_heads == 0, "model.n_heads", self.n_heads, "must divide embed_dim")
        ensure(0.0 <= self.dropout < 1.0, "model.dropout", self.dropout, "in [0, 1)")
        ensure(self.activation in ("relu", "gelu", "tanh"), "model.activation", self.activation, "relu | gelu | tanh")
        ensure(self.eval_context_len <= self.context_len, "model.eval_context_len", self.eval_context_len, "<= context_len")
        for name in ("log_std_min", "log_std_max"):
            ensure(is_finite(getattr(self, name)), f"model.{name}", getattr(self, name), "finite")
        ensure(self.log_std_min < self.log_std_max, "model.log_std_min", self.log_std_min, "< log_std_max")


@dataclass
class OptimConfig:
    batch_size: int = 256
    lr: float = 1e-4
    weight_decay: float = 1e-3
    warmup_steps: int = 10_000
    grad_clip: float = 0.25
    optimizer: str = "lamb"  # "adamw" for the DT baseline
    lambda_lr: float = 1e-4  # Adam on log(lambda)
    init_lambda: float = 0.1
    target_entropy: float | None = None  # None: -dim(A)

    def validate(self) -> None:
        ensure_sizes(self, "optim.", ("batch_size", "warmup_steps"))
        ensure_rates(self, "optim.", ("lr", "grad_clip", "lambda_lr", "init_lambda"))
        ensure_rates(self, "optim.", ("weight_decay",), zero_ok=True)
        ensure(self.optimizer in ("lamb", "adamw"), "optim.optimizer", self.optimizer, "lamb | adamw")
        ensure(is_finite(self.target_entropy, none_ok=True), "optim.target_entropy", self.target_entropy,
               "finite or None")


@dataclass
class OnlineConfig:
    online_samples: int = 200_000  # environment steps of the online budget
    updates_per_round: int = 300  # I in Algorithm 1
    buffer_size: int = 1000  # trajectories in the replay buffer
    g_online: float = 7200.0  # exploration RTG (raw return units)
    exploration_rtg: str = "fixed"  # "fixed" | "curriculum"
    curriculum_q: float = 50.0  # percentile of buffer returns for the curriculum
    hindsight_relabel: bool = True
    buffer_init: str = "top"  # "top" | "random"
    sampling: str = "length"  # "length" | "return"
    eval_every_rounds: int = 10
    # learning rate from the first online round on; None: optim.lr, as in the paper (one rate
    # throughout). The cpu preset sets it where its LAMB floor raised optim.lr (rlbase.presets.scale_to_cpu).
    lr: float | None = None
    # True: each exploration rollout enters the replay buffer (Algorithm 1). False: the
    # no-new-data control (method ``odt-control``): the same rollouts, rounds and updates, but
    # the buffer keeps its initial trajectories, so its gain over pretraining is what the
    # finetuning schedule alone (rate, top-N data, more updates) gives without online data.
    add_rollouts: bool = True
    # 0: the online phase ends once online_samples environment steps are taken (Algorithm 1).
    # > 0: it ends once this many online updates are made instead (rounds x updates_per_round,
    # so a multiple of updates_per_round); the update-matched control (``odt-control-matched``)
    # runs as many online updates as its ``odt`` twin this way, online_samples then only counts.
    online_updates: int = 0

    def validate(self) -> None:
        ensure(isinstance(self.add_rollouts, bool), "online.add_rollouts", self.add_rollouts, "true | false")
        ensure_sizes(self, "online.", ("online_samples", "online_updates"), minimum=0)
        ensure(self.lr is None or is_rate(self.lr), "online.lr", self.lr, "> 0 and finite, or None")
        ensure_sizes(self, "online.", ("updates_per_round", "buffer_size", "eval_every_rounds"))
        ensure(self.online_updates % self.updates_per_round == 0, "online.online_updates", self.online_updates,
               f"a multiple of online.updates_per_round ({self.updates_per_round}), so the phase ends on it exactly")
        ensure(is_finite(self.g_online), "online.g_online", self.g_online, "finite")
        ensure(self.exploration_rtg in ("fixed", "curriculum"), "online.exploration_rtg", self.exploration_rtg, "fixed | curriculum")
        ensure(0.0 <= self.curriculum_q <= 100.0, "online.curriculum_q", self.curriculum_q, "in [0, 100]")
        ensure(self.buffer_init in ("top", "random"), "online.buffer_init", self.buffer_init, "top | random")
        ensure(self.sampling in ("length", "return"), "online.sampling", self.sampling, "length | return")


@dataclass
class ODTConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    online: OnlineConfig = field(default_factory=OnlineConfig)
    pretrain_updates: int = 5000
    g_eval: float = 3600.0  # evaluation RTG (raw return units)
    rtg_scale: float = 1000.0  # RTG tokens are returns divided by this
    eval_episodes: int = 10
    # episodes of an evaluation that does not end a phase (0: eval_episodes); the evaluation at
    # the end of pretraining and at the end of the online budget always runs eval_episodes
    eval_episodes_interim: int = 0
    eval_every_updates: int = 5000  # evaluation period during pretraining
    checkpoint_every_updates: int = 1000
    device: str = "auto"  # "auto" | "cpu" | "cuda" | "cuda:N"
    # where training batches are drawn: "host" (numpy, then one copy per batch), "device" (torch
    # on the training device, the data kept there) or "auto" (device on a GPU, host on a CPU)
    batch_sampling: str = "auto"
    precision: str = "fp32"  # "fp32" (the paper) | "tf32" (CUDA matmuls) | "bf16" (autocast forward)
    seed: int = 0

    def validate(self) -> ODTConfig:
        self.model.validate()
        self.optim.validate()
        self.online.validate()
        ensure_sizes(self, "", ("pretrain_updates", "eval_episodes_interim", "seed"), minimum=0)
        ensure_rates(self, "", ("rtg_scale",))
        ensure_sizes(self, "", ("eval_episodes", "eval_every_updates", "checkpoint_every_updates"))
        ensure(self.device == "auto" or self.device.split(":")[0] in ("cpu", "cuda", "mps"), "device", self.device, "auto | cpu | cuda[:N]")
        ensure(is_finite(self.g_eval), "g_eval", self.g_eval, "finite")
        ensure(self.batch_sampling in ("auto", "host", "device"), "batch_sampling", self.batch_sampling,
               "auto | host | device")
        ensure(self.precision in ("fp32", "tf32", "bf16"), "precision", self.precision, "fp32 | tf32 | bf16")
        return self


# --------------------------------------------------------------------------------------------
# The paper's per-dataset tables (appendix C).
# --------------------------------------------------------------------------------------------
# Table C.2: eval context length, positional embedding, g_eval (pretraining).
PAPER_OFFLINE_TABLE: dict[str, dict[str, Any]] = {
    "hopper-medium": dict(eval_context_len=20, positional_embedding=True, g_eval=3600),
    "hopper-medium-replay": dict(eval_context_len=20, positional_embedding=True, g_eval=3600),
    "walker2d-medium": dict(eval_context_len=1, positional_embedding=False, g_eval=5000),
    "walker2d-medium-replay": dict(eval_context_len=5, positional_embedding=False, g_eval=5000),
    "halfcheetah-medium": dict(eval_context_len=5, positional_embedding=False, g_eval=6000),
    "halfcheetah-medium-replay": dict(eval_context_len=1, positional_embedding=False, g_eval=6000),
    "ant-medium": dict(eval_context_len=5, positional_embedding=True, g_eval=6000),
    "ant-medium-replay": dict(eval_context_len=20, positional_embedding=True, g_eval=6000),
    "antmaze-umaze": dict(eval_context_len=1, positional_embedding=True, g_eval=1),
    "antmaze-umaze-diverse": dict(eval_context_len=1, positional_embedding=True, g_eval=1),
}

# Table C.4: pretraining updates, buffer size, embedding, lr, weight decay, eval context,
# g_eval, g_online, positional embedding (finetuning).
PAPER_ONLINE_TABLE: dict[str, dict[str, Any]] = {
    "hopper-medium": dict(pretrain_updates=5000, buffer_size=1000, embed_dim=512, lr=1e-4, weight_decay=5e-4, eval_context_len=5, g_eval=3600, g_online=7200, positional_embedding=False),
    "hopper-medium-replay": dict(pretrain_updates=5000, buffer_size=1000, embed_dim=512, lr=2e-3, weight_decay=1e-4, eval_context_len=5, g_eval=3600, g_online=7200, positional_embedding=False),
    "walker2d-medium": dict(pretrain_updates=10000, buffer_size=1000, embed_dim=512, lr=1e-3, weight_decay=1e-3, eval_context_len=5, g_eval=5000, g_online=10000, positional_embedding=False),
    "walker2d-medium-replay": dict(pretrain_updates=10000, buffer_size=1000, embed_dim=512, lr=1e-3, weight_decay=1e-3, eval_context_len=5, g_eval=5000, g_online=10000, positional_embedding=False),
    "halfcheetah-medium": dict(pretrain_updates=5000, buffer_size=1000, embed_dim=512, lr=1e-4, weight_decay=5e-4, eval_context_len=5, g_eval=6000, g_online=12000, positional_embedding=False),
    "halfcheetah-medium-replay": dict(pretrain_updates=5000, buffer_size=1000, embed_dim=512, lr=1e-4, weight_decay=5e-4, eval_context_len=5, g_eval=6000, g_online=12000, positional_embedding=False),
    "ant-medium": dict(pretrain_updates=10000, buffer_size=1000, embed_dim=512, lr=1.5e-3, weight_decay=1e-4, eval_context_len=1, g_eval=6000, g_online=12000, positional_embedding=False),
    "ant-medium-replay": dict(pretrain_updates=10000, buffer_size=1000, embed_dim=512, lr=1e-4, weight_decay=5e-4, eval_context_len=1, g_eval=6000, g_online=12000, positional_embedding=False),
    "antmaze-umaze": dict(pretrain_updates=7000, buffer_size=1500, embed_dim=512, lr=1e-3, weight_decay=0.0, eval_context_len=5, g_eval=1, g_online=2, positional_embedding=True),
    "antmaze-umaze-diverse": dict(pretrain_updates=7000, buffer_size=1500, embed_dim=1024, lr=1e-3, weight_decay=0.0, eval_context_len=5, g_eval=1, g_online=2, positional_embedding=True),
}


def _require_dataset(dataset: str) -> None:
    if dataset not in PAPER_ONLINE_TABLE:
        raise ConfigError(f"unknown dataset {dataset!r}; known: {', '.join(known_datasets())}")


def paper_config(dataset: str, protocol: str) -> ODTConfig:
    """The paper's configuration for one dataset and protocol ("offline" | "online")."""
    _require_dataset(dataset)
    if protocol not in PROTOCOLS:
        raise ConfigError(f"unknown protocol {protocol!r}; known: {', '.join(PROTOCOLS)}")
    dom = domain_defaults(dataset)
    cfg = ODTConfig(rtg_scale=dom["rtg_scale"], eval_episodes=dom["eval_episodes"])
    cfg.model.max_ep_len = dom["max_ep_len"]
    if protocol == "offline":
        row = PAPER_OFFLINE_TABLE[dataset]
        cfg.pretrain_updates = 100_000
        cfg.optim.lr, cfg.optim.weight_decay = 1e-4, 1e-3
        cfg.model.eval_context_len = row["eval_context_len"]
        cfg.model.positional_embedding = row["positional_embedding"]
        cfg.g_eval = float(row["g_eval"])
        cfg.online.online_samples = 0
        cfg.online.g_online = 2.0 * float(row["g_eval"])
    else:
        row = PAPER_ONLINE_TABLE[dataset]
        cfg.pretrain_updates = row["pretrain_updates"]
        cfg.online.buffer_size = row["buffer_size"]
        cfg.model.embed_dim = row["embed_dim"]
        cfg.optim.lr, cfg.optim.weight_decay = row["lr"], row["weight_decay"]
        cfg.model.eval_context_len = row["eval_context_len"]
        cfg.model.positional_embedding = row["positional_embedding"]
        cfg.g_eval, cfg.online.g_online = float(row["g_eval"]), float(row["g_online"])
    return cfg.validate()


def make_config(dataset: str, protocol: str = "online", preset: str = "paper",
                overrides: dict[str, Any] | None = None) -> ODTConfig:
    """The configuration of one ODT run: the paper's table, scaled by preset, then overrides."""
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
    cfg = scale_odt(paper_config(dataset, protocol), preset, is_antmaze(dataset))
    return apply_overrides(cfg, overrides or {})


def from_dict(data: dict[str, Any]) -> ODTConfig:
    return ODTConfig(
        model=ModelConfig(**data["model"]),
        optim=OptimConfig(**data["optim"]),
        online=OnlineConfig(**data["online"]),
        **{k: v for k, v in data.items() if k not in ("model", "optim", "online")},
    ).validate()
