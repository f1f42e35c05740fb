"""Kata 18 style: query blocks of a fixed 32 rows (whatever the window), each against the
keys [start - window + 1, end) plus the sinks before them, in plain matmuls; the cache of
query_blocks_sdpa.py."""

from __future__ import annotations

import torch
from torch import Tensor


def sliding_window_mask(n: int, window: int, num_sinks: int = 0, device=None) -> Tensor:
    q_pos = torch.arange(n, device=device).unsqueeze(1)
    k_pos = torch.arange(n, device=device).unsqueeze(0)
    dist = q_pos - k_pos
    in_window = (dist >= 0) & (dist < window)
    is_sink = (k_pos < num_sinks) & (dist >= 0)
    return ~(in_window | is_sink)


def sliding_window_attention(q: Tensor, k: Tensor, v: Tensor, window: int,
                             num_sinks: int = 0) -> Tensor:
    n, d = q.shape[2], q.shape[3]
    block = 32
    outs = []
    for start in range(0, n, block):
        end = min(n, start + block)
        lo = max(0, start - window + 1)  # the oldest key any query of the block may see
        sink_idx = torch.arange(min(num_sinks, lo), device=q.device)  # sinks before it
        key_idx = torch.cat([sink_idx, torch.arange(lo, end, device=q.device)])
        qi = torch.arange(start, end, device=q.device)[:, None]
        kj = key_idx[None, :]
        may = (kj <= qi) & ((qi - kj < window) | (kj < num_sinks))  # SDPA: True = may attend
        scores = q[:, :, start:end] @ k[:, :, key_idx].transpose(-2, -1) / d ** 0.5
        weights = torch.softmax(scores.masked_fill(~may, float("-inf")), dim=-1)
        outs.append(weights @ v[:, :, key_idx])
    return torch.cat(outs, dim=2)


class RollingKVCache:
    def __init__(self, window: int, num_sinks: int = 0):
        self.window, self.num_sinks = window, num_sinks
        self.seen = 0
        self.sink_k = self.sink_v = None  # (b, h, num_sinks, d)
        self.ring_k = self.ring_v = None  # (b, h, window, d): position p in slot p % window

    def append(self, k: Tensor, v: Tensor) -> None:
        if self.ring_k is None:
            b, h, _, d = k.shape
            self.ring_k = k.new_zeros(b, h, self.window, d)
            self.ring_v = v.new_zeros(b, h, self.window, d)
            self.sink_k = k.new_zeros(b, h, self.num_sinks, d)
            self.sink_v = v.new_zeros(b, h, self.num_sinks, d)
        for t in range(k.shape[2]):
            p = self.seen
            if p < self.num_sinks:
                self.sink_k[:, :, p] = k[:, :, t]
                self.sink_v[:, :, p] = v[:, :, t]
            self.ring_k[:, :, p % self.window] = k[:, :, t]
            self.ring_v[:, :, p % self.window] = v[:, :, t]
            self.seen += 1

    def keys_values(self) -> tuple[Tensor, Tensor]:
        filled = min(self.seen, self.window)
        first = self.seen - filled  # the oldest position still in the ring
        order = torch.arange(first, self.seen, device=self.ring_k.device) % self.window
        outside = min(self.num_sinks, first)
        return (torch.cat([self.sink_k[:, :, :outside], self.ring_k[:, :, order]], dim=2),
                torch.cat([self.sink_v[:, :, :outside], self.ring_v[:, :, order]], dim=2))
