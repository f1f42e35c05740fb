"""Style: axes moved with einsum and movedim, sizes computed up front."""

from __future__ import annotations

import torch
from torch import Tensor


def split_heads(x: Tensor, num_heads: int) -> Tensor:
    b, n, e = x.shape
    return torch.einsum("bnhd->bhnd", x.reshape(b, n, num_heads, e // num_heads))


def merge_heads(x: Tensor) -> Tensor:
    b, h, n, d = x.shape
    return torch.movedim(x, 1, 2).reshape(b, n, h * d)


def split_heads_seq_first(x: Tensor, num_heads: int) -> Tensor:
    n, b, e = x.shape
    heads = x.reshape(n, b, num_heads, e // num_heads).movedim(0, 2)  # (b, h, n, d)
    return heads.reshape(b * num_heads, n, e // num_heads)


def merge_heads_seq_first(x: Tensor, batch_size: int) -> Tensor:
    bh, n, d = x.shape
    heads = x.reshape(batch_size, bh // batch_size, n, d)
    return torch.einsum("bhnd->nbhd", heads).reshape(n, batch_size, -1)
