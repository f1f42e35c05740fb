"""Kata 16 in another style: top-k by sorting, top-p by a sorted mask, and the draw as
Gumbel-max: argmax(logits + Gumbel noise) is a sample from softmax(logits)."""

from __future__ import annotations

import torch
from torch import Tensor


def apply_temperature(logits: Tensor, temperature: float) -> Tensor:
    return logits * (1.0 / temperature)


def top_k_filter(logits: Tensor, k: int) -> Tensor:
    vocab = logits.size(-1)
    if k >= vocab:
        return logits
    threshold = logits.sort(dim=-1, descending=True).values[..., k - 1:k]  # (..., 1)
    return torch.where(logits >= threshold, logits, torch.full_like(logits, float("-inf")))


def top_p_filter(logits: Tensor, p: float) -> Tensor:
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    sorted_probs = sorted_logits.softmax(dim=-1)
    cumulative = sorted_probs.cumsum(dim=-1)
    keep_sorted = (cumulative - sorted_probs) < p
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    return torch.where(keep, logits, torch.full_like(logits, float("-inf")))


def sample(logits: Tensor, temperature: float = 1.0, top_k: int | None = None,
           top_p: float | None = None, generator: torch.Generator | None = None) -> Tensor:
    if temperature == 0:
        return torch.argmax(logits, dim=-1)
    scores = apply_temperature(logits, temperature)
    if top_k is not None:
        scores = top_k_filter(scores, top_k)
    if top_p is not None:
        scores = top_p_filter(scores, top_p)
    uniform = torch.rand(scores.shape, generator=generator, dtype=torch.float64,
                         device=scores.device)
    gumbel = -torch.log(-torch.log(uniform))
    return torch.argmax(scores.double() + gumbel, dim=-1)
