"""Kata 16: from next-token logits to a token - temperature, top-k, top-p and the draw.

Read README.md in this folder, fill in the four functions below, then run
    pytest katas/16_sampling
"""

from __future__ import annotations

import torch
from torch import Tensor


def apply_temperature(logits: Tensor, temperature: float) -> Tensor:
    """logits (..., V) divided by temperature (a Python number > 0): a new tensor of the
    same shape and dtype."""
    raise NotImplementedError("see katas/16_sampling/README.md")


def top_k_filter(logits: Tensor, k: int) -> Tensor:
    """logits (..., V) -> new logits (..., V): every logit >= its row's k-th largest kept
    as it is, the others -inf. k >= V keeps every token."""
    raise NotImplementedError("see katas/16_sampling/README.md")


def top_p_filter(logits: Tensor, p: float) -> Tensor:
    """logits (..., V) -> new logits (..., V), 0 < p < 1: with probs = softmax(logits),
    token i is kept iff the total probability of the tokens more probable than i is < p;
    the others become -inf."""
    raise NotImplementedError("see katas/16_sampling/README.md")


def sample(logits: Tensor, temperature: float = 1.0, top_k: int | None = None,
           top_p: float | None = None, generator: torch.Generator | None = None) -> Tensor:
    """One token id per row of logits (..., V): a LongTensor (...) (0-d for 1-D logits).

    temperature == 0: the argmax of each row. Otherwise apply_temperature, then
    top_k_filter (unless top_k is None), then top_p_filter (unless top_p is None), then one
    draw per row from the softmax. Randomness comes only from generator (the global RNG
    when it is None); the caller's logits are never modified.
    """
    raise NotImplementedError("see katas/16_sampling/README.md")
