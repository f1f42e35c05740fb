"""Kata 14: attention with an online softmax, one block of keys at a time (FlashAttention's idea).

Read README.md in this folder, fill in the function below, then run
    pytest katas/14_flash_attention
"""

from __future__ import annotations

import math  # noqa: F401  (you will want math.sqrt)

import torch
from torch import Tensor


def flash_attention(q: Tensor, k: Tensor, v: Tensor, block_size: int = 64,
                    causal: bool = False) -> tuple[Tensor, Tensor]:
    """softmax(q kᵀ / sqrt(d)) v, visiting keys and values in blocks of block_size.

    q (b, h, n, d), k and v (b, h, m, d). Returns (output, lse): output (b, h, n, d) in
    q's dtype and lse (b, h, n), the log-sum-exp of each query's scaled scores, in q's
    dtype for float32/float64 and in float32 for float16/bfloat16 (FlashAttention's).
    No tensor you create may hold the whole (n, m) score matrix: keep, per query, a running
    maximum, a running sum and an output accumulator. causal=True needs n == m; query i
    then sees keys 0 .. i.
    """
    raise NotImplementedError("see katas/14_flash_attention/README.md")
