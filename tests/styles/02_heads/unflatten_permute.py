"""Style: einops-like rearranges with unflatten / permute / flatten, no explicit sizes."""

from __future__ import annotations

from torch import Tensor


def split_heads(x: Tensor, num_heads: int) -> Tensor:
    # b n (h d) -> b h n d
    return x.unflatten(-1, (num_heads, -1)).permute(0, 2, 1, 3)


def merge_heads(x: Tensor) -> Tensor:
    # b h n d -> b n (h d)
    return x.permute(0, 2, 1, 3).flatten(2)


def split_heads_seq_first(x: Tensor, num_heads: int) -> Tensor:
    # n b (h d) -> (b h) n d
    return x.unflatten(-1, (num_heads, -1)).permute(1, 2, 0, 3).flatten(0, 1)


def merge_heads_seq_first(x: Tensor, batch_size: int) -> Tensor:
    # (b h) n d -> n b (h d)
    return x.unflatten(0, (batch_size, -1)).permute(2, 0, 1, 3).flatten(2)
