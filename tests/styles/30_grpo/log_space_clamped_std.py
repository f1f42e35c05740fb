"""GRPO written in log space: the std floored with clamp_min(eps) rather than shifted by eps
(no mistake: it moves an advantage by about eps, and a group of equal rewards still gives 0),
the clip applied to the log-ratio, k3 as expm1(d) - d, and the masked means taken by boolean
indexing and index_add over each token's row."""

from __future__ import annotations

import math

import torch


def group_advantages(rewards, group_size, eps=1e-6, normalize_by_std=True):
    g = rewards.reshape(-1, group_size)
    centred = g - g.mean(dim=-1, keepdim=True)
    if normalize_by_std:
        centred = centred / g.std(dim=-1, keepdim=True).clamp_min(eps)
    return centred.flatten()


def grpo_loss(logprobs, old_logprobs, ref_logprobs, advantages, response_mask, clip_eps=0.2,
              beta=0.04, aggregation="sequence"):
    rows = torch.arange(logprobs.shape[0]).unsqueeze(1).expand_as(response_mask)[response_mask]
    lp = logprobs[response_mask]                   # (T,) every response token of the batch
    log_ratio = lp - old_logprobs.detach()[response_mask]
    a = advantages[rows]
    clipped_log_ratio = log_ratio.clamp(math.log(1 - clip_eps), math.log(1 + clip_eps))
    surrogate = torch.minimum(log_ratio.exp() * a, clipped_log_ratio.exp() * a)
    d = ref_logprobs[response_mask] - lp
    kl = torch.expm1(d) - d
    per_token = beta * kl - surrogate
    if aggregation == "token":
        loss = per_token.mean()
    elif aggregation == "sequence":
        n = logprobs.shape[0]
        sums = torch.zeros(n, dtype=per_token.dtype).index_add(0, rows, per_token)
        loss = (sums / response_mask.sum(dim=1)).mean()
    else:
        raise ValueError(f"aggregation must be 'sequence' or 'token', not {aggregation!r}")
    with torch.no_grad():
        ratio = log_ratio.exp()
        clipped = ((ratio > 1 + clip_eps) & (a > 0)) | ((ratio < 1 - clip_eps) & (a < 0))
        stats = {"clip_fraction": clipped.double().mean().item(), "kl": kl.mean().item()}
    return loss, stats
