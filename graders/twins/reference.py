"""Reference attention math shared by the graders, with one switch per catalogued mistake.

A grader runs :func:`attend` with a switch flipped to reproduce what a learner's mistake
would return on the same input (see :mod:`graders.core.mistakes`).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

NEG_INF = float("-inf")


def additive_mask(mask: Tensor | None, dtype: torch.dtype, invert: bool = False) -> Tensor | None:
    """bool (True = blocked) -> 0 / -inf; float masks are already additive."""
    if mask is None:
        return None
    if mask.dtype != torch.bool:
        return mask
    blocked = ~mask if invert else mask
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(blocked, NEG_INF)


def attend(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None = None,
    *,
    scale: float | None = None,
    softmax_dim: int = -1,
    invert_mask: bool = False,
    mask_after_softmax: str | None = None,  # "zero" | "add": the mask-after-softmax mistake
    zero_blocked_rows: bool = True,
    fill_value: float | None = None,  # a bool mask filled with this, not -inf: finite-mask-fill
) -> tuple[Tensor, Tensor]:
    """Single-head attention with switches for the catalogued mistakes.

    query (..., n, d_k), key (..., m, d_k), value (..., m, d_v); mask broadcastable to
    (..., n, m). Returns output (..., n, d_v) and weights (..., n, m).
    """
    if scale is None:
        scale = 1.0 / math.sqrt(query.size(-1))
    scores = query @ key.transpose(-2, -1) * scale
    additive = additive_mask(mask, scores.dtype, invert=invert_mask)
    if additive is not None and mask_after_softmax is None:
        if fill_value is not None and mask is not None and mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask if invert_mask else mask, fill_value)
        else:
            scores = scores + additive
    # Fully blocked rows (all -inf) get finite scores before the softmax and zero weights
    # after it: the softmax of an all -inf row is NaN, and so are the gradients through it.
    all_blocked = torch.isneginf(scores).all(dim=-1, keepdim=True)
    if zero_blocked_rows and mask_after_softmax is None:
        scores = scores.masked_fill(all_blocked, 0.0)
    weights = torch.softmax(scores, dim=softmax_dim)
    if additive is not None and mask_after_softmax == "zero":
        weights = weights.masked_fill(torch.isneginf(additive), 0.0)
    elif additive is not None and mask_after_softmax == "add":
        weights = weights + additive
    elif zero_blocked_rows:
        weights = weights.masked_fill(all_blocked, 0.0)
    return weights @ value, weights
