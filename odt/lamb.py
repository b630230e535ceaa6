"""LAMB (You et al., 2019, "Large Batch Optimization for Deep Learning").

Written here rather than taken from a package: the maintained options either pull a large
dependency tree or are unmaintained (torch-optimizer, last released 2021). The update for
each parameter tensor w with gradient g, at step t:

    m = b1 m + (1 - b1) g            v = b2 v + (1 - b2) g^2
    r = m / (1 - b1^t) / (sqrt(v / (1 - b2^t)) + eps) + wd * w
    w = w - lr * phi(||w||) / ||r|| * r        (phi = identity; ratio 1 if a norm is 0)

The trust ratio applies only to groups with non-zero weight decay unless ``always_adapt``, as
in the LAMB the official ODT code uses (timm's, ``always_adapt=False``): with weight decay 0,
as in the paper's AntMaze rows, the step is Adam's with bias correction.

Implemented with torch._foreach ops so a step is a handful of fused kernels, not a Python
loop over tensors; tests check it against the rule above written out per tensor.
"""

from __future__ import annotations

import torch
from torch.optim import Optimizer


class Lamb(Optimizer):
    def __init__(self, params, *, lr: float, weight_decay: float, eps: float,
                 betas: tuple[float, float] = (0.9, 0.999), always_adapt: bool = False):
        """``lr``, ``weight_decay`` and ``eps`` have no defaults: every run states them (the paper's
        tables give lr and weight decay; the official code passes eps=1e-8)."""
        if lr <= 0:
            raise ValueError(f"lr={lr} must be > 0")
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"betas={betas} must be in [0, 1)")
        if weight_decay < 0:
            raise ValueError(f"weight_decay={weight_decay} must be >= 0")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      always_adapt=always_adapt))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            grads = [p.grad for p in params]
            states = [self.state[p] for p in params]
            for p, st in zip(params, states):
                if not st:
                    st["step"] = 0
                    st["exp_avg"] = torch.zeros_like(p)
                    st["exp_avg_sq"] = torch.zeros_like(p)
                st["step"] += 1
            self._update(group, params, grads, states)
        return loss

    @staticmethod
    def _update(group, params, grads, states) -> None:
        b1, b2 = group["betas"]
        step = states[0]["step"]  # all tensors of a group step together
        m = [st["exp_avg"] for st in states]
        v = [st["exp_avg_sq"] for st in states]
        torch._foreach_lerp_(m, grads, 1.0 - b1)
        torch._foreach_mul_(v, b2)
        torch._foreach_addcmul_(v, grads, grads, value=1.0 - b2)
        denom = torch._foreach_sqrt(v)
        torch._foreach_div_(denom, (1.0 - b2**step) ** 0.5)
        torch._foreach_add_(denom, group["eps"])
        update = torch._foreach_div(m, denom)
        torch._foreach_div_(update, 1.0 - b1**step)
        if group["weight_decay"] != 0:
            torch._foreach_add_(update, params, alpha=group["weight_decay"])
        elif not group.get("always_adapt", False):  # no decay: Adam's step (timm's default)
            torch._foreach_mul_(update, -group["lr"])
            torch._foreach_add_(params, update)
            return
        w_norm = torch.stack(torch._foreach_norm(params))
        u_norm = torch.stack(torch._foreach_norm(update))
        trust = torch.where((w_norm > 0) & (u_norm > 0), w_norm / u_norm, torch.ones_like(w_norm))
        torch._foreach_mul_(update, list((trust * -group["lr"]).unbind()))
        torch._foreach_add_(params, update)
