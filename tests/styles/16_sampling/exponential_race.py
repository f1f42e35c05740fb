"""Kata 16 in another style: an exponential race. Each token waits an exponential time of
rate p_i; the first to arrive, argmin(E_i / p_i), is drawn with probability p_i."""

from __future__ import annotations

import torch
from torch import Tensor

MINUS_INFINITY = float("-inf")


def apply_temperature(logits: Tensor, temperature: float) -> Tensor:
    return torch.div(logits, temperature)


def top_k_filter(logits: Tensor, k: int) -> Tensor:
    if k >= logits.shape[-1]:
        return logits.clone()
    values, _ = torch.topk(logits, k, dim=-1)
    return torch.where(logits < values[..., -1:], MINUS_INFINITY, logits)


def top_p_filter(logits: Tensor, p: float) -> Tensor:
    probs, indices = torch.sort(torch.softmax(logits, dim=-1), dim=-1, descending=True)
    exclusive = torch.cumsum(probs, dim=-1) - probs
    removed = torch.zeros_like(logits, dtype=torch.bool)
    removed.scatter_(-1, indices, exclusive >= p)
    return torch.where(removed, MINUS_INFINITY, logits)


def sample(logits: Tensor, temperature: float = 1.0, top_k: int | None = None,
           top_p: float | None = None, generator: torch.Generator | None = None) -> Tensor:
    if temperature == 0:
        return logits.argmax(-1)
    logits = apply_temperature(logits, temperature)
    if top_k is not None:
        logits = top_k_filter(logits, top_k)
    if top_p is not None:
        logits = top_p_filter(logits, top_p)
    probs = torch.softmax(logits.double(), dim=-1)
    waits = torch.empty_like(probs).exponential_(1.0, generator=generator)
    return (probs / waits).argmax(dim=-1)
