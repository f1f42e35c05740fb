"""Reference solution for kata 02: splitting a width h*d into h heads and merging them back."""

from __future__ import annotations

from torch import Tensor


def split_heads(x: Tensor, num_heads: int) -> Tensor:
    """(batch, seq, heads*head_dim) -> (batch, heads, seq, head_dim).

    Head i holds the columns i*head_dim:(i+1)*head_dim of the last dimension.
    """
    batch, seq, width = x.shape
    # Splitting the last dimension is always a valid view; the head index is the outer factor.
    return x.view(batch, seq, num_heads, width // num_heads).transpose(1, 2)


def merge_heads(x: Tensor) -> Tensor:
    """(batch, heads, seq, head_dim) -> (batch, seq, heads*head_dim): the inverse of split_heads."""
    batch, heads, seq, head_dim = x.shape
    # After the transpose the memory is no longer in (batch, seq, width) order: reshape copies.
    return x.transpose(1, 2).reshape(batch, seq, heads * head_dim)


def split_heads_seq_first(x: Tensor, num_heads: int) -> Tensor:
    """(seq, batch, heads*head_dim) -> (batch*heads, seq, head_dim), batch-major.

    Row i*heads + j is batch element i, head j: the layout of F.multi_head_attention_forward.
    """
    seq, batch, width = x.shape
    # reshape, not view: merging batch and heads needs a copy when x is not contiguous.
    return x.reshape(seq, batch * num_heads, width // num_heads).transpose(0, 1)


def merge_heads_seq_first(x: Tensor, batch_size: int) -> Tensor:
    """(batch*heads, seq, head_dim) -> (seq, batch, heads*head_dim): the inverse of
    split_heads_seq_first."""
    rows, seq, head_dim = x.shape
    num_heads = rows // batch_size
    return x.transpose(0, 1).reshape(seq, batch_size, num_heads * head_dim)
