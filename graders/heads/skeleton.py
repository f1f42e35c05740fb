"""Kata 02: splitting a width h*d into h heads and merging them back.

Read README.md in this folder, fill in the four functions below, then run
    pytest katas/02_heads
"""

from __future__ import annotations

import torch  # noqa: F401
from torch import Tensor


def split_heads(x: Tensor, num_heads: int) -> Tensor:
    """(batch, seq, heads*head_dim) -> (batch, heads, seq, head_dim).

    Head i holds the columns i*head_dim:(i+1)*head_dim of the last dimension.
    """
    raise NotImplementedError("see katas/02_heads/README.md")


def merge_heads(x: Tensor) -> Tensor:
    """(batch, heads, seq, head_dim) -> (batch, seq, heads*head_dim): the inverse of split_heads."""
    raise NotImplementedError("see katas/02_heads/README.md")


def split_heads_seq_first(x: Tensor, num_heads: int) -> Tensor:
    """(seq, batch, heads*head_dim) -> (batch*heads, seq, head_dim), batch-major.

    Row i*heads + j is batch element i, head j (PyTorch's internal layout); head j holds
    the columns j*head_dim:(j+1)*head_dim.
    """
    raise NotImplementedError("see katas/02_heads/README.md")


def merge_heads_seq_first(x: Tensor, batch_size: int) -> Tensor:
    """(batch*heads, seq, head_dim) -> (seq, batch, heads*head_dim): the inverse of
    split_heads_seq_first."""
    raise NotImplementedError("see katas/02_heads/README.md")
