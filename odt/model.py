"""The causal transformer over interleaved (return-to-go, state, action) tokens.

A GPT-style stack (pre-LayerNorm blocks, fused causal attention) reads the sequence
g_1, s_1, a_1, ..., g_T, s_T, a_T and predicts a_t from the hidden state of token s_t, so
a_t depends only on g_<=t, s_<=t and a_<t. Sequences shorter than the context are padded
on the right; with the causal mask, padding can never influence a real position, so no
attention mask is needed and the fast ``is_causal`` kernel applies.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from odt.config import ModelConfig
from odt.policy import DeterministicHead, GaussianHead

ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh}


class CausalSelfAttention(nn.Module):
    def __init__(self, embed_dim: int, n_heads: int, dropout: float):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.proj = nn.Linear(embed_dim, embed_dim)
        self.dropout = dropout
        self.resid_drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(
            q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0
        )
        return self.resid_drop(self.proj(y.transpose(1, 2).reshape(b, n, d)))


class Block(nn.Module):
    def __init__(self, embed_dim: int, n_heads: int, dropout: float, activation: str):
        super().__init__()
        self.ln1 = nn.LayerNorm(embed_dim)
        self.attn = CausalSelfAttention(embed_dim, n_heads, dropout)
        self.ln2 = nn.LayerNorm(embed_dim)
        self.mlp = nn.Sequential(
            nn.Linear(embed_dim, 4 * embed_dim),
            ACTIVATIONS[activation](),
            nn.Linear(4 * embed_dim, embed_dim),
            nn.Dropout(dropout),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class DecisionTransformer(nn.Module):
    """ODT's model; ``cfg.stochastic=False`` gives the original DT (deterministic head)."""

    def __init__(self, obs_dim: int, act_dim: int, cfg: ModelConfig):
        super().__init__()
        d = cfg.embed_dim
        self.cfg = cfg
        self.obs_dim, self.act_dim = obs_dim, act_dim
        self.embed_return = nn.Linear(1, d)
        self.embed_state = nn.Linear(obs_dim, d)
        self.embed_action = nn.Linear(act_dim, d)
        self.embed_timestep = nn.Embedding(cfg.max_ep_len, d) if cfg.positional_embedding else None
        self.embed_ln = nn.LayerNorm(d)
        self.embed_drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(
            Block(d, cfg.n_heads, cfg.dropout, cfg.activation) for _ in range(cfg.n_layers)
        )
        self.ln_f = nn.LayerNorm(d)
        if cfg.stochastic:
            self.head: nn.Module = GaussianHead(d, act_dim, cfg.log_std_min, cfg.log_std_max)
        else:
            self.head = DeterministicHead(d, act_dim)
        self.apply(_init_weights)

    def forward(self, states: torch.Tensor, actions: torch.Tensor, returns_to_go: torch.Tensor,
                timesteps: torch.Tensor):
        """Action-distribution parameters for every step.

        states (B, T, obs_dim), actions (B, T, act_dim), returns_to_go (B, T, 1) already
        scaled, timesteps (B, T) long. Returns the head's output at each state token: a
        (mean, log_std) pair of (B, T, act_dim) tensors, or actions for the deterministic head.
        """
        b, t, _ = states.shape
        tokens = torch.stack(
            (self.embed_return(returns_to_go), self.embed_state(states), self.embed_action(actions)),
            dim=2,
        )  # (B, T, 3, d)
        if self.embed_timestep is not None:
            tokens = tokens + self.embed_timestep(timesteps).unsqueeze(2)
        x = self.embed_drop(self.embed_ln(tokens.reshape(b, 3 * t, -1)))
        for block in self.blocks:
            x = block(x)
        state_hidden = self.ln_f(x).view(b, t, 3, -1)[:, :, 1]
        return self.head(state_hidden)


def _init_weights(module: nn.Module) -> None:
    """GPT-2's initialisation: N(0, 0.02) weights, zero biases, unit LayerNorms."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.LayerNorm):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)
