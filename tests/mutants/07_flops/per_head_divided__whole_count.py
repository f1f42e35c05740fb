"""Mutant: every count is divided by num_heads ("FLOPs per head")."""

from __future__ import annotations

import torch


def mha_param_count(d_model: int, bias: bool = True) -> int:
    return 4 * d_model * d_model + (4 * d_model if bias else 0)


def mha_flops(seq_len: int, batch_size: int, d_model: int, num_heads: int) -> int:
    l, b, d = seq_len, batch_size, d_model
    return (8 * l * b * d * d + 4 * l * l * b * d) // num_heads


def cross_attention_flops(tgt_len: int, src_len: int, batch_size: int, d_model: int,
                          num_heads: int) -> int:
    n, m, b, d = tgt_len, src_len, batch_size, d_model
    return (4 * n * b * d * d + 4 * m * b * d * d + 4 * n * m * b * d) // num_heads


def encoder_layer_flops(seq_len: int, batch_size: int, d_model: int, num_heads: int,
                        dim_feedforward: int) -> int:
    l, b, d = seq_len, batch_size, d_model
    return (8 * l * b * d * d + 4 * l * l * b * d + 4 * l * b * d * dim_feedforward) // num_heads


def attention_scores_bytes(seq_len: int, batch_size: int, num_heads: int,
                           dtype: torch.dtype = torch.float32) -> int:
    return batch_size * num_heads * seq_len * seq_len * torch.empty((), dtype=dtype).element_size()
