"""Style: the closed forms written out directly; itemsize from torch.finfo(dtype).bits."""

from __future__ import annotations

import torch


def mha_param_count(d_model: int, bias: bool = True) -> int:
    d = d_model
    return 4 * d * d + 4 * d if bias else 4 * d * d


def mha_flops(seq_len: int, batch_size: int, d_model: int, num_heads: int) -> int:
    l, b, d = seq_len, batch_size, d_model
    return 8 * l * b * d**2 + 4 * l**2 * b * d


def cross_attention_flops(tgt_len: int, src_len: int, batch_size: int, d_model: int,
                          num_heads: int) -> int:
    n, m, b, d = tgt_len, src_len, batch_size, d_model
    return 4 * n * b * d**2 + 4 * m * b * d**2 + 4 * n * m * b * d


def encoder_layer_flops(seq_len: int, batch_size: int, d_model: int, num_heads: int,
                        dim_feedforward: int) -> int:
    l, b, d = seq_len, batch_size, d_model
    return mha_flops(l, b, d, num_heads) + 4 * l * b * d * dim_feedforward


def attention_scores_bytes(seq_len: int, batch_size: int, num_heads: int,
                           dtype: torch.dtype = torch.float32) -> int:
    return batch_size * num_heads * seq_len**2 * (torch.finfo(dtype).bits // 8)
