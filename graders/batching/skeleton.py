"""Kata 25: iteration-level scheduling over a packed, ragged batch.

Read README.md in this folder, fill in the functions below, then run
    pytest katas/25_continuous_batching
"""

from __future__ import annotations

import torch


def varlen_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    cu_seqlens_q: torch.Tensor,
    cu_seqlens_k: torch.Tensor,
    causal: bool = False,
) -> torch.Tensor:
    """Attention over a packed, ragged batch (FlashAttention's varlen layout).

    q: (T_q, h, d); k, v: (T_k, h, d) -- the segments laid end to end, no padding.
    cu_seqlens_q, cu_seqlens_k: (B + 1,) int32 or int64 prefix sums, first 0, last T_q (T_k):
    segment j owns query rows cu_q[j] .. cu_q[j+1]-1 and key rows cu_k[j] .. cu_k[j+1]-1.
    Each query attends, per head, to its own segment's keys only: softmax(q k^T / sqrt(d)) v.
    causal=True aligns bottom-right: the n_j queries are the last n_j of the m_j positions,
    so query a sees keys 0 .. m_j - n_j + a.
    No tensor you create may hold more than h * max(T_q * T_k, (T_q + T_k) * d) elements.
    Returns (T_q, h, d) in q's dtype.
    """
    raise NotImplementedError("see katas/25_continuous_batching/README.md")


def generate_all(
    model_step,
    requests: list[tuple[list[int], int]],
    max_batch_size: int,
    max_batch_tokens: int,
    eos_id: int | None = None,
) -> list[list[int]]:
    """Greedy decoding of every request with continuous batching and chunked prefill.

    model_step(input_ids (T,) int64, positions (T,) int64, cu_seqlens (B + 1,) int32,
    seq_ids list of B ints) -> logits (B, V); row j predicts the token after segment j.
    requests: list of (prompt, max_new_tokens). Each call: 1 .. max_batch_size segments of
    distinct unfinished requests, at most max_batch_tokens tokens in all, every call maximal.
    A segment that covers all of its request's ready tokens yields the argmax of its row.
    A request finishes at eos_id (kept) or at its max_new_tokens-th token.
    Returns each request's generated tokens (Python ints), in the order of requests.
    """
    raise NotImplementedError("see katas/25_continuous_batching/README.md")
