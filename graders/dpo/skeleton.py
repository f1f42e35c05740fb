"""Kata 29: DPO loss.

Read README.md in this folder, fill in the two functions below, then run
    pytest katas/29_dpo
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def sequence_logprobs(logits: torch.Tensor, input_ids: torch.Tensor,
                      loss_mask: torch.Tensor) -> torch.Tensor:
    """The log-probability of each sequence's response, summed over its tokens.

    logits (batch, seq, vocab) from a causal LM, input_ids (batch, seq) int64, loss_mask
    (batch, seq) bool, True on the response's tokens (prompt and padding False).
    Returns (batch,): the sum, over positions t >= 1 with loss_mask[:, t], of
    log_softmax(logits[:, t - 1])[input_ids[:, t]] (position t - 1 predicts token t).
    Computed in float32 at least: float16/bfloat16/float32 logits give float32.
    """
    raise NotImplementedError("see katas/29_dpo/README.md")


def dpo_loss(policy_chosen_logps: torch.Tensor, policy_rejected_logps: torch.Tensor,
             ref_chosen_logps: torch.Tensor, ref_rejected_logps: torch.Tensor,
             beta: float = 0.1, label_smoothing: float = 0.0, loss_type: str = "sigmoid",
             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """TRL's DPOTrainer.dpo_loss. Every argument is (batch,); returns (losses, chosen_rewards,
    rejected_rewards), each (batch,).

    logits = (policy_chosen - policy_rejected) - (ref_chosen - ref_rejected).
    "sigmoid": -(1 - eps) * logsigmoid(beta * logits) - eps * logsigmoid(-beta * logits),
    eps = label_smoothing, finite for |logits| up to 1e3. "ipo": (logits - 1 / (2 * beta))**2
    (eps ignored). Rewards beta * (policy - ref) for each side, detached. The reference's
    log-probs get no gradient. Any other loss_type raises ValueError.
    """
    raise NotImplementedError("see katas/29_dpo/README.md")
