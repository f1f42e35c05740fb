"""Reference solution for kata 16: from next-token logits to a token (temperature, top-k, top-p)."""

from __future__ import annotations

import torch
from torch import Tensor

NEG_INF = float("-inf")


def apply_temperature(logits: Tensor, temperature: float) -> Tensor:
    """logits (..., V) / temperature, a new tensor of the same shape and dtype."""
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature} (use sample(..., temperature=0) for greedy)")
    return logits / temperature


def top_k_filter(logits: Tensor, k: int) -> Tensor:
    """Keep every logit >= its row's k-th largest; the others become -inf. logits (..., V)."""
    if k >= logits.size(-1):
        return logits.clone()
    kth_largest = torch.topk(logits, k, dim=-1).values[..., -1:]  # (..., 1)
    return logits.masked_fill(logits < kth_largest, NEG_INF)


def top_p_filter(logits: Tensor, p: float) -> Tensor:
    """Keep token i iff the probability of the tokens more probable than i is < p (the
    smallest set whose mass reaches p); the others become -inf. logits (..., V)."""
    probs = torch.softmax(logits, dim=-1)
    sorted_probs, order = probs.sort(dim=-1, descending=True)  # (..., V) each
    mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs  # exclusive cumulative sum
    remove_sorted = mass_before >= p
    remove = remove_sorted.scatter(-1, order, remove_sorted)  # back to vocabulary order
    return logits.masked_fill(remove, NEG_INF)


def sample(logits: Tensor, temperature: float = 1.0, top_k: int | None = None,
           top_p: float | None = None, generator: torch.Generator | None = None) -> Tensor:
    """One token id per row of logits (..., V): a LongTensor (...), 0-d for 1-D logits.

    temperature 0 is greedy (the argmax). Otherwise temperature, then top-k, then top-p,
    then one draw from the softmax, with randomness from ``generator`` only (the global RNG
    when it is None).
    """
    if temperature == 0:
        return logits.argmax(dim=-1)
    logits = apply_temperature(logits, temperature)
    if top_k is not None:
        logits = top_k_filter(logits, top_k)
    if top_p is not None:
        logits = top_p_filter(logits, top_p)
    wide = torch.float64 if logits.dtype == torch.float64 else torch.float32
    probs = torch.softmax(logits, dim=-1, dtype=wide)
    draws = torch.multinomial(probs.reshape(-1, probs.size(-1)), 1, generator=generator)
    return draws.reshape(logits.shape[:-1])
