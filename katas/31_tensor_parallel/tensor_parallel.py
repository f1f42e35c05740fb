"""Kata 31: Tensor-parallel attention.

Read README.md in this folder, fill in the functions and classes below, then run
    pytest katas/31_tensor_parallel
"""

from __future__ import annotations

import torch
from torch import nn  # noqa: F401


class ColumnParallelLinear:  # TODO: the base class the contract names (nn.Module, ...)
    def __init__(self, in_features, out_features, bias=True, group=None):
        """TODO: what it computes, with every shape, e.g. (batch, seq, dim);
        its attributes and what its methods compute."""
        raise NotImplementedError("see katas/31_tensor_parallel/README.md")


class RowParallelLinear:  # TODO: the base class the contract names (nn.Module, ...)
    def __init__(self, in_features, out_features, bias=True, group=None):
        """TODO: what it computes, with every shape, e.g. (batch, seq, dim);
        its attributes and what its methods compute."""
        raise NotImplementedError("see katas/31_tensor_parallel/README.md")


class TensorParallelAttention:  # TODO: the base class the contract names (nn.Module, ...)
    def __init__(self, embed_dim, num_heads, bias=True, group=None):
        """TODO: what it computes, with every shape, e.g. (batch, seq, dim);
        its attributes and what its methods compute."""
        raise NotImplementedError("see katas/31_tensor_parallel/README.md")
