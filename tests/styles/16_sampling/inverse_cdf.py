"""Kata 16 in another style: the draw by inverting the cumulative distribution, one
uniform number per row and torch.searchsorted."""

from __future__ import annotations

import torch
from torch import Tensor


def apply_temperature(logits: Tensor, temperature: float) -> Tensor:
    if temperature <= 0:
        raise ValueError("temperature must be positive")
    return logits / temperature


def top_k_filter(logits: Tensor, k: int) -> Tensor:
    k = min(k, logits.shape[-1])
    kth = torch.topk(logits, k, dim=-1, sorted=True).values[..., -1, None]
    return logits.masked_fill(logits < kth, float("-inf"))


def top_p_filter(logits: Tensor, p: float) -> Tensor:
    probs = torch.softmax(logits.double(), dim=-1)
    order = torch.argsort(probs, dim=-1, descending=True)
    ranked = torch.gather(probs, -1, order)
    before = torch.cat([torch.zeros_like(ranked[..., :1]), ranked.cumsum(-1)[..., :-1]], dim=-1)
    drop = torch.empty_like(before, dtype=torch.bool).scatter_(-1, order, before >= p)
    return logits.masked_fill(drop, float("-inf"))


def sample(logits: Tensor, temperature: float = 1.0, top_k: int | None = None,
           top_p: float | None = None, generator: torch.Generator | None = None) -> Tensor:
    if temperature == 0:
        return logits.max(dim=-1).indices
    x = apply_temperature(logits, temperature)
    if top_k is not None:
        x = top_k_filter(x, top_k)
    if top_p is not None:
        x = top_p_filter(x, top_p)
    flat = x.reshape(-1, x.shape[-1]).double()
    cdf = torch.softmax(flat, dim=-1).cumsum(dim=-1)  # (rows, V)
    u = torch.rand(flat.shape[0], 1, generator=generator, dtype=torch.float64,
                   device=flat.device) * cdf[:, -1:]
    index = torch.searchsorted(cdf, u, right=True).clamp(max=flat.shape[-1] - 1)
    return index.reshape(x.shape[:-1])
