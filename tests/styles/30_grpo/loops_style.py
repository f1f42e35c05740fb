"""GRPO with a loop over groups and a loop over completions: each completion's response
tokens picked by boolean indexing (so padding never enters), the clipped objective written
with torch.where on the advantage's sign, and k3 from the probability ratio pi_ref / pi."""

from __future__ import annotations

import torch


def group_advantages(rewards, group_size, eps=1e-6, normalize_by_std=True):
    out = torch.empty_like(rewards)
    for g in range(rewards.shape[0] // group_size):
        sl = slice(g * group_size, (g + 1) * group_size)
        r = rewards[sl]
        mean = r.sum() / group_size
        a = r - mean
        if normalize_by_std:
            var = ((r - mean) ** 2).sum() / (group_size - 1)
            a = a / (var.sqrt() + eps)
        out[sl] = a
    return out


def grpo_loss(logprobs, old_logprobs, ref_logprobs, advantages, response_mask, clip_eps=0.2,
              beta=0.04, aggregation="sequence"):
    seq_losses, token_losses, kls, clipped_count = [], [], [], 0
    for i in range(logprobs.shape[0]):
        keep = response_mask[i]
        lp = logprobs[i][keep]
        ratio = torch.exp(lp - old_logprobs[i][keep].detach())
        a = advantages[i]
        # A > 0: the ratio is capped at 1 + eps; A < 0: floored at 1 - eps.
        capped = torch.where(a > 0, torch.minimum(ratio, torch.full_like(ratio, 1 + clip_eps)),
                             torch.maximum(ratio, torch.full_like(ratio, 1 - clip_eps)))
        pi_ref_over_pi = torch.exp(ref_logprobs[i][keep] - lp)
        kl = pi_ref_over_pi - torch.log(pi_ref_over_pi) - 1
        losses = -(capped * a - beta * kl)
        seq_losses.append(losses.mean())
        token_losses.append(losses)
        kls.append(kl.detach())
        clipped_count += int(((ratio > 1 + clip_eps) & (a > 0)).sum()
                             + ((ratio < 1 - clip_eps) & (a < 0)).sum())
    if aggregation == "sequence":
        loss = torch.stack(seq_losses).mean()
    elif aggregation == "token":
        loss = torch.cat(token_losses).mean()
    else:
        raise ValueError(aggregation)
    tokens = torch.cat(kls)
    return loss, {"clip_fraction": clipped_count / tokens.numel(), "kl": tokens.mean().item()}
