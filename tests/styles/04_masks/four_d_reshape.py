"""Style: build the mask as (b, h, n, m), then reshape to (b*h, n, m); causal via log(tril)."""

from __future__ import annotations

import torch
from torch import Tensor


def causal_mask(size: int, device=None) -> Tensor:
    # log(1) = 0 where allowed, log(0) = -inf where blocked.
    return torch.ones(size, size, device=device).tril().log()


def padding_mask(lengths, max_len=None) -> Tensor:
    if isinstance(lengths, torch.Tensor):
        device, lengths = lengths.device, lengths.tolist()
    else:
        device = None
    width = max(lengths) if max_len is None else max_len
    rows = [torch.arange(width, device=device) >= length for length in lengths]
    return torch.stack(rows)


def merge_masks(key_padding_mask, attn_mask, num_heads, dtype=torch.float32):
    if key_padding_mask is None and attn_mask is None:
        return None
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            attn = torch.zeros(attn_mask.shape, dtype=dtype, device=attn_mask.device)
            attn = attn.masked_fill(attn_mask, float("-inf"))
        else:
            attn = attn_mask.to(dtype)
        if key_padding_mask is None:
            return attn
    b, m = key_padding_mask.shape
    padding = torch.zeros(b, m, dtype=dtype, device=key_padding_mask.device)
    padding = padding.masked_fill(key_padding_mask, float("-inf")).view(b, 1, 1, m)
    if attn_mask is None:
        merged = padding.expand(b, num_heads, 1, m)
    elif attn.dim() == 2:
        merged = padding + attn.view(1, 1, *attn.shape)  # (b, h, n, m) after broadcasting
        merged = merged.expand(b, num_heads, -1, -1)
    else:
        merged = padding + attn.view(b, num_heads, attn.size(1), m)
    return merged.reshape(b * num_heads, merged.size(2), m)
