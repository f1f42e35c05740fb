"""Mutant: merge_masks borrows nn.MultiheadAttention's own merge_masks (the class is forbidden)."""

from __future__ import annotations

import torch
from torch import Tensor


def causal_mask(size: int, device: torch.device | str | None = None) -> Tensor:
    """Float (size, size): 0 on and below the diagonal, -inf above it.

    Row i is query i; it may attend to keys 0..i. Equal to
    nn.Transformer.generate_square_subsequent_mask(size, device=device).
    """
    full = torch.full((size, size), float("-inf"), device=device)
    # diagonal=1 keeps the diagonal at 0: a token may attend to itself.
    return torch.triu(full, diagonal=1)


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
    if key_padding_mask is None and attn_mask is None:
        return None
    from torch import nn

    batch = key_padding_mask.size(0) if key_padding_mask is not None else 1
    helper = nn.MultiheadAttention(num_heads, num_heads, batch_first=True)
    query = torch.zeros(batch, 1, num_heads, dtype=dtype)
    merged, _ = helper.merge_masks(attn_mask, key_padding_mask, query)
    return merged
