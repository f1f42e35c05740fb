"""Kata 30 reference: GRPO's group-relative advantages and its clipped, KL-regularised loss."""

from __future__ import annotations

import torch


def group_advantages(rewards: torch.Tensor, group_size: int, eps: float = 1e-6,
                     normalize_by_std: bool = True) -> torch.Tensor:
    """(B·G,) rewards, each prompt's G completions consecutive -> (B·G,) advantages."""
    grouped = rewards.view(-1, group_size)                      # (B, G)
    centred = grouped - grouped.mean(dim=1, keepdim=True)
    if normalize_by_std:
        # torch.std is unbiased (divides by G - 1); eps keeps a group of equal rewards at 0.
        centred = centred / (grouped.std(dim=1, keepdim=True) + eps)
    return centred.reshape(-1)


def grpo_loss(logprobs: torch.Tensor, old_logprobs: torch.Tensor, ref_logprobs: torch.Tensor,
              advantages: torch.Tensor, response_mask: torch.Tensor, clip_eps: float = 0.2,
              beta: float = 0.04, aggregation: str = "sequence") -> tuple[torch.Tensor, dict]:
    """Log-probs (B·G, n) per response token, advantages (B·G,), mask (B·G, n) bool ->
    (loss 0-dim, {"clip_fraction": float, "kl": float})."""
    mask = response_mask.to(logprobs.dtype)
    adv = advantages.to(logprobs.dtype).unsqueeze(1)            # (B·G, 1), one per completion
    ratio = torch.exp(logprobs - old_logprobs.detach())          # the old policy is a constant
    clipped = torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps)
    surrogate = torch.min(ratio * adv, clipped * adv)
    log_ref_ratio = ref_logprobs - logprobs
    kl = torch.exp(log_ref_ratio) - log_ref_ratio - 1            # k3: unbiased and >= 0
    per_token = -(surrogate - beta * kl)
    if aggregation == "sequence":    # each completion's mean, then the mean over completions
        loss = ((per_token * mask).sum(dim=1) / mask.sum(dim=1)).mean()
    elif aggregation == "token":     # one mean over every response token of the batch (DAPO)
        loss = (per_token * mask).sum() / mask.sum()
    else:
        raise ValueError(f"unknown aggregation {aggregation!r}: 'sequence' or 'token'")
    with torch.no_grad():
        was_clipped = ((ratio > 1 + clip_eps) & (adv > 0)) | ((ratio < 1 - clip_eps) & (adv < 0))
        count = mask.sum()
        stats = {"clip_fraction": float((was_clipped.to(mask.dtype) * mask).sum() / count),
                 "kl": float((kl * mask).sum() / count)}
    return loss, stats
