"""GRPO as Hugging Face TRL's GRPOTrainer writes it: rewards viewed (B, G), means and stds
repeated back per completion; coef_1 / coef_2, per_token_loss1 / per_token_loss2, and the
loss_type "grpo" (per sequence) or "bnpo" (per token) reduction over completion_mask."""

from __future__ import annotations

import torch


def group_advantages(rewards, group_size, eps=1e-6, normalize_by_std=True):
    mean_grouped_rewards = rewards.view(-1, group_size).mean(dim=1)
    std_grouped_rewards = rewards.view(-1, group_size).std(dim=1)
    mean_grouped_rewards = mean_grouped_rewards.repeat_interleave(group_size, dim=0)
    std_grouped_rewards = std_grouped_rewards.repeat_interleave(group_size, dim=0)
    advantages = rewards - mean_grouped_rewards
    if normalize_by_std:
        advantages = advantages / (std_grouped_rewards + eps)
    return advantages


def grpo_loss(logprobs, old_logprobs, ref_logprobs, advantages, response_mask, clip_eps=0.2,
              beta=0.04, aggregation="sequence"):
    per_token_logps = logprobs
    old_per_token_logps = old_logprobs.detach()
    completion_mask = response_mask.to(per_token_logps.dtype)
    per_token_kl = (torch.exp(ref_logprobs - per_token_logps)
                    - (ref_logprobs - per_token_logps) - 1)
    coef_1 = torch.exp(per_token_logps - old_per_token_logps)
    coef_2 = torch.clamp(coef_1, 1 - clip_eps, 1 + clip_eps)
    per_token_loss1 = coef_1 * advantages.unsqueeze(1)
    per_token_loss2 = coef_2 * advantages.unsqueeze(1)
    per_token_loss = -torch.min(per_token_loss1, per_token_loss2)
    if beta != 0.0:
        per_token_loss = per_token_loss + beta * per_token_kl
    if aggregation == "sequence":  # loss_type="grpo"
        loss = ((per_token_loss * completion_mask).sum(-1)
                / completion_mask.sum(-1).clamp(min=1.0)).mean()
    elif aggregation == "token":  # loss_type="bnpo"
        loss = (per_token_loss * completion_mask).sum() / completion_mask.sum().clamp(min=1.0)
    else:
        raise ValueError(f"Unknown aggregation: {aggregation}")

    def masked_batch_mean(x):
        return (x * completion_mask).sum() / completion_mask.sum()

    is_low_clipped = (coef_1 < 1 - clip_eps) & (advantages.unsqueeze(1) < 0)
    is_high_clipped = (coef_1 > 1 + clip_eps) & (advantages.unsqueeze(1) > 0)
    clip_ratio = masked_batch_mean((is_low_clipped | is_high_clipped).to(completion_mask.dtype))
    mean_kl = ((per_token_kl * completion_mask).sum(-1) / completion_mask.sum(-1)).mean()
    return loss, {"clip_fraction": clip_ratio.item(), "kl": mean_kl.item()}
