"""Kata 18: sliding-window attention with attention sinks, and a rolling key/value cache.

Read README.md in this folder, fill in the functions and the class below, then run
    pytest katas/18_sliding_window
"""

from __future__ import annotations

import math  # noqa: F401  (you will want math.sqrt)

import torch
from torch import Tensor


def sliding_window_mask(n: int, window: int, num_sinks: int = 0, device=None) -> Tensor:
    """(n, n) bool on ``device`` (default CPU), True = blocked.

    Query i may see key j iff j <= i and (i - j < window or j < num_sinks): window counts
    the query itself, and the sinks 0 .. num_sinks - 1 are seen by every query at or after
    them.
    """
    raise NotImplementedError("see katas/18_sliding_window/README.md")


def sliding_window_attention(q: Tensor, k: Tensor, v: Tensor, window: int,
                             num_sinks: int = 0) -> Tensor:
    """softmax(q kᵀ / sqrt(d)) v over the keys sliding_window_mask allows.

    q, k, v (b, h, n, d); returns (b, h, n, d) in q's dtype. No tensor you create may hold
    n² / 2 elements per (batch, head): no (n, n) scores, no (n, n) mask.
    """
    raise NotImplementedError("see katas/18_sliding_window/README.md")


class RollingKVCache:
    """The keys and values a decoder needs at its newest position, in bounded memory."""

    def __init__(self, window: int, num_sinks: int = 0):
        raise NotImplementedError("see katas/18_sliding_window/README.md")

    def append(self, k: Tensor, v: Tensor) -> None:
        """k, v (b, h, t, d): the next t positions (the first append starts at 0)."""
        raise NotImplementedError("see katas/18_sliding_window/README.md")

    def keys_values(self) -> tuple[Tensor, Tensor]:
        """(k, v), each (b, h, s, d): the positions j <= p with j < num_sinks or
        p - j < window (p the last appended position), each once, in increasing order."""
        raise NotImplementedError("see katas/18_sliding_window/README.md")
