"""Mutant: a loop over heads counts each head at the full width d (q, k, v, out and the
attention matmuls), so everything is h times too large."""

from __future__ import annotations

import torch


def mha_param_count(d_model: int, bias: bool = True) -> int:
    return 4 * d_model * d_model + (4 * d_model if bias else 0)


def cross_attention_flops(tgt_len: int, src_len: int, batch_size: int, d_model: int,
                          num_heads: int) -> int:
    n, m, b, d = tgt_len, src_len, batch_size, d_model
    total = 0
    for _ in range(num_heads):
        total += 2 * n * b * d * d * 2 + 2 * m * b * d * d * 2   # q, out; k, v
        total += 2 * b * n * m * d * 2                            # QK^T, AV
    return total


def mha_flops(seq_len: int, batch_size: int, d_model: int, num_heads: int) -> int:
    return cross_attention_flops(seq_len, seq_len, batch_size, d_model, num_heads)


def encoder_layer_flops(seq_len: int, batch_size: int, d_model: int, num_heads: int,
                        dim_feedforward: int) -> int:
    feed_forward = 4 * seq_len * batch_size * d_model * dim_feedforward
    return mha_flops(seq_len, batch_size, d_model, num_heads) + feed_forward


def attention_scores_bytes(seq_len: int, batch_size: int, num_heads: int,
                           dtype: torch.dtype = torch.float32) -> int:
    return batch_size * num_heads * seq_len * seq_len * torch.empty((), dtype=dtype).element_size()
