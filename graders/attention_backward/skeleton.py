"""Kata 19: the backward pass of softmax attention, by hand (FlashAttention-2's recomputation).

Read README.md in this folder, fill in the functions and the class below, then run
    pytest katas/19_attention_backward
"""

from __future__ import annotations

import math  # noqa: F401  (you will want math.sqrt)

import torch
from torch import Tensor


def attention_forward(q: Tensor, k: Tensor, v: Tensor, causal: bool = False) -> tuple[Tensor, Tensor]:
    """softmax(q kᵀ / sqrt(d)) v and each query's log-sum-exp of its scaled scores.

    q (b, h, n, d), k and v (b, h, m, d). Returns (out, lse): out (b, h, n, d) in q's
    dtype and lse (b, h, n), in q's dtype for float32/float64 and in float32 for
    float16/bfloat16 (FlashAttention's). causal=True needs n == m; query i then sees keys
    0 .. i.
    Any method: the forward may build the (n, m) score matrix.
    """
    raise NotImplementedError("see katas/19_attention_backward/README.md")


def attention_backward(q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor, grad_out: Tensor,
                       causal: bool = False, block_size: int | None = None
                       ) -> tuple[Tensor, Tensor, Tensor]:
    """(dq, dk, dv): the gradients of sum(out * grad_out) w.r.t. q, k and v, by the formulas.

    q, out, grad_out (b, h, n, d); k, v (b, h, m, d); lse (b, h, n), all from the forward
    (lse float32 for half inputs).
    Returns tensors shaped like q, k and v, in q's dtype. block_size None: any method.
    block_size an int: tiled like FlashAttention-2; no tensor you create may hold more than
    max(n, m) * max(block_size, d) elements per (batch, head), so recompute each tile's
    probabilities from lse. No autograd in here (torch.autograd, .backward(), torch.func).
    """
    raise NotImplementedError("see katas/19_attention_backward/README.md")


class Attention(torch.autograd.Function):
    """Softmax attention with a hand-written backward.

    forward(ctx, q, k, v, causal=False) returns out (b, h, n, d) alone and keeps what the
    backward needs (q, k, v, out, lse) but nothing with (n, m) elements per (batch, head).
    backward(ctx, grad_out) returns (dq, dk, dv, None).
    """

    @staticmethod
    def forward(ctx, q: Tensor, k: Tensor, v: Tensor, causal: bool = False) -> Tensor:
        raise NotImplementedError("see katas/19_attention_backward/README.md")

    @staticmethod
    def backward(ctx, grad_out: Tensor):
        raise NotImplementedError("see katas/19_attention_backward/README.md")


def attention(q: Tensor, k: Tensor, v: Tensor, causal: bool = False) -> Tensor:
    """softmax(q kᵀ / sqrt(d)) v through Attention (call Attention.apply: it takes no keywords).

    q (b, h, n, d), k and v (b, h, m, d) -> out (b, h, n, d).
    """
    raise NotImplementedError("see katas/19_attention_backward/README.md")
