"""Reference attention math shared by the graders, with one switch per catalogued mistake.

A grader runs :func:`attend` with a switch flipped to reproduce what a learner's mistake
would return on the same input (see :mod:`graders.core.mistakes`).
"""

from __future__ import annotations

import torch
from torch import Tensor

# NEG_INF and additive_mask are imported from here by katas 01-10's graders.
from graders.twins.attention import NEG_INF, additive_mask, scores, softmax_rows  # noqa: F401


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
    raw = scores(query, key, scale)
    additive = additive_mask(mask, raw.dtype, invert=invert_mask)
    if additive is not None and mask_after_softmax is None:
        if fill_value is not None and mask is not None and mask.dtype == torch.bool:
            raw = raw.masked_fill(~mask if invert_mask else mask, fill_value)
        else:
            raw = raw + additive
    # Fully blocked rows get zero weights (softmax_rows), unless the mask comes after the
    # softmax: that mistake's rows are what its softmax gives.
    zero_rows = zero_blocked_rows and (mask_after_softmax is None or additive is None)
    weights = softmax_rows(raw, softmax_dim, zero_rows)
    if additive is not None and mask_after_softmax == "zero":
        weights = weights.masked_fill(torch.isneginf(additive), 0.0)
    elif additive is not None and mask_after_softmax == "add":
        weights = weights + additive
    return weights @ value, weights
