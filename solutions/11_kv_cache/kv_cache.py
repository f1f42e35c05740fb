"""Reference solution for kata 11: causal self-attention with a key/value cache."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

Cache = tuple[Tensor, Tensor]


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention that can be fed a sequence piece by piece.

    Submodules q_proj, k_proj, v_proj, out_proj: nn.Linear(E, E, bias=bias). The cache
    holds the keys and values of the positions seen so far, split into heads and
    unscaled: a tuple (k, v), each (batch, heads, s, head_dim).
    """

    def __init__(self, embed_dim: int, num_heads: int, bias: bool = True):
        super().__init__()
        if embed_dim % num_heads != 0:
            raise ValueError(f"embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)

    def _split_heads(self, x: Tensor) -> Tensor:
        """(b, t, E) -> (b, h, t, head_dim); head i holds columns i*d:(i+1)*d."""
        b, t, _ = x.shape
        return x.view(b, t, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, x: Tensor, cache: Cache | None = None) -> tuple[Tensor, Cache]:
        """x (b, t, E): the t new positions. cache None or (k, v), each (b, h, s, head_dim).

        Returns the output (b, t, E) and the new cache (k, v), each (b, h, s + t, head_dim).
        """
        b, t, _ = x.shape
        q = self._split_heads(self.q_proj(x))  # (b, h, t, d)
        k = self._split_heads(self.k_proj(x))  # (b, h, t, d)
        v = self._split_heads(self.v_proj(x))
        if cache is not None:
            # A new tensor, never an in-place write: the caller's cache stays valid.
            k = torch.cat([cache[0], k], dim=2)  # (b, h, s + t, d)
            v = torch.cat([cache[1], v], dim=2)
        s = k.size(2) - t

        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # (b, h, t, s + t)
        # New query i sits at position s + i: it sees key j when j <= s + i.
        blocked = torch.ones(t, s + t, dtype=torch.bool, device=x.device).triu(diagonal=s + 1)
        scores = scores.masked_fill(blocked, float("-inf"))
        weights = torch.softmax(scores, dim=-1)

        attended = (weights @ v).transpose(1, 2).reshape(b, t, self.embed_dim)
        return self.out_proj(attended), (k, v)
