"""Kata 18 style: a loop over queries, each gathering its own keys (the sinks before its
window, then the window); a cache of per-position clones in a deque(maxlen=window)."""

from __future__ import annotations

import math
from collections import deque

import torch
from torch import Tensor


def sliding_window_mask(n: int, window: int, num_sinks: int = 0, device=None) -> Tensor:
    mask = torch.ones(n, n, dtype=torch.bool, device=device)
    for i in range(n):
        mask[i, max(0, i - window + 1):i + 1] = False
        mask[i, :min(num_sinks, i + 1)] = False
    return mask


def sliding_window_attention(q: Tensor, k: Tensor, v: Tensor, window: int,
                             num_sinks: int = 0) -> Tensor:
    n, d = q.size(2), q.size(3)
    outs = []
    for i in range(n):
        lo = max(0, i - window + 1)
        idx = torch.tensor(list(range(min(num_sinks, lo))) + list(range(lo, i + 1)),
                           device=q.device)
        s = q[:, :, i:i + 1] @ k[:, :, idx].transpose(-2, -1) / math.sqrt(d)  # (b, h, 1, keys)
        outs.append(torch.softmax(s, dim=-1) @ v[:, :, idx])
    return torch.cat(outs, dim=2)


class RollingKVCache:
    def __init__(self, window: int, num_sinks: int = 0):
        self.window, self.num_sinks = window, num_sinks
        self.sinks: list[tuple[Tensor, Tensor]] = []
        self.recent: deque[tuple[Tensor, Tensor]] = deque(maxlen=window)
        self.count = 0

    def append(self, k: Tensor, v: Tensor) -> None:
        for t in range(k.size(2)):
            kv = (k[:, :, t:t + 1].clone(), v[:, :, t:t + 1].clone())
            if self.count < self.num_sinks:
                self.sinks.append(kv)
            self.recent.append(kv)
            self.count += 1

    def keys_values(self) -> tuple[Tensor, Tensor]:
        first = self.count - len(self.recent)
        items = self.sinks[:first] + list(self.recent)
        return (torch.cat([kv[0] for kv in items], dim=2),
                torch.cat([kv[1] for kv in items], dim=2))
