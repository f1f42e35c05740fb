"""Reference solution for kata 18: sliding-window attention with attention sinks, and a
rolling key/value cache that keeps decoding memory bounded."""

from __future__ import annotations

import math

import torch
from torch import Tensor


def sliding_window_mask(n: int, window: int, num_sinks: int = 0, device=None) -> Tensor:
    """(n, n) bool, True = blocked: query i sees key j iff j <= i and (i - j < window or
    j < num_sinks). ``window`` counts the query itself."""
    i = torch.arange(n, device=device)[:, None]  # (n, 1) queries
    j = torch.arange(n, device=device)[None, :]  # (1, n) keys
    allowed = (j <= i) & ((i - j < window) | (j < num_sinks))
    return ~allowed


def sliding_window_attention(q: Tensor, k: Tensor, v: Tensor, window: int,
                             num_sinks: int = 0) -> Tensor:
    """softmax(q kᵀ / sqrt(d)) v over the keys sliding_window_mask allows, (b, h, n, d).

    Queries in blocks of ``window`` rows: the block start .. end - 1 needs only the keys
    start - window + 1 .. end - 1 and the sinks before them, so it is scored against those
    alone, (b, h, <= window, S + 2W - 1), and every other key is never touched. The
    largest tensor does not grow with n: never (n, n).
    """
    n, d = q.size(-2), q.size(-1)
    block = max(1, min(window, n))
    outputs = []
    for start in range(0, n, block):
        end = min(n, start + block)
        lo = max(0, start - window + 1)  # the oldest key any query of the block may see
        keys = torch.cat([torch.arange(min(num_sinks, lo), device=q.device),  # sinks before it
                          torch.arange(lo, end, device=q.device)])  # (m,)
        i = torch.arange(start, end, device=q.device)[:, None]  # (rows, 1) queries
        j = keys[None, :]  # (1, m) keys
        blocked = (j > i) | ((i - j >= window) & (j >= num_sinks))  # (rows, m), the rule
        scores = q[..., start:end, :] @ k[..., keys, :].transpose(-2, -1) / math.sqrt(d)
        weights = torch.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1)
        outputs.append(weights @ v[..., keys, :])  # key i, the query's own, is never blocked
    return torch.cat(outputs, dim=-2)  # (b, h, n, d)


class RollingKVCache:
    """The keys and values a decoder needs at its newest position: the first num_sinks
    positions and the last window ones, kept as copies (never views of the caller's chunks)."""

    def __init__(self, window: int, num_sinks: int = 0):
        self.window = window
        self.num_sinks = num_sinks
        self.length = 0  # positions appended so far
        self.sink_k: Tensor | None = None  # (b, h, <= num_sinks, d)
        self.sink_v: Tensor | None = None
        self.recent_k: Tensor | None = None  # (b, h, <= window, d): the latest positions
        self.recent_v: Tensor | None = None

    def append(self, k: Tensor, v: Tensor) -> None:
        """k, v (b, h, t, d): positions length .. length + t - 1."""
        t = k.size(-2)
        # Sinks: whatever part of positions 0 .. num_sinks - 1 this chunk holds.
        take = max(0, min(t, self.num_sinks - self.length))
        if take:
            new_k, new_v = k[..., :take, :].clone(), v[..., :take, :].clone()
            self.sink_k = new_k if self.sink_k is None else torch.cat([self.sink_k, new_k], -2)
            self.sink_v = new_v if self.sink_v is None else torch.cat([self.sink_v, new_v], -2)
        # Recent: the last `window` positions, clone()d so no view of k or v is kept.
        if self.recent_k is not None:
            k, v = torch.cat([self.recent_k, k], -2), torch.cat([self.recent_v, v], -2)
        self.recent_k = k[..., -self.window:, :].clone()
        self.recent_v = v[..., -self.window:, :].clone()
        self.length += t

    def keys_values(self) -> tuple[Tensor, Tensor]:
        """(k, v), each (b, h, s, d): the sinks outside the window, then the window, in
        position order; s = min(p + 1, num_sinks + window) for the last position p."""
        first_recent = self.length - self.recent_k.size(-2)  # position of recent_k[..., 0, :]
        if self.sink_k is None:
            return self.recent_k, self.recent_v
        outside = min(self.sink_k.size(-2), first_recent)  # sinks not already in the window
        return (torch.cat([self.sink_k[..., :outside, :], self.recent_k], -2),
                torch.cat([self.sink_v[..., :outside, :], self.recent_v], -2))
