"""Style: list every matmul as (p, q, r) and sum 2*p*q*r; itemsize from dtype.itemsize."""

from __future__ import annotations

import math

import torch


def matmul_flops(shapes: list[tuple[int, ...]]) -> int:
    """Sum of 2*p*q*r over (count, p, q, r) entries: count products (p, q) @ (q, r)."""
    return sum(2 * math.prod(shape) for shape in shapes)


def attention_matmuls(n: int, m: int, b: int, d: int, h: int) -> list[tuple[int, ...]]:
    d_head = d // h
    return [
        (n * b, d, d),           # query projection
        (m * b, d, d),           # key projection
        (m * b, d, d),           # value projection
        (b * h, n, d_head, m),   # scores: b*h products (n, d_head) @ (d_head, m)
        (b * h, n, m, d_head),   # weights @ values: (n, m) @ (m, d_head)
        (n * b, d, d),           # output projection
    ]


def mha_param_count(d_model: int, bias: bool = True) -> int:
    shapes = [(3 * d_model, d_model), (d_model, d_model)]
    if bias:
        shapes += [(3 * d_model,), (d_model,)]
    return sum(math.prod(s) for s in shapes)


def mha_flops(seq_len: int, batch_size: int, d_model: int, num_heads: int) -> int:
    return matmul_flops(attention_matmuls(seq_len, seq_len, batch_size, d_model, num_heads))


def cross_attention_flops(tgt_len: int, src_len: int, batch_size: int, d_model: int,
                          num_heads: int) -> int:
    return matmul_flops(attention_matmuls(tgt_len, src_len, batch_size, d_model, num_heads))


def encoder_layer_flops(seq_len: int, batch_size: int, d_model: int, num_heads: int,
                        dim_feedforward: int) -> int:
    tokens = seq_len * batch_size
    shapes = attention_matmuls(seq_len, seq_len, batch_size, d_model, num_heads) + [
        (tokens, d_model, dim_feedforward),   # linear1
        (tokens, dim_feedforward, d_model),   # linear2
    ]
    return matmul_flops(shapes)


def attention_scores_bytes(seq_len: int, batch_size: int, num_heads: int,
                           dtype: torch.dtype = torch.float32) -> int:
    return math.prod((batch_size, num_heads, seq_len, seq_len)) * dtype.itemsize
