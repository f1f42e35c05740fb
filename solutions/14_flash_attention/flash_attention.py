"""Reference solution for kata 14: attention with an online softmax, one key block at a time."""

from __future__ import annotations

import math

import torch
from torch import Tensor


def flash_attention(q: Tensor, k: Tensor, v: Tensor, block_size: int = 64,
                    causal: bool = False) -> tuple[Tensor, Tensor]:
    """softmax(q kᵀ / sqrt(d)) v without ever building the (n, m) score matrix.

    q (b, h, n, d), k and v (b, h, m, d). Returns output (b, h, n, d) in q's dtype and lse
    (b, h, n), the log-sum-exp of each query's scaled scores: in q's dtype for float32 and
    float64, in float32 for float16 and bfloat16 (as FlashAttention returns it: the
    backward rebuilds P = exp(S - lse) from it). Keys and values are read in blocks of
    block_size; per query we keep the running maximum of the scores, the running sum of
    their exponentials and an output accumulator, both rescaled whenever the maximum
    grows. causal=True (n == m): query i sees keys 0 .. i.
    """
    n, m = q.size(-2), k.size(-2)
    if causal and n != m:
        raise ValueError(f"causal attention needs as many queries as keys, got n={n}, m={m}")
    out_dtype = q.dtype
    if q.dtype in (torch.float16, torch.bfloat16):
        # Half inputs: the arithmetic in float32, as the kernels keep their accumulators.
        q, k, v = q.float(), k.float(), v.float()
    scale = 1.0 / math.sqrt(q.size(-1))
    row_max = q.new_full((*q.shape[:-1], 1), float("-inf"))  # (b, h, n, 1)
    row_sum = q.new_zeros((*q.shape[:-1], 1))  # (b, h, n, 1)
    acc = q.new_zeros((*q.shape[:-1], v.size(-1)))  # (b, h, n, d)
    query_index = torch.arange(n, device=q.device)[:, None]  # (n, 1)

    for start in range(0, m, block_size):
        k_block = k[..., start:start + block_size, :]  # (b, h, B, d), a view
        v_block = v[..., start:start + block_size, :]
        scores = q @ k_block.transpose(-2, -1) * scale  # (b, h, n, B): one block of scores
        if causal:
            key_index = torch.arange(start, start + k_block.size(-2), device=q.device)  # (B,)
            scores = scores.masked_fill(key_index > query_index, float("-inf"))
        # Block 0 holds key 0, which every query sees: after it the maximum is finite.
        new_max = torch.maximum(row_max, scores.amax(dim=-1, keepdim=True))
        correction = torch.exp(row_max - new_max)  # 0 on the first block (exp(-inf))
        p = torch.exp(scores - new_max)  # (b, h, n, B), each at most 1
        row_sum = row_sum * correction + p.sum(dim=-1, keepdim=True)
        acc = acc * correction + p @ v_block
        row_max = new_max

    output = acc / row_sum
    lse = (row_max + torch.log(row_sum)).squeeze(-1)  # (b, h, n)
    return output.to(out_dtype), lse  # lse stays float32 for half inputs
