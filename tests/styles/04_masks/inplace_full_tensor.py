"""Style: always a full (b*h, n, m) tensor when both masks are given, filled in place
on new tensors (masked_fill_, add_), the padding spread with repeat_interleave."""

from __future__ import annotations

import torch
from torch import Tensor


def causal_mask(size: int, device=None) -> Tensor:
    mask = torch.empty(size, size, device=device).fill_(float("-inf"))
    return mask.triu_(1)


def padding_mask(lengths, max_len=None) -> Tensor:
    lengths = torch.as_tensor(lengths, dtype=torch.long)
    if max_len is None:
        max_len = int(lengths.amax())
    valid = torch.arange(max_len, device=lengths.device).expand(len(lengths), max_len) \
        < lengths.view(-1, 1)
    return valid.logical_not()


def merge_masks(key_padding_mask, attn_mask, num_heads, dtype=torch.float32):
    if attn_mask is None and key_padding_mask is None:
        return None
    if key_padding_mask is None:
        if attn_mask.dtype == torch.bool:
            out = torch.zeros(attn_mask.shape, dtype=dtype, device=attn_mask.device)
            return out.masked_fill_(attn_mask, float("-inf"))
        return attn_mask.clone().to(dtype)
    b, m = key_padding_mask.shape
    rows = key_padding_mask.repeat_interleave(num_heads, dim=0)  # (b*h, m), batch-major
    if attn_mask is None:
        out = torch.zeros(b * num_heads, 1, m, dtype=dtype, device=rows.device)
        return out.masked_fill_(rows.unsqueeze(1), float("-inf"))
    n = attn_mask.shape[-2]
    out = torch.zeros(b * num_heads, n, m, dtype=dtype, device=rows.device)
    if attn_mask.dtype == torch.bool:
        out.masked_fill_(attn_mask.expand(b * num_heads, n, m), float("-inf"))
    else:
        out.add_(attn_mask.to(dtype))
    out.masked_fill_(rows.unsqueeze(1).expand(-1, n, -1), float("-inf"))
    return out
