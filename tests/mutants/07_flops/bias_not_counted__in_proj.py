"""Mutant: only out_proj.bias is counted; in_proj_bias (3d) is left out."""

from __future__ import annotations

import torch


def mha_param_count(d_model: int, bias: bool = True) -> int:
    """Parameters of nn.MultiheadAttention(d_model, h, bias=bias): in_proj (3d, d) and
    out_proj (d, d), plus in_proj_bias (3d) and out_proj.bias (d) with bias. Independent of h."""
    weights = 4 * d_model * d_model
    biases = d_model if bias else 0
    return weights + biases


def cross_attention_flops(tgt_len: int, src_len: int, batch_size: int, d_model: int,
                          num_heads: int) -> int:
    """FLOPs of attention from n = tgt_len queries to m = src_len keys, batch b, width d.

    Q and output projections: 2 * (n*b, d) @ (d, d); K and V: 2 * (m*b, d) @ (d, d);
    scores Q K^T and weights @ V: per batch element and head (n, d/h) @ (d/h, m) and
    (n, m) @ (m, d/h), summed over h heads -> the head count cancels out.
    """
    n, m, b, d = tgt_len, src_len, batch_size, d_model
    projections = 2 * (2 * n * b * d * d) + 2 * (2 * m * b * d * d)
    attention = 2 * (2 * b * n * m * d)
    return projections + attention


def mha_flops(seq_len: int, batch_size: int, d_model: int, num_heads: int) -> int:
    """FLOPs of self-attention over seq_len tokens: 8*l*b*d^2 + 4*l^2*b*d."""
    return cross_attention_flops(seq_len, seq_len, batch_size, d_model, num_heads)


def encoder_layer_flops(seq_len: int, batch_size: int, d_model: int, num_heads: int,
                        dim_feedforward: int) -> int:
    """Self-attention plus the feed-forward linears (l*b, d) @ (d, d_ff), (l*b, d_ff) @ (d_ff, d).

    Norms, softmax, activation and bias additions are not matmuls and are not counted.
    """
    tokens = seq_len * batch_size
    feed_forward = 2 * (2 * tokens * d_model * dim_feedforward)
    return mha_flops(seq_len, batch_size, d_model, num_heads) + feed_forward


def attention_scores_bytes(seq_len: int, batch_size: int, num_heads: int,
                           dtype: torch.dtype = torch.float32) -> int:
    """Bytes of one layer's (b, h, l, l) score matrix in dtype."""
    itemsize = torch.empty((), dtype=dtype).element_size()
    return batch_size * num_heads * seq_len * seq_len * itemsize
