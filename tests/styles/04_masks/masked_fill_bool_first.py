"""Style: combine bool masks with | first, then one masked_fill; float masks added after."""

from __future__ import annotations

import torch
from torch import Tensor


def causal_mask(size: int, device=None) -> Tensor:
    future = torch.ones(size, size, dtype=torch.bool, device=device).triu(diagonal=1)
    return torch.zeros(size, size, device=device).masked_fill(future, float("-inf"))


def padding_mask(lengths, max_len=None) -> Tensor:
    if not isinstance(lengths, torch.Tensor):
        lengths = torch.tensor(lengths, dtype=torch.long)
    max_len = int(lengths.max().item()) if max_len is None else max_len
    return torch.arange(max_len, device=lengths.device).unsqueeze(0) >= lengths.unsqueeze(1)


def merge_masks(key_padding_mask, attn_mask, num_heads, dtype=torch.float32):
    if key_padding_mask is None and attn_mask is None:
        return None
    blocked = None  # a bool mask, True = blocked, broadcastable to (b*h, n, m)
    if key_padding_mask is not None:
        blocked = key_padding_mask.repeat_interleave(num_heads, dim=0)[:, None, :]
    values = None  # a float attn_mask, added as it is
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        blocked = attn_mask if blocked is None else (blocked | attn_mask)
    elif attn_mask is not None:
        values = attn_mask.to(dtype)
    if blocked is None:
        return values
    merged = torch.zeros(blocked.shape, dtype=dtype, device=blocked.device)
    merged = merged.masked_fill(blocked, float("-inf"))
    return merged if values is None else merged + values
