"""Kata 16 in Hugging Face's style: logits warpers (TemperatureLogitsWarper,
TopKLogitsWarper, TopPLogitsWarper, written out as transformers writes them) applied in
generate()'s order, then torch.multinomial on the softmax. transformers' TopPLogitsWarper
sorts *ascending* and removes the tokens whose inclusive cumulative probability is
<= 1 - top_p: the same set as "the mass before the token is >= top_p", away from ties."""

from __future__ import annotations

import torch
from torch import Tensor


class TemperatureLogitsWarper:
    def __init__(self, temperature: float):
        if not temperature > 0:
            raise ValueError(f"`temperature` has to be a strictly positive float, but is {temperature}")
        self.temperature = temperature

    def __call__(self, input_ids, scores: Tensor) -> Tensor:
        return scores / self.temperature


class TopKLogitsWarper:
    def __init__(self, top_k: int, filter_value: float = -float("inf"), min_tokens_to_keep: int = 1):
        self.top_k = max(top_k, min_tokens_to_keep)
        self.filter_value = filter_value

    def __call__(self, input_ids, scores: Tensor) -> Tensor:
        top_k = min(self.top_k, scores.size(-1))  # Safety check
        # Remove all tokens with a probability less than the last token of the top-k
        indices_to_remove = scores < torch.topk(scores, top_k)[0][..., -1, None]
        return scores.masked_fill(indices_to_remove, self.filter_value)


class TopPLogitsWarper:
    def __init__(self, top_p: float, filter_value: float = -float("inf"), min_tokens_to_keep: int = 1):
        self.top_p = top_p
        self.filter_value = filter_value
        self.min_tokens_to_keep = min_tokens_to_keep

    def __call__(self, input_ids, scores: Tensor) -> Tensor:
        sorted_logits, sorted_indices = torch.sort(scores, descending=False)
        cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)

        # Remove tokens with cumulative top_p above the threshold (token with 0 are kept)
        sorted_indices_to_remove = cumulative_probs <= (1 - self.top_p)
        # Keep at least min_tokens_to_keep
        sorted_indices_to_remove[..., -self.min_tokens_to_keep :] = 0

        # scatter sorted tensors to original indexing
        indices_to_remove = sorted_indices_to_remove.scatter(-1, sorted_indices, sorted_indices_to_remove)
        return scores.masked_fill(indices_to_remove, self.filter_value)


def apply_temperature(logits: Tensor, temperature: float) -> Tensor:
    return TemperatureLogitsWarper(temperature)(None, logits)


def top_k_filter(logits: Tensor, k: int) -> Tensor:
    return TopKLogitsWarper(k)(None, logits)


def top_p_filter(logits: Tensor, p: float) -> Tensor:
    return TopPLogitsWarper(p)(None, logits)


def sample(logits: Tensor, temperature: float = 1.0, top_k: int | None = None,
           top_p: float | None = None, generator: torch.Generator | None = None) -> Tensor:
    if temperature == 0:  # do_sample=False: greedy search
        return torch.argmax(logits, dim=-1)
    warpers = [TemperatureLogitsWarper(temperature)]
    if top_k is not None:
        warpers.append(TopKLogitsWarper(top_k))
    if top_p is not None:
        warpers.append(TopPLogitsWarper(top_p))
    scores = logits.reshape(-1, logits.size(-1))  # (batch, vocab), as generate() holds them
    for warper in warpers:
        scores = warper(None, scores)
    probs = torch.nn.functional.softmax(scores, dim=-1)
    next_tokens = torch.multinomial(probs.float(), num_samples=1, generator=generator).squeeze(1)
    return next_tokens.reshape(logits.shape[:-1])
