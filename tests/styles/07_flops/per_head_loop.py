"""Style: sum each head's contribution in a loop (width d // h); bytes of a meta tensor."""

from __future__ import annotations

import torch


def mha_param_count(d_model: int, bias: bool = True) -> int:
    total = 0
    for _ in ("q", "k", "v", "out"):
        total += d_model * d_model + (d_model if bias else 0)
    return total


def cross_attention_flops(tgt_len: int, src_len: int, batch_size: int, d_model: int,
                          num_heads: int) -> int:
    d_head = d_model // num_heads
    total = 0
    for _ in range(num_heads):
        # this head's slice of each projection: (tokens, d_model) @ (d_model, d_head)
        total += 2 * tgt_len * batch_size * d_model * d_head        # W_q
        total += 2 * 2 * src_len * batch_size * d_model * d_head    # W_k, W_v
        total += 2 * tgt_len * batch_size * d_head * d_model        # this head's rows of W_out
        # scores and weighted sum for this head, per batch element
        total += batch_size * 2 * tgt_len * d_head * src_len
        total += batch_size * 2 * tgt_len * src_len * d_head
    return total


def mha_flops(seq_len: int, batch_size: int, d_model: int, num_heads: int) -> int:
    return cross_attention_flops(seq_len, seq_len, batch_size, d_model, num_heads)


def encoder_layer_flops(seq_len: int, batch_size: int, d_model: int, num_heads: int,
                        dim_feedforward: int) -> int:
    feed_forward = 0
    for fan_in, fan_out in ((d_model, dim_feedforward), (dim_feedforward, d_model)):
        feed_forward += 2 * seq_len * batch_size * fan_in * fan_out
    return mha_flops(seq_len, batch_size, d_model, num_heads) + feed_forward


def attention_scores_bytes(seq_len: int, batch_size: int, num_heads: int,
                           dtype: torch.dtype = torch.float32) -> int:
    # A meta tensor has a shape and a dtype but no storage: any size is free.
    scores = torch.empty(batch_size, num_heads, seq_len, seq_len, dtype=dtype, device="meta")
    return scores.nbytes
