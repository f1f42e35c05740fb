"""Style: PyTorch's own idiom, view + transpose, with .contiguous() before every merging view."""

from __future__ import annotations

from torch import Tensor


def split_heads(x: Tensor, num_heads: int) -> Tensor:
    b, n, e = x.shape
    return x.contiguous().view(b, n, num_heads, e // num_heads).transpose(1, 2)


def merge_heads(x: Tensor) -> Tensor:
    b, h, n, d = x.shape
    return x.transpose(1, 2).contiguous().view(b, n, h * d)


def split_heads_seq_first(x: Tensor, num_heads: int) -> Tensor:
    n, b, e = x.shape
    return x.contiguous().view(n, b * num_heads, e // num_heads).transpose(0, 1)


def merge_heads_seq_first(x: Tensor, batch_size: int) -> Tensor:
    bh, n, d = x.shape
    return x.transpose(0, 1).contiguous().view(n, batch_size, (bh // batch_size) * d)
