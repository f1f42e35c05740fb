"""Softmax attention as the graders compute it: the steps every reference shares, and one
float64 dense attention for the katas that cut attention into segments, blocks or caches.

:func:`dense` scores every (query, key) pair in float64, with the switches the later katas'
twins share (a scale, a bool or float mask, a causal mask with an offset, grouped kv heads
laid out right or tiled); a twin calls it once per segment, block or decode step and keeps
its own mistakes outside. Kata 01's reference (:func:`graders.twins.reference.attend`) is
built on the same steps: :func:`scores`, :func:`additive_mask` and :func:`softmax_rows`.

Masks follow the contract: bool ``True`` = blocked (may not be attended to), float masks
are added to the scores; a query with every key blocked gets zero weights.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from graders.twins.heads import expand_kv_heads

NEG_INF = float("-inf")


def additive_mask(mask: Tensor | None, dtype: torch.dtype, invert: bool = False) -> Tensor | None:
    """bool (True = blocked) -> 0 / -inf; float masks are already additive."""
    if mask is None:
        return None
    if mask.dtype != torch.bool:
        return mask
    blocked = ~mask if invert else mask
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(blocked, NEG_INF)


def scores(query: Tensor, key: Tensor, scale: float | None = None) -> Tensor:
    """query (..., n, d_k), key (..., m, d_k) -> (..., n, m): q kᵀ · scale, 1/sqrt(d_k) when
    scale is None (missing-scale is scale=1.0)."""
    if scale is None:
        scale = 1.0 / math.sqrt(query.size(-1))
    return query @ key.transpose(-2, -1) * scale


def softmax_rows(scores: Tensor, dim: int = -1, zero_blocked_rows: bool = True) -> Tensor:
    """softmax(scores, dim); with ``zero_blocked_rows`` a row whose scores are all -inf (every
    key blocked) gets zero weights instead of NaN, and finite gradients: its scores are made
    finite before the softmax (the softmax of an all -inf row is NaN, and so are the
    gradients through it) and its weights zeroed after."""
    if not zero_blocked_rows:
        return torch.softmax(scores, dim=dim)
    all_blocked = torch.isneginf(scores).all(dim=-1, keepdim=True)
    weights = torch.softmax(scores.masked_fill(all_blocked, 0.0), dim=dim)
    return weights.masked_fill(all_blocked, 0.0)


def causal_blocked(q_len: int, k_len: int, offset: int | None = None,
                   device: torch.device | str | None = None) -> Tensor:
    """bool (q_len, k_len), True (blocked) where key j lies after query i's position
    i + offset. offset None: k_len - q_len, the queries being the keys' last q_len positions
    (bottom-right, kata 11's cache); 0 is ``is_causal=True``'s top-left alignment."""
    if offset is None:
        offset = k_len - q_len
    return torch.ones(q_len, k_len, dtype=torch.bool, device=device).triu(diagonal=offset + 1)


def dense(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None,
          scale: float | None = None, group: int = 1, *, causal: bool = False,
          offset: int | None = None, kv_layout: str = "interleave",
          zero_blocked_rows: bool = True) -> Tensor:
    """softmax(q kᵀ · scale + mask) v in float64, every (query, key) pair scored.

    q (..., heads, q_len, head_dim); k (..., kv_heads, k_len, head_dim) and v (..., kv_heads,
    k_len, v_dim), heads = kv_heads * group: query head j reads kv head j // group
    (``repeat_interleave``, kata 13), or with ``kv_layout`` "tile", "tile-k" or "tile-v"
    (:data:`graders.twins.heads.KV_LAYOUTS`) kv head j % kv_heads for both, the keys or
    the values; with group 1 the heads dimension may be left out (q (q_len, head_dim)).
    mask bool (True = blocked) or float (added), broadcastable to (..., heads, q_len,
    k_len). causal: also block the keys after each query, aligned by ``offset``
    (see :func:`causal_blocked`). scale None: 1/sqrt(head_dim). zero_blocked_rows False:
    a fully blocked query gives NaN, as a plain softmax does.

    Returns (..., heads, q_len, v_dim), float64, on q's device; differentiable in q, k, v.
    """
    q, k, v = (t.to(torch.float64) for t in (q, k, v))
    if group != 1:
        k, v = expand_kv_heads(k, v, group, kv_layout)
    s = scores(q, k, scale)
    if mask is not None:
        s = s + additive_mask(mask, s.dtype)
    if causal:
        s = s.masked_fill(causal_blocked(s.size(-2), s.size(-1), offset, s.device), NEG_INF)
    return softmax_rows(s, zero_blocked_rows=zero_blocked_rows) @ v
