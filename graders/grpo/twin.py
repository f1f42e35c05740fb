"""Kata 30's twin: GRPO's advantages and loss in float64, each with one switch per catalogued
mistake, so that a check can compute what a mistake gives on its own inputs and name it by
matching (the value, and the gradient with respect to the log-probs)."""

from __future__ import annotations

import torch
from torch import Tensor

# group_advantages switches -> slug
ADVANTAGE_MISTAKES: dict[str, str] = {
    "batch-std": "std-over-batch",             # the group's mean, the whole batch's std
    "batch-mean-std": "std-over-batch",        # mean and std over the whole batch
    "no-mean": "mean-not-subtracted",          # r / (std + eps)
    "biased-std": "std-biased",                # torch.std(unbiased=False): divides by G
    "no-eps": "nan-on-equal-rewards",          # (r - mean) / std: 0 / 0 on equal rewards
}
# grpo_loss switches -> slug
LOSS_MISTAKES: dict[str, str] = {
    "log-ratio": "ratio-not-exponentiated",    # ratio = logprobs - old_logprobs
    "max": "clip-bound-reversed",              # max(ratio A, clip(ratio) A)
    "upper-only": "clip-one-sided",            # clamp(ratio, max=1 + eps)
    "lower-only": "clip-one-sided",            # clamp(ratio, min=1 - eps)
    "kl-reversed": "kl-wrong-direction",       # exp(lp - ref) - (lp - ref) - 1
    "kl-added": "kl-sign-wrong",               # -(surrogate + beta kl)
    "mean-over-n": "padding-counted",          # per-token loss averaged over all n positions
    "masked-sum-over-n": "padding-counted",    # masked sum divided by n
    "swapped": "aggregation-swapped",          # the other aggregation
}


def advantages(rewards: Tensor, group_size: int, eps: float = 1e-6, normalize_by_std: bool = True,
               mistake: str | None = None) -> Tensor:
    """(B·G,) -> (B·G,) in float64."""
    r = rewards.detach().to(torch.float64)
    g = r.view(-1, group_size)
    if mistake == "batch-mean-std":
        mean, std = r.mean(), r.std()
    elif mistake == "batch-std":
        mean, std = g.mean(dim=1, keepdim=True), r.std()
    else:
        mean = g.mean(dim=1, keepdim=True)
        std = g.std(dim=1, keepdim=True, unbiased=mistake != "biased-std")
    centred = g if mistake == "no-mean" else g - mean
    if not normalize_by_std:
        return centred.reshape(-1)
    return (centred / (std if mistake == "no-eps" else std + eps)).reshape(-1)


def loss(logprobs: Tensor, old_logprobs: Tensor, ref_logprobs: Tensor, advantages: Tensor,
         response_mask: Tensor, clip_eps: float = 0.2, beta: float = 0.04,
         aggregation: str = "sequence", mistake: str | None = None
         ) -> tuple[Tensor, Tensor, dict[str, float]]:
    """(loss 0-dim, its gradient with respect to logprobs (B·G, n), stats), all in float64."""
    lp = logprobs.detach().to(torch.float64).requires_grad_(True)
    old = old_logprobs.detach().to(torch.float64)
    ref = ref_logprobs.detach().to(torch.float64)
    adv = advantages.detach().to(torch.float64).unsqueeze(1)
    mask = response_mask.to(torch.float64)
    ratio = lp - old if mistake == "log-ratio" else torch.exp(lp - old)
    low, high = 1 - clip_eps, 1 + clip_eps
    if mistake == "upper-only":
        clipped = ratio.clamp(max=high)
    elif mistake == "lower-only":
        clipped = ratio.clamp(min=low)
    else:
        clipped = ratio.clamp(low, high)
    pick = torch.max if mistake == "max" else torch.min
    surrogate = pick(ratio * adv, clipped * adv)
    diff = lp - ref if mistake == "kl-reversed" else ref - lp
    kl = torch.exp(diff) - diff - 1
    per_token = -(surrogate + beta * kl) if mistake == "kl-added" else -(surrogate - beta * kl)
    if mistake == "swapped":
        aggregation = "token" if aggregation == "sequence" else "sequence"
    n = mask.size(1)
    if mistake == "mean-over-n":
        value = per_token.mean(dim=1).mean() if aggregation == "sequence" else per_token.mean()
    elif mistake == "masked-sum-over-n":
        summed = (per_token * mask).sum(dim=1)
        value = (summed / n).mean() if aggregation == "sequence" else summed.sum() / mask.numel()
    elif aggregation == "sequence":
        value = ((per_token * mask).sum(dim=1) / mask.sum(dim=1)).mean()
    else:
        value = (per_token * mask).sum() / mask.sum()
    (grad,) = torch.autograd.grad(value, lp)
    with torch.no_grad():
        was_clipped = ((ratio > high) & (adv > 0)) | ((ratio < low) & (adv < 0))
        count = mask.sum()
        token_kl = float((kl * mask).sum() / count)
        sequence_kl = float(((kl * mask).sum(dim=1) / mask.sum(dim=1)).mean())
        stats = {"clip_fraction": float((was_clipped.double() * mask).sum() / count),
                 "kl": token_kl, "kl_sequence": sequence_kl}
    return value.detach(), grad, stats


def k1_mean(logprobs: Tensor, ref_logprobs: Tensor, response_mask: Tensor) -> tuple[float, float]:
    """k1 = log pi - log pi_ref, its masked mean over tokens and the mean of completions' means."""
    k1 = (logprobs - ref_logprobs).detach().double()
    mask = response_mask.double()
    return (float((k1 * mask).sum() / mask.sum()),
            float(((k1 * mask).sum(dim=1) / mask.sum(dim=1)).mean()))
