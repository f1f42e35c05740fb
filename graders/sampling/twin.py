"""Kata 16's twin: the filters and the sampling distribution in float64, with one switch per
catalogued mistake (the suspects they yield).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from graders.core.mistakes import Suspect


NEG_INF = float("-inf")


# ------------------------------------------------------------------------ references


def top_k_reference(logits: Tensor, k: int, *, fill: float = NEG_INF) -> Tensor:
    """Keep every logit >= its row's k-th largest; ``fill`` the others (0: filtered-set-to-zero)."""
    if k < 1:
        raise ValueError("k < 1 is not defined")
    if k >= logits.size(-1):
        return logits.clone()
    kth = logits.topk(k, dim=-1).values[..., -1:]
    return logits.masked_fill(logits < kth, fill)


def top_p_reference(logits: Tensor, p: float, *, rule: str = "exclusive",
                    fill: float = NEG_INF) -> Tensor:
    """Top-p with one switch per catalogued mistake.

    ``rule``: "exclusive" (correct: keep i iff the mass of the tokens before it is < p);
    "inclusive" (top-p-drops-crossing-token: keep i iff the mass up to and including i is
    < p); "vocab-exclusive", "vocab-inclusive", "vocab-hf" (top-p-unsorted: the cumulative
    sum in vocabulary order; "hf" is Hugging Face's warper without its sort: remove where
    the inclusive sum is <= 1 - p, the last token kept); "logits-exclusive",
    "exp-exclusive", "logits-hf", "exp-hf" (top-p-on-logits: sums of the logits, or of
    unnormalised exp(logits), instead of the probabilities).
    """
    kind, _sep, order = rule.rpartition("-") if "-" in rule else ("probs", "", rule)
    if kind in ("probs", "vocab"):
        values = torch.softmax(logits.double(), dim=-1)
    elif kind == "logits":
        values = logits.double()
    else:
        values = torch.exp(logits.double())
    if order == "hf":  # ascending, remove where the inclusive sum is <= 1 - p, keep the top
        if kind == "vocab":
            ranked, positions = values, torch.arange(values.size(-1)).expand_as(values)
        else:
            ranked, positions = values.sort(dim=-1)
        remove_ranked = ranked.cumsum(-1) <= 1 - p
        remove_ranked[..., -1] = False
    else:
        if kind == "vocab":
            ranked, positions = values, torch.arange(values.size(-1)).expand_as(values)
        else:
            ranked, positions = values.sort(dim=-1, descending=True)
        through = ranked.cumsum(-1)
        remove_ranked = (through - ranked if order == "exclusive" else through) >= p
    remove = remove_ranked.scatter(-1, positions.contiguous(), remove_ranked)
    return logits.masked_fill(remove, fill)


TOP_P_MISTAKES = {
    "top-p-drops-crossing-token": ("inclusive",),
    "top-p-unsorted": ("vocab-exclusive", "vocab-inclusive", "vocab-hf"),
    "top-p-on-logits": ("logits-exclusive", "exp-exclusive", "logits-hf", "exp-hf"),
}


def sampling_probs(logits: Tensor, temperature: float, top_k: int | None, top_p: float | None,
                   *, mistake: str | None = None, variant: Any = None) -> Tensor:
    """The exact distribution (float64) of ``sample``'s draw per row, or of one mistake's.

    ``mistake``: temperature-multiplied, temperature-after-softmax, filter-order (variant
    "top-p-first" or "before-temperature"), top-k-off-by-one (variant +1 or -1),
    filtered-set-to-zero, or a top-p slug of :data:`TOP_P_MISTAKES` (variant: its rule).
    """
    x = logits.double()
    fill = 0.0 if mistake == "filtered-set-to-zero" else NEG_INF
    rule = variant if mistake in TOP_P_MISTAKES else "exclusive"
    k = top_k + variant if mistake == "top-k-off-by-one" else top_k

    def top_k_step(t: Tensor) -> Tensor:
        return t if k is None else top_k_reference(t, k, fill=fill)

    def top_p_step(t: Tensor) -> Tensor:
        return t if top_p is None else top_p_reference(t, top_p, rule=rule, fill=fill)

    if mistake == "temperature-after-softmax":  # softmax(x) / T, renormalised: T is lost
        return torch.softmax(top_p_step(top_k_step(x)), dim=-1)
    if mistake == "filter-order" and variant == "before-temperature":
        return torch.softmax(top_p_step(top_k_step(x)) / temperature, dim=-1)
    x = x * temperature if mistake == "temperature-multiplied" else x / temperature
    if mistake == "filter-order" and variant == "top-p-first":
        return torch.softmax(top_k_step(top_p_step(x)), dim=-1)
    return torch.softmax(top_p_step(top_k_step(x)), dim=-1)


def sampling_suspects(logits: Tensor, temperature: float, top_k: int | None,
                      top_p: float | None) -> list[tuple[str, Tensor]]:
    """(slug, distribution) for every mistake that changes the distribution on this input."""
    expected = sampling_probs(logits, temperature, top_k, top_p)
    variants: list[tuple[str, Any]] = []
    if temperature != 1:
        variants += [("temperature-multiplied", None), ("temperature-after-softmax", None)]
        if top_k is not None or top_p is not None:
            variants.append(("filter-order", "before-temperature"))
    if top_k is not None:
        variants += [("top-k-off-by-one", 1), ("top-k-off-by-one", -1)]
        if top_p is not None:
            variants.append(("filter-order", "top-p-first"))
    if top_p is not None:
        variants += [(slug, rule) for slug, rules in TOP_P_MISTAKES.items() for rule in rules]
    if top_k is not None or top_p is not None:
        variants.append(("filtered-set-to-zero", None))
    suspects = []
    for slug, variant in variants:
        try:
            probs = sampling_probs(logits, temperature, top_k, top_p, mistake=slug, variant=variant)
        except (ValueError, RuntimeError):  # not defined on this input (k - 1 = 0)
            continue
        if not torch.allclose(probs, expected, atol=1e-3, rtol=0):
            suspects.append((slug, probs))
    return suspects


def top_k_suspects(logits: Tensor, k: int) -> list[Suspect]:
    return [Suspect("top-k-off-by-one", predict=lambda: top_k_reference(logits, k + 1)),
            Suspect("top-k-off-by-one", predict=lambda: top_k_reference(logits, k - 1)),
            Suspect("filtered-set-to-zero", predict=lambda: top_k_reference(logits, k, fill=0.0))]


def top_p_suspects(logits: Tensor, p: float) -> list[Suspect]:
    suspects = [Suspect(slug, predict=lambda r=rule: top_p_reference(logits, p, rule=r))
                for slug, rules in TOP_P_MISTAKES.items() for rule in rules]
    return suspects + [Suspect("filtered-set-to-zero",
                               predict=lambda: top_p_reference(logits, p, fill=0.0))]
