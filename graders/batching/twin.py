"""Kata 25's varlen reference with one switch per mistake, and the graded batches.

:func:`varlen` is the reference (a loop over segments, float64 inside) with a switch per
catalogued attention mistake; :func:`attention_suspects` turns the switches into the
suspects a check tries on a mismatch. The skewed batch of the no-padding rule is
:func:`skewed_batch`.
"""

from __future__ import annotations

import torch
from torch import Tensor

from graders.core.inputs import randn
from graders.core.mistakes import Suspect
from graders.twins.attention import dense

# A switch of the reference -> the catalogued mistake it reproduces.
ATTENTION_MISTAKES = {
    "no-scale": "missing-scale",
    "top-left": "causal-mask-offset",  # tril(0): right only where n_j = m_j
    "flipped": "causal-mask-offset",  # tril(n - m), n and m swapped: right only where n_j = m_j
    "no-causal": "causal-mask-missing",
    "pack-causal": "cross-sequence-attention",  # one causal mask over the whole pack
    "pack-causal-top-left": "cross-sequence-attention",
    "pack-full": "cross-sequence-attention",  # no mask at all over the pack
}


def bounds(cu: Tensor) -> list[int]:
    """cu_seqlens (num_seqs + 1,) int -> its offsets as Python ints: sequence i is rows
    bounds[i]:bounds[i + 1] of the packed tensor."""
    return [int(x) for x in cu.tolist()]


def varlen(q: Tensor, k: Tensor, v: Tensor, cu_q: Tensor, cu_k: Tensor, causal: bool = False,
           mistake: str | None = None) -> Tensor:
    """softmax(q kᵀ / sqrt(d) + mask) v per segment and head, in q's dtype (float64 inside)."""
    scale = 1.0 if mistake == "no-scale" else None
    if mistake and mistake.startswith("pack-"):  # the whole pack as one segment
        offset = 0 if mistake == "pack-causal-top-left" else None
        return segment(q, k, v, scale, causal and mistake != "pack-full", offset).to(q.dtype)
    cq, ck = bounds(cu_q), bounds(cu_k)
    parts = []
    for j in range(len(cq) - 1):
        n, m = cq[j + 1] - cq[j], ck[j + 1] - ck[j]
        offset = {"top-left": 0, "flipped": n - m}.get(mistake or "")  # None: m - n, right
        parts.append(segment(q[cq[j]:cq[j + 1]], k[ck[j]:ck[j + 1]], v[ck[j]:ck[j + 1]], scale,
                             causal and mistake != "no-causal", offset))
    return torch.cat(parts).to(q.dtype)


def segment(q: Tensor, k: Tensor, v: Tensor, scale: float | None, causal: bool,
            offset: int | None) -> Tensor:
    """One segment's attention, q (n, h, d) over k, v (m, h, d): (n, h, d) in float64. A
    query with every key blocked (only the flipped mask blocks one) gets NaN, as a plain
    softmax gives."""
    out = dense(q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1), scale=scale,
                causal=causal, offset=offset, zero_blocked_rows=False)
    return out.transpose(0, 1)


def attention_suspects(q: Tensor, k: Tensor, v: Tensor, cu_q: Tensor, cu_k: Tensor,
                       causal: bool) -> list[Suspect]:
    """One suspect per switch that changes something on this input (the causal switches only
    with causal=True)."""
    switches = [s for s in ATTENTION_MISTAKES
                if causal or s in ("no-scale", "pack-full")]
    return [Suspect(ATTENTION_MISTAKES[s],
                    lambda s=s: varlen(q, k, v, cu_q, cu_k, causal, s)) for s in switches]


def batch(segments: list[tuple[int, int]], h: int, d: int, seed: int, dtype: torch.dtype,
          index_dtype: torch.dtype = torch.int32) -> tuple[Tensor, ...]:
    """q (T_q, h, d), k, v (T_k, h, d) and the prefix sums of the (n_j, m_j) segments."""
    cu_q = torch.tensor([0] + [n for n, _ in segments], dtype=index_dtype).cumsum(0).to(index_dtype)
    cu_k = torch.tensor([0] + [m for _, m in segments], dtype=index_dtype).cumsum(0).to(index_dtype)
    t_q, t_k = int(cu_q[-1]), int(cu_k[-1])
    return (randn(t_q, h, d, seed=seed, dtype=dtype), randn(t_k, h, d, seed=seed + 1, dtype=dtype),
            randn(t_k, h, d, seed=seed + 2, dtype=dtype), cu_q, cu_k)


# The contract's skewed batch: a 96-token prefill, 40 decode segments of 8 keys, a 5-token
# chunk after 15 cached tokens: T_q = 141, T_k = 436; h = 2, d = 16.
SKEWED = [(96, 96)] + [(1, 8)] * 40 + [(5, 20)]


def skewed_batch(dtype: torch.dtype = torch.float32) -> tuple[Tensor, ...]:
    return batch(SKEWED, 2, 16, 2500, dtype)


def memory_limit(t_q: int, t_k: int, h: int, d: int) -> int:
    """No tensor created during the call may hold more than this many elements."""
    return h * max(t_q * t_k, (t_q + t_k) * d)
