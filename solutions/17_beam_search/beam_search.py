"""Kata 17 reference: beam search over a next-token step function (CS224n's version)."""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor


def beam_search(step_fn: Callable[[Tensor], Tensor], bos_idx: int, eos_idx: int,
                beam_size: int, max_len: int,
                length_penalty: float = 1.0) -> list[tuple[list[int], float]]:
    """The finished hypotheses (at most beam_size) as (tokens, score), best first.

    step_fn(tokens (k, t) LongTensor) -> (k, V) next-token log-probabilities.
    score = cumulative log-probability / n ** length_penalty, n = tokens after bos.
    """
    live = torch.tensor([[bos_idx]], dtype=torch.long)  # (k, t)
    live_scores = torch.zeros(1, dtype=torch.float64)  # (k,) raw cumulative log-probabilities
    finished: list[tuple[list[int], float]] = []
    while len(finished) < beam_size and live.size(1) < max_len:
        log_probs = step_fn(live).to(torch.float64)  # (k, V)
        vocab = log_probs.size(1)
        candidates = (live_scores[:, None] + log_probs).flatten()  # (k * V,)
        keep = min(beam_size - len(finished), candidates.numel())
        top_scores, flat = candidates.topk(keep)
        parent, token = flat // vocab, flat % vocab  # row-major (k, V)
        extended = torch.cat([live[parent], token[:, None]], dim=1)  # (keep, t + 1)
        ended = token == eos_idx
        for row in ended.nonzero().flatten().tolist():
            finished.append((extended[row].tolist(), top_scores[row].item()))
        live, live_scores = extended[~ended], top_scores[~ended]
        if live.size(0) == 0:
            break
    finished += [(tokens, score) for tokens, score in zip(live.tolist(), live_scores.tolist())]
    finished = finished[:beam_size]
    ranked = [(tokens, score / (len(tokens) - 1) ** length_penalty) for tokens, score in finished]
    return sorted(ranked, key=lambda item: item[1], reverse=True)
