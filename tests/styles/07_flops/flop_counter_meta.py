"""Style: measure it. Run PyTorch's own modules on meta tensors (shapes only, no memory)
under FlopCounterMode, and count a meta module's parameters."""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode


def _counted(run) -> int:
    counter = FlopCounterMode(display=False)
    with torch.enable_grad(), counter:  # grad on: the unfused, countable path
        run()
    return counter.get_total_flops()


def mha_param_count(d_model: int, bias: bool = True) -> int:
    mha = nn.MultiheadAttention(d_model, 1, bias=bias, device="meta")
    return sum(p.numel() for p in mha.parameters())


def cross_attention_flops(tgt_len: int, src_len: int, batch_size: int, d_model: int,
                          num_heads: int) -> int:
    mha = nn.MultiheadAttention(d_model, num_heads, device="meta")
    query = torch.empty(tgt_len, batch_size, d_model, device="meta")
    key = torch.empty(src_len, batch_size, d_model, device="meta")
    return _counted(lambda: mha(query, key, key, need_weights=True))


def mha_flops(seq_len: int, batch_size: int, d_model: int, num_heads: int) -> int:
    return cross_attention_flops(seq_len, seq_len, batch_size, d_model, num_heads)


def encoder_layer_flops(seq_len: int, batch_size: int, d_model: int, num_heads: int,
                        dim_feedforward: int) -> int:
    linear1 = nn.Linear(d_model, dim_feedforward, device="meta")
    linear2 = nn.Linear(dim_feedforward, d_model, device="meta")
    x = torch.empty(seq_len, batch_size, d_model, device="meta")
    feed_forward = _counted(lambda: linear2(torch.relu(linear1(x))))
    return mha_flops(seq_len, batch_size, d_model, num_heads) + feed_forward


def attention_scores_bytes(seq_len: int, batch_size: int, num_heads: int,
                           dtype: torch.dtype = torch.float32) -> int:
    itemsize = torch.tensor([], dtype=dtype).element_size()
    return batch_size * num_heads * seq_len * seq_len * itemsize
