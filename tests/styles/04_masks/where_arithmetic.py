"""Style: torch.where to 0/-inf float masks, combined by plain addition (-inf + x = -inf)."""

from __future__ import annotations

import math

import torch
from torch import Tensor

NEG_INF = -math.inf


def causal_mask(size: int, device=None) -> Tensor:
    rows = torch.arange(size, device=device).view(-1, 1)
    cols = torch.arange(size, device=device).view(1, -1)
    return torch.where(cols > rows, NEG_INF, 0.0).to(torch.float32)


def padding_mask(lengths, max_len=None) -> Tensor:
    lengths = torch.as_tensor(lengths)
    width = lengths.max().item() if max_len is None else max_len
    positions = torch.arange(width, device=lengths.device)
    return lengths.unsqueeze(-1) <= positions


def _additive(mask: Tensor, dtype: torch.dtype) -> Tensor:
    if mask.dtype == torch.bool:
        zero = torch.zeros((), dtype=dtype, device=mask.device)
        return torch.where(mask, torch.full_like(zero, NEG_INF), zero)
    return mask.to(dtype)


def merge_masks(key_padding_mask, attn_mask, num_heads, dtype=torch.float32):
    total = None
    if key_padding_mask is not None:
        b, m = key_padding_mask.shape
        padding = _additive(key_padding_mask, dtype)
        # (b, m) -> (b, h, 1, m) -> (b*h, 1, m): batch i, head j is row i*h + j.
        total = padding.view(b, 1, 1, m).expand(b, num_heads, 1, m).reshape(b * num_heads, 1, m)
    if attn_mask is not None:
        extra = _additive(attn_mask, dtype)
        total = extra if total is None else total + extra
    return total
