"""GRPO as Stanford CS336's assignment 5 has it written: compute_group_normalized_rewards
with a loop over the groups, compute_grpo_clip_loss per token, and a masked_mean helper that
averages along a dimension (dim=1 per response, dim=None over the batch)."""

from __future__ import annotations

import torch


def masked_mean(tensor: torch.Tensor, mask: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    mask = mask.to(tensor.dtype)
    if dim is None:
        return (tensor * mask).sum() / mask.sum()
    return (tensor * mask).sum(dim=dim) / mask.sum(dim=dim)


def group_advantages(rewards, group_size, eps=1e-6, normalize_by_std=True):
    advantages = []
    for start in range(0, rewards.numel(), group_size):
        group = rewards[start:start + group_size]
        centred = group - torch.mean(group)
        if normalize_by_std:
            centred = centred / (torch.std(group) + eps)
        advantages.append(centred)
    return torch.cat(advantages)


def compute_grpo_clip_loss(advantages, policy_log_probs, old_log_probs, cliprange):
    """(batch, 1), (batch, seq), (batch, seq) -> per-token loss (batch, seq), was_clipped."""
    ratio = torch.exp(policy_log_probs - old_log_probs)
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - cliprange, 1.0 + cliprange) * advantages
    was_clipped = clipped < unclipped
    return -torch.minimum(unclipped, clipped), was_clipped


def grpo_loss(logprobs, old_logprobs, ref_logprobs, advantages, response_mask, clip_eps=0.2,
              beta=0.04, aggregation="sequence"):
    per_token, was_clipped = compute_grpo_clip_loss(advantages[:, None], logprobs,
                                                    old_logprobs.detach(), clip_eps)
    log_ratio = ref_logprobs - logprobs
    kl = log_ratio.exp() - log_ratio - 1
    per_token = per_token + beta * kl
    if aggregation == "sequence":
        loss = masked_mean(per_token, response_mask, dim=1).mean()
    elif aggregation == "token":
        loss = masked_mean(per_token, response_mask)
    else:
        raise ValueError(aggregation)
    stats = {"clip_fraction": masked_mean(was_clipped.to(logprobs.dtype), response_mask).item(),
             "kl": masked_mean(kl.detach(), response_mask).item()}
    return loss, stats
