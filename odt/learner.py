"""ODT's learner: the policy, its optimisers, the entropy dual variable, and one update.

Algorithm 2's lines 3-8 without the loop around them: an ``ODTLearner`` is built from the
config and the observation and action sizes alone (no environment, no data), takes a batch of
windows as ``step`` (or ``update``) and moves the policy by one gradient step on
J(theta) - lambda H(theta) and log(lambda) by one dual step on lambda (H - beta). Its state is
what an update changes: weights, optimiser moments, the warmup schedule, lambda, and the
first non-finite loss if one occurred. The loop that draws batches, explores, evaluates and
checkpoints is ``odt.train.ODTTrainer``, which owns one.

``step`` never waits for the device: its metrics stay device tensors and a non-finite loss is
noted on the device (index and value), read only when the caller asks ``first_divergence``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch

from odt.config import ODTConfig
from odt.lamb import Lamb
from odt.model import DecisionTransformer
from odt.objective import deterministic_policy_loss, stochastic_policy_loss, temperature_loss


def warmup_factor(step: int, warmup_steps: int) -> float:
    """Linear warmup of the learning rate over the first warmup_steps updates."""
    return min(1.0, (step + 1) / warmup_steps)


class ODTLearner:
    """Model, optimisers and lambda of one ODT (or DT) policy, updated one batch at a time.

    The model's initial weights are drawn from the global torch RNG (seed it first for a
    reproducible learner), and each stochastic update draws its entropy sample from it too.
    ``device`` is a resolved device (``rlbase.training.resolve_device`` turns ``auto`` into one).
    """

    def __init__(self, cfg: ODTConfig, obs_dim: int, act_dim: int, device: torch.device | str = "cpu"):
        cfg.validate()
        self.cfg, self.obs_dim, self.act_dim = cfg, obs_dim, act_dim
        self.device = torch.device(device)
        if cfg.precision == "tf32" and self.device.type != "cuda":
            raise ValueError(f"precision='tf32' needs a CUDA device (device is {self.device}): "
                             "TF32 is a mode of CUDA matmuls; use fp32 or bf16 here")
        self.model = DecisionTransformer(obs_dim, act_dim, cfg.model).to(self.device)
        self.optimizer = self._make_optimizer()
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: warmup_factor(s, cfg.optim.warmup_steps))
        self.log_lambda = torch.tensor(np.log(cfg.optim.init_lambda), device=self.device, requires_grad=True)
        self.lambda_optimizer = torch.optim.Adam([self.log_lambda], lr=cfg.optim.lambda_lr)
        self.target_entropy = (-float(act_dim) if cfg.optim.target_entropy is None
                               else float(cfg.optim.target_entropy))
        # the first non-finite loss: [update index, loss value], index -1 while all are finite
        self._divergence = torch.tensor([-1.0, 0.0], dtype=torch.float64, device=self.device)

    def _make_optimizer(self) -> torch.optim.Optimizer:
        o = self.cfg.optim
        if o.optimizer == "lamb":
            return Lamb(self.model.parameters(), lr=o.lr, weight_decay=o.weight_decay, eps=1e-8)
        return torch.optim.AdamW(self.model.parameters(), lr=o.lr, weight_decay=o.weight_decay)

    @property
    def updates(self) -> int:
        """Updates taken: the warmup schedule steps once per update (and is saved with the rest)."""
        return self.scheduler.last_epoch

    @property
    def lam(self) -> float:
        return float(self.log_lambda.detach().exp())

    def set_base_lr(self, lr: float) -> None:
        """A new base learning rate (the online phase's), the warmup factor still applied to it."""
        self.scheduler.base_lrs = [lr for _ in self.optimizer.param_groups]
        for group in self.optimizer.param_groups:
            group["lr"] = lr * warmup_factor(self.scheduler.last_epoch, self.cfg.optim.warmup_steps)

    @contextmanager
    def precision(self) -> Iterator[None]:
        """The forward pass at cfg.precision: fp32 (the paper), TF32 matmuls, or bf16 autocast."""
        if self.cfg.precision == "bf16":
            with torch.autocast(self.device.type, dtype=torch.bfloat16):
                yield
        elif self.cfg.precision == "tf32":
            before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
            try:
                yield
            finally:
                torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before
        else:
            yield

    # ----- divergence ----------------------------------------------------------------------
    def _note_divergence(self, loss: torch.Tensor) -> None:
        """Remember the first non-finite loss and its update, without reading it (no host sync)."""
        first = ~torch.isfinite(loss.detach()) & (self._divergence[0] < 0)
        now = torch.stack([torch.full_like(self._divergence[0], self.updates), loss.detach().double()])
        self._divergence = torch.where(first, now, self._divergence)

    def first_divergence(self) -> tuple[int, float] | None:
        """(update, loss) of the first NaN or inf loss so far, or None (one host read)."""
        at, loss = self._divergence.tolist()
        return (int(at), loss) if at >= 0 else None

    def parameters_finite(self) -> bool:
        return bool(torch.stack([torch.isfinite(p).all() for p in self.model.parameters()]).all())

    # ----- one update (Algorithm 2, lines 3-8) ---------------------------------------------
    def step(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """One update with no host read: its metrics stay on the device, and a non-finite loss
        is noted for ``first_divergence``. ``batch``: states, actions, rtg, timesteps, mask."""
        self.model.train()
        with self.precision():
            out = self.model(batch["states"], batch["actions"], batch["rtg"], batch["timesteps"])
        out = tuple(o.float() for o in out) if isinstance(out, tuple) else out.float()  # the loss in fp32
        if self.cfg.model.stochastic:
            terms = stochastic_policy_loss(*out, batch["actions"], batch["mask"], self.log_lambda.exp())
        else:
            terms = deterministic_policy_loss(out, batch["actions"], batch["mask"])
        self._note_divergence(terms.loss)
        self.optimizer.zero_grad(set_to_none=True)
        terms.loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.optim.grad_clip)
        self.optimizer.step()
        self.scheduler.step()
        if self.cfg.model.stochastic:  # one alternating dual step on log(lambda)
            self.lambda_optimizer.zero_grad(set_to_none=True)
            temperature_loss(self.log_lambda, terms.entropy, self.target_entropy).backward()
            self.lambda_optimizer.step()
        metrics = {"loss": terms.loss.detach(), "nll": terms.nll.detach()}
        if self.cfg.model.stochastic:  # DT's deterministic head has no entropy and no lambda
            metrics["entropy"], metrics["lambda"] = terms.entropy.detach(), self.log_lambda.detach().exp()
        return metrics

    # ----- state ---------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The learner's part of a checkpoint (its keys are the trainer's checkpoint keys)."""
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "log_lambda": self.log_lambda.detach().cpu(),
            "lambda_optimizer": self.lambda_optimizer.state_dict(),
            "divergence": self._divergence.cpu(),
        }

    def load_state_dict(self, state: dict) -> None:
        """Load a learner's state, or a whole trainer checkpoint (other keys are not read)."""
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        with torch.no_grad():
            self.log_lambda.copy_(state["log_lambda"].to(self.device))
        self.lambda_optimizer.load_state_dict(state["lambda_optimizer"])
        if "divergence" in state:  # absent from checkpoints written before it was recorded
            self._divergence = state["divergence"].to(self.device)
