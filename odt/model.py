"""The causal transformer over interleaved (return-to-go, state, action) tokens.

A GPT-style stack (pre-LayerNorm blocks, fused causal attention) reads the sequence
g_1, s_1, a_1, ..., g_T, s_T, a_T and predicts a_t from the hidden state of token s_t, so
a_t depends only on g_<=t, s_<=t and a_<t. Sequences shorter than the context are padded
on the right; with the causal mask, padding can never influence a real position, so no
attention mask is needed and the fast ``is_causal`` kernel applies.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from odt.config import ModelConfig
from odt.policy import DeterministicHead, GaussianHead

ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh}
ALL_TOKENS = slice(None)
STATE_TOKENS = slice(1, None, 3)  # s_t in the sequence g_1, s_1, a_1, g_2, s_2, a_2, ...

# Dropout draws 16-bit uniforms: P(keep) = 1 - round(p * 2^16) / 2^16 (for p = 0.1 the drop
# probability is 0.1000061), and kept values are scaled by 1 / P(keep), so dropout stays unbiased.
_U16 = 1 << 16


def _keep_scale_cpu(shape: torch.Size, p: float) -> torch.Tensor:
    """Inverted dropout's multiplier: 1 / P(keep) where an element is kept, 0 where it is dropped.

    Sixteen random bits per element from torch's CPU generator: ``random_(-2**63, None)`` fills
    an int64 with 64 uniform bits (plain ``random_()`` gives 63), whose four int16 views are independent
    uniform integers u in [-2^15, 2^15). An element is dropped when u < -2^15 + k, k = round(p *
    2^16). The keep test and the scale are float arithmetic on the exactly converted integers
    (u + 2^15 - k + 1 clamped to [0, 1] is 1 exactly when kept), which vectorises where a
    boolean mask would not. About 2.5x cheaper than 31-bit draws compared as integers (PERF.md), and
    ``bernoulli_``'s 64-bit double per element is slower still; the same generator, so seeding
    and checkpointed RNG state decide every mask.
    """
    n = math.prod(shape)
    k = round(p * _U16)
    bits = torch.empty((n + 3) // 4, dtype=torch.int64).random_(-(2**63), None)
    u = bits.view(torch.int16)[:n].to(torch.float32)
    return u.add_(_U16 // 2 - k + 1).clamp_(0.0, 1.0).mul_(_U16 / (_U16 - k)).view(shape)


def dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """Inverted dropout: keep with probability 1 - p (to 2^-16 on CPU), scale kept values by
    1 / P(keep).

    On CPU the multiplier comes from :func:`_keep_scale_cpu`; elsewhere (CUDA) ``F.dropout``'s
    own kernel is already fast and is used as is.
    """
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu" or p >= 1.0 or round(p * _U16) in (0, _U16):
        return F.dropout(x, p, training=True)
    return x * _keep_scale_cpu(x.shape, p).to(x.dtype)


class Dropout(nn.Dropout):
    """``nn.Dropout`` with the fast CPU mask of :func:`dropout` (same rule, same module API)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return dropout(x, self.p, self.training)


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention; ``queries`` selects the positions whose outputs are
    needed (all by default), every position still serving as a key and a value."""

    def __init__(self, embed_dim: int, n_heads: int, dropout: float):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.proj = nn.Linear(embed_dim, embed_dim)
        self.dropout = dropout
        self.resid_drop = Dropout(dropout)
        self._masks: dict[tuple, torch.Tensor] = {}

    def _causal_bias(self, n: int, queries: slice, like: torch.Tensor) -> torch.Tensor:
        """(number of queries, n) additive mask, -inf where a key lies after its query (the
        future), 0 elsewhere; built once per shape, device and dtype (a cache, not a buffer,
        so the state dict is unchanged)."""
        key = (n, queries.start, queries.step, like.device, like.dtype)
        if key not in self._masks:
            query_pos = torch.arange(n, device=like.device)[queries]
            future = torch.arange(n, device=like.device)[None, :] > query_pos[:, None]
            self._masks[key] = torch.zeros(future.shape, device=like.device, dtype=like.dtype
                                           ).masked_fill_(future, float("-inf"))
        return self._masks[key]

    def _project(self, x: torch.Tensor, queries: slice) -> tuple[torch.Tensor, ...]:
        """q at the query positions, k and v everywhere, each (B, heads, positions, d_head)."""
        b, n, d = x.shape
        h = self.n_heads
        if queries == ALL_TOKENS:
            return self.qkv(x).view(b, n, 3, h, d // h).permute(2, 0, 3, 1, 4)
        w, bias = self.qkv.weight, self.qkv.bias
        q = F.linear(x[:, queries], w[:d], bias[:d])
        k, v = F.linear(x, w[d:], bias[d:]).view(b, n, 2, h, d // h).permute(2, 0, 3, 1, 4)
        return q.view(b, q.shape[1], h, d // h).transpose(1, 2), k, v

    def forward(self, x: torch.Tensor, queries: slice = slice(None)) -> torch.Tensor:
        b, n, d = x.shape
        h, dh = self.n_heads, d // self.n_heads
        q, k, v = self._project(x, queries)
        nq = q.shape[2]
        if self.training and self.dropout > 0.0 and x.device.type == "cpu":
            # On CPU, attention dropout makes SDPA fall back to its unfused math path, which
            # rebuilds the causal mask, masks with masked_fill and runs a NaN-safe softmax at
            # every call. Written out here instead, same math: softmax(q k^T / sqrt(d_head) + M)
            # with M = -inf on the future, then dropout, then times v. The cached additive
            # mask is fused into the score matmul (baddbmm), and its backward costs nothing.
            # (CUDA's fused SDPA kernels apply dropout themselves: they take the else branch.)
            q = q.reshape(b * h, nq, dh)
            k, v = (t.reshape(b * h, n, dh) for t in (k, v))
            scores = torch.baddbmm(self._causal_bias(n, queries, q), q, k.transpose(1, 2),
                                   alpha=1.0 / math.sqrt(dh))
            attn = dropout(torch.softmax(scores, dim=-1), self.dropout, True)
            y = torch.bmm(attn, v).view(b, h, nq, dh)
        else:  # evaluation and rollouts (no dropout), or CUDA: the fused kernels
            p = self.dropout if self.training else 0.0
            if queries == ALL_TOKENS:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=p)
            else:
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=self._causal_bias(n, queries, q),
                                                   dropout_p=p)
        return self.resid_drop(self.proj(y.transpose(1, 2).reshape(b, nq, d)))


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
            Dropout(dropout),
        )

    def forward(self, x: torch.Tensor, queries: slice = ALL_TOKENS) -> torch.Tensor:
        """The block's outputs at the ``queries`` positions (every position attends causally
        over all of x)."""
        x_normed = self.ln1(x)
        x = x[:, queries] + self.attn(x_normed, queries)
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
        self.embed_drop = Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(
            Block(d, cfg.n_heads, cfg.dropout, cfg.activation) for _ in range(cfg.n_layers)
        )
        self.ln_f = nn.LayerNorm(d)
        if cfg.stochastic:
            self.head: nn.Module = GaussianHead(d, act_dim, cfg.log_std_min, cfg.log_std_max)
        else:
            self.head = DeterministicHead(d, act_dim)
        self.blocks.apply(_gpt2_init)
        self.ln_f.apply(_gpt2_init)
        if cfg.stochastic:  # DT's deterministic head keeps PyTorch's default, as in DT's code
            self.head.apply(_head_init)

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
        for block in self.blocks[:-1]:
            x = block(x)
        # Only the state tokens' outputs are read, so the last block computes only those (its
        # keys and values still cover every token): same outputs, a third of its work.
        state_hidden = self.ln_f(self.blocks[-1](x, STATE_TOKENS))
        return self.head(state_hidden)


# Initialisation as in the official code (online-dt, and kzl/decision-transformer for DT): only
# the GPT-2 stack (the blocks and the final LayerNorm) gets GPT-2's init; the token embeddings,
# the positional embedding and embed_ln keep PyTorch's defaults, and ODT's Gaussian head gets
# orthogonal weights and zero biases (pytorch_sac's actor). The defaults matter: embed_return is
# Linear(1, d) and its output is layer-normalised per token, LN(w g + b). With GPT-2's zero bias,
# LN(w g) = sign(g) LN(w) (up to LayerNorm's eps) carries only the sign of the return-to-go, and
# LAMB's trust ratio (update scaled by the parameter's own norm) keeps a zero-initialised bias
# near zero for the whole run: the model could not see how much return it was asked for.
# PyTorch's default gives b ~ U(-1, 1), of the size of w g, so LN(w g + b) varies with g.
def _gpt2_init(module: nn.Module) -> None:
    """GPT-2's initialisation: N(0, 0.02) weights, zero biases, unit LayerNorms."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.LayerNorm):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)


def _head_init(module: nn.Module) -> None:
    """The stochastic head's linear layers: orthogonal weights, zero biases."""
    if isinstance(module, nn.Linear):
        nn.init.orthogonal_(module.weight)
        nn.init.zeros_(module.bias)

