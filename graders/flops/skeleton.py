"""Kata 07: parameters, FLOPs and memory of attention (the interview's back-of-envelope question).

Read README.md in this folder, fill in the five functions below, then run
    pytest katas/07_flops

Every answer is a plain Python int, exact even for sizes far too large to build.
FLOPs count matrix multiplications only, 2 per multiply-add: (p, q) @ (q, r) is 2*p*q*r.
"""

from __future__ import annotations

import torch


def mha_param_count(d_model: int, bias: bool = True) -> int:
    """Number of parameters of nn.MultiheadAttention(d_model, num_heads, bias=bias).

    (It does not depend on num_heads.)
    """
    raise NotImplementedError("see katas/07_flops/README.md")


def mha_flops(seq_len: int, batch_size: int, d_model: int, num_heads: int) -> int:
    """FLOPs of multi-head self-attention on input (seq_len, batch_size, d_model).

    Count the q, k, v and output projections and the two attention matmuls
    (scores Q K^T, shape (b, h, l, l), and weights @ V).
    """
    raise NotImplementedError("see katas/07_flops/README.md")


def cross_attention_flops(tgt_len: int, src_len: int, batch_size: int, d_model: int,
                          num_heads: int) -> int:
    """FLOPs of multi-head attention from queries (tgt_len, b, d) to keys/values (src_len, b, d).

    The scores have shape (b, h, tgt_len, src_len).
    """
    raise NotImplementedError("see katas/07_flops/README.md")


def encoder_layer_flops(seq_len: int, batch_size: int, d_model: int, num_heads: int,
                        dim_feedforward: int) -> int:
    """FLOPs of one Transformer encoder layer on (seq_len, batch_size, d_model):
    self-attention plus the feed-forward linears d_model -> dim_feedforward -> d_model.
    """
    raise NotImplementedError("see katas/07_flops/README.md")


def attention_scores_bytes(seq_len: int, batch_size: int, num_heads: int,
                           dtype: torch.dtype = torch.float32) -> int:
    """Bytes taken by one layer's attention scores, shape (batch_size, num_heads, seq_len, seq_len),
    stored in dtype."""
    raise NotImplementedError("see katas/07_flops/README.md")
