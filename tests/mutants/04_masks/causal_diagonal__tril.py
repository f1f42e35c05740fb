"""Mutant: causal_mask keeps only keys strictly before the query (tril with diagonal=-1)."""

from __future__ import annotations

import torch
from torch import Tensor


def causal_mask(size: int, device: torch.device | str | None = None) -> Tensor:
    """Float (size, size): 0 on and below the diagonal, -inf above it.

    Row i is query i; it may attend to keys 0..i. Equal to
    nn.Transformer.generate_square_subsequent_mask(size, device=device).
    """
    allowed = torch.tril(torch.ones(size, size, device=device), diagonal=-1)
    return torch.zeros(size, size, device=device).masked_fill(allowed == 0, float("-inf"))


def padding_mask(lengths: Tensor | list[int], max_len: int | None = None) -> Tensor:
    """Bool (batch, max_len), True at the padded positions of each sequence.

    lengths: 1-D integer tensor or list of ints, one length per sequence.
    max_len defaults to the longest length. The mask lives on lengths' device.
    """
    lengths = torch.as_tensor(lengths)
    if max_len is None:
        max_len = int(lengths.max())
    positions = torch.arange(max_len, device=lengths.device)
    return positions[None, :] >= lengths[:, None]


def merge_masks(
    key_padding_mask: Tensor | None,
    attn_mask: Tensor | None,
    num_heads: int,
    dtype: torch.dtype = torch.float32,
) -> Tensor | None:
    """One additive float mask for attention in PyTorch's (batch*heads, n, m) layout.

    key_padding_mask: bool (b, m), True = padded key. attn_mask: bool (True = blocked) or
    float (added to the logits), (n, m) or (b*h, n, m). Returns a mask of ``dtype`` with 0
    where allowed, -inf where blocked and a float attn_mask's values added, broadcastable
    to (b*h, n, m) with batch-major rows (row i*h + j is batch i, head j); None when both
    masks are None.
    """
    merged = None
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            merged = torch.zeros(attn_mask.shape, dtype=dtype, device=attn_mask.device)
            merged = merged.masked_fill(attn_mask, float("-inf"))
        else:
            merged = attn_mask.to(dtype)  # a float mask's values are added as they are
    if key_padding_mask is not None:
        batch, m = key_padding_mask.shape
        padding = torch.zeros((batch, m), dtype=dtype, device=key_padding_mask.device)
        padding = padding.masked_fill(key_padding_mask, float("-inf"))
        # (b, m) -> (b*h, 1, m): every head of batch element i gets row i (batch-major).
        padding = padding.repeat_interleave(num_heads, dim=0).unsqueeze(1)
        # Blocked by either mask: -inf + anything = -inf.
        merged = padding if merged is None else merged + padding
    return merged
