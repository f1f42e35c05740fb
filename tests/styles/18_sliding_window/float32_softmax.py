"""Kata 18 style: the banded scores of banded_scores.py with the softmax taken in float32
and cast back, as Hugging Face's eager attention does (float64 inputs then get a
float32-precise softmax, which the contract allows, as in katas 13 and 15)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor


def sliding_window_mask(n: int, window: int, num_sinks: int = 0, device=None) -> Tensor:
    idx = torch.arange(n, device=device)
    future = idx[None, :] > idx[:, None]
    too_old = (idx[:, None] - idx[None, :] >= window) & (idx[None, :] >= num_sinks)
    return future | too_old


def sliding_window_attention(q: Tensor, k: Tensor, v: Tensor, window: int,
                             num_sinks: int = 0) -> Tensor:
    b, h, n, d = q.shape
    W, S = min(window, n), min(num_sinks, n)
    band_k = F.pad(k, (0, 0, W - 1, 0)).unfold(2, W, 1)  # (b, h, n, d, W): keys i-W+1 .. i
    band_v = F.pad(v, (0, 0, W - 1, 0)).unfold(2, W, 1)
    band = torch.einsum("bhnd,bhndw->bhnw", q, band_k) / math.sqrt(d)  # (b, h, n, W)
    key_pos = torch.arange(n, device=q.device)[:, None] - W + 1 + torch.arange(W, device=q.device)
    band = band.masked_fill(key_pos < 0, float("-inf"))  # the padding
    sink = torch.einsum("bhnd,bhsd->bhns", q, k[:, :, :S]) / math.sqrt(d)  # (b, h, n, S)
    dist = torch.arange(n, device=q.device)[:, None] - torch.arange(S, device=q.device)
    sink = sink.masked_fill(dist < W, float("-inf"))  # in the window already, or in the future
    # Hugging Face's eager attention: the softmax in float32, cast back (float32-precise
    # for float64 inputs, which the contract allows)
    weights = torch.softmax(torch.cat([sink, band], dim=-1), dim=-1, dtype=torch.float32).to(q.dtype)
    return (torch.einsum("bhns,bhsd->bhnd", weights[..., :S], v[:, :, :S])
            + torch.einsum("bhnw,bhndw->bhnd", weights[..., S:], band_v))


class RollingKVCache:
    def __init__(self, window: int, num_sinks: int = 0):
        self.window, self.num_sinks = window, num_sinks
        self.count = 0
        self.sinks = None  # (k, v), each (b, h, <= num_sinks, d)
        self.recent = None  # (k, v), each (b, h, <= window, d): a slice of the last cat

    def append(self, k: Tensor, v: Tensor) -> None:
        take = max(0, min(k.shape[2], self.num_sinks - self.count))
        if take:
            new = (k[:, :, :take].clone(), v[:, :, :take].clone())
            self.sinks = new if self.sinks is None else tuple(
                torch.cat([old, part], dim=2) for old, part in zip(self.sinks, new))
        parts = [(k, v)] if self.recent is None else [self.recent, (k, v)]
        self.recent = tuple(torch.cat([p[i] for p in parts], dim=2)[:, :, -self.window:]
                            for i in range(2))
        self.count += k.shape[2]

    def keys_values(self) -> tuple[Tensor, Tensor]:
        first = self.count - self.recent[0].shape[2]
        if self.sinks is None or first == 0:
            return self.recent
        outside = min(self.sinks[0].shape[2], first)
        return tuple(torch.cat([s[:, :, :outside], r], dim=2)
                     for s, r in zip(self.sinks, self.recent))
