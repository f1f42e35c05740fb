"""Kata 11: causal self-attention with a key/value cache.

Read README.md in this folder, fill in the class below, then run
    pytest katas/11_kv_cache
"""

from __future__ import annotations

import math  # noqa: F401  (you will want math.sqrt)

import torch  # noqa: F401
from torch import Tensor, nn

Cache = tuple[Tensor, Tensor]


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention that can be fed a sequence piece by piece.

    Submodules q_proj, k_proj, v_proj, out_proj: nn.Linear(E, E, bias=bias). embed_dim E
    is split into num_heads heads of width head_dim = E // num_heads. The cache holds the
    keys and values of the s positions seen so far (k_proj and v_proj outputs split into
    heads, unscaled): a tuple (k, v), each (batch, heads, s, head_dim).
    """

    def __init__(self, embed_dim: int, num_heads: int, bias: bool = True):
        super().__init__()
        raise NotImplementedError("see katas/11_kv_cache/README.md")

    def forward(self, x: Tensor, cache: Cache | None = None) -> tuple[Tensor, Cache]:
        """x (b, t, E): t new positions, s ... s+t-1, where s is the cache's length (0 if None).

        Returns the output (b, t, E) and the new cache (k, v), each (b, h, s + t, head_dim).
        The cache passed in is left untouched.
        """
        raise NotImplementedError("see katas/11_kv_cache/README.md")
