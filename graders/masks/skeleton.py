"""Kata 04: causal, padding and merged attention masks.

Read README.md in this folder, fill in the three functions below, then run
    pytest katas/04_masks
"""

from __future__ import annotations

import torch
from torch import Tensor


def causal_mask(size: int, device: torch.device | str | None = None) -> Tensor:
    """Float (size, size): 0 on and below the diagonal, -inf above it.

    Row i is query i, column j is key j: query i may attend to keys 0..i. The same as
    nn.Transformer.generate_square_subsequent_mask(size, device=device).
    """
    raise NotImplementedError("see katas/04_masks/README.md")


def padding_mask(lengths: Tensor | list[int], max_len: int | None = None) -> Tensor:
    """Bool (batch, max_len), True at the padded positions of each sequence.

    lengths: a 1-D integer tensor or a list of ints, one length per sequence.
    max_len defaults to the longest length.
    """
    raise NotImplementedError("see katas/04_masks/README.md")


def merge_masks(
    key_padding_mask: Tensor | None,
    attn_mask: Tensor | None,
    num_heads: int,
    dtype: torch.dtype = torch.float32,
) -> Tensor | None:
    """One additive float mask for attention in PyTorch's (batch*heads, n, m) layout.

    key_padding_mask: bool (b, m), True = padded key, or None.
    attn_mask: bool (True = blocked) or float (added to the logits), shaped (n, m) or
    (b*h, n, m), or None.
    Returns a mask of ``dtype``: 0 where allowed, -inf where blocked, a float attn_mask's
    values added; broadcastable to (b*h, n, m) with batch-major rows (row i*h + j is
    batch i, head j). None when both masks are None.
    """
    raise NotImplementedError("see katas/04_masks/README.md")
