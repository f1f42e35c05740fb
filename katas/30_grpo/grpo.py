"""Kata 30: GRPO loss.

Read README.md in this folder, fill in the two functions below, then run
    pytest katas/30_grpo
"""

from __future__ import annotations

import torch


def group_advantages(rewards: torch.Tensor, group_size: int, eps: float = 1e-6,
                     normalize_by_std: bool = True) -> torch.Tensor:
    """Group-relative advantages: (B·G,) rewards -> (B·G,) advantages, the rewards' dtype.

    Each prompt's G = group_size completions are consecutive. Within a group:
    (r - mean) / (std + eps), std unbiased as torch.std computes it (divides by G - 1);
    r - mean when normalize_by_std is False (Dr. GRPO). Equal rewards give 0, never NaN.
    """
    raise NotImplementedError("see katas/30_grpo/README.md")


def grpo_loss(logprobs: torch.Tensor, old_logprobs: torch.Tensor, ref_logprobs: torch.Tensor,
              advantages: torch.Tensor, response_mask: torch.Tensor, clip_eps: float = 0.2,
              beta: float = 0.04, aggregation: str = "sequence") -> tuple[torch.Tensor, dict]:
    """GRPO's clipped surrogate with a k3 KL penalty -> (loss 0-dim tensor, stats dict).

    logprobs, old_logprobs, ref_logprobs: (B·G, n) log-probs of each response token under the
    policy, the policy that sampled (a constant) and the reference; advantages (B·G,);
    response_mask (B·G, n) bool, True on response tokens.
    Per token: ratio = exp(logprobs - old_logprobs);
    surrogate = min(ratio * A, clamp(ratio, 1 - clip_eps, 1 + clip_eps) * A);
    kl = exp(ref - logprobs) - (ref - logprobs) - 1; loss = -(surrogate - beta * kl).
    aggregation "sequence": the mean over each completion's masked tokens, then over
    completions; "token": the sum over all masked tokens divided by their count.
    stats: {"clip_fraction": float, "kl": float}, over the masked tokens.
    """
    raise NotImplementedError("see katas/30_grpo/README.md")
