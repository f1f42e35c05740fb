"""Kata 31: Tensor-parallel attention (Megatron's, on torch.distributed).

Read README.md in this folder, fill in the classes below, then run
    pytest katas/31_tensor_parallel
The grader starts 1, 2 and 4 processes itself; your code runs in each of them, with the
default process group already initialised (gloo). Use dist.get_rank(group) and
dist.get_world_size(group); at world size 1 the all-reduces may be skipped.
"""

from __future__ import annotations

import torch
import torch.distributed as dist  # noqa: F401
import torch.nn.functional as F  # noqa: F401
from torch import nn


class ColumnParallelLinear(nn.Module):
    def __init__(self, in_features, out_features, bias=True, group=None):
        """This rank's rows of a Linear(in_features, out_features): parameters `weight`
        (out_features / ws, in_features) and `bias` (out_features / ws,).

        forward(x): x (..., in_features), the same on every rank -> (..., out_features / ws),
        this rank's slice of the full output. Apply Megatron's f to x first: the identity in
        the forward, an all-reduce (sum) of the gradient in the backward.
        """
        super().__init__()
        raise NotImplementedError("see katas/31_tensor_parallel/README.md")


class RowParallelLinear(nn.Module):
    def __init__(self, in_features, out_features, bias=True, group=None):
        """This rank's columns of a Linear(in_features, out_features): parameters `weight`
        (out_features, in_features / ws) and the full `bias` (out_features,).

        forward(x_local): x_local (..., in_features / ws), this rank's slice of the input ->
        (..., out_features), the full output on every rank: the local matmul, Megatron's g
        (an all-reduce in the forward, the identity in the backward), then the bias, once.
        """
        super().__init__()
        raise NotImplementedError("see katas/31_tensor_parallel/README.md")


class TensorParallelAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, bias=True, group=None):
        """Self-attention whose heads are split over the ranks: rank r owns heads
        r*h/ws ... (r+1)*h/ws - 1. Submodules q_proj, k_proj, v_proj
        (ColumnParallelLinear(E, E)) and out_proj (RowParallelLinear(E, E)).

        load_full_state_dict(state_dict): nn.MultiheadAttention's state dict
        (in_proj_weight (3E, E) stacks W_q, W_k, W_v; in_proj_bias (3E,), out_proj.weight
        (E, E), out_proj.bias (E,)); keep this rank's slices.

        forward(x, attn_mask=None, is_causal=False): x (batch, seq, E), the same on every
        rank; attn_mask (seq, seq) bool (True = blocked) or float (added to the scores) ->
        (batch, seq, E), the full module's output on every rank. One all-reduce in the
        forward, one in the backward, nothing else.
        """
        super().__init__()
        raise NotImplementedError("see katas/31_tensor_parallel/README.md")
