"""Kata 29 reference: direct preference optimisation, as TRL's DPOTrainer computes it.

sequence_logprobs turns a causal LM's logits into one log-probability per sequence (the sum over
its response tokens); dpo_loss turns the policy's and the reference's log-probabilities of a
chosen and a rejected response into a loss per pair and two implicit rewards.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def sequence_logprobs(logits: torch.Tensor, input_ids: torch.Tensor,
                      loss_mask: torch.Tensor) -> torch.Tensor:
    """logits (batch, seq, vocab), input_ids (batch, seq) int64, loss_mask (batch, seq) bool
    (True on response tokens) -> (batch,): sum over t >= 1 with loss_mask[:, t] of
    log_softmax(logits[:, t - 1])[input_ids[:, t]], in float32 at least."""
    work = torch.float64 if logits.dtype == torch.float64 else torch.float32
    # Position t - 1 predicts token t: drop the last logits and the first token.
    logps = torch.log_softmax(logits[:, :-1].to(work), dim=-1)
    labels = input_ids[:, 1:]
    mask = loss_mask[:, 1:]
    per_token = torch.gather(logps, -1, labels.unsqueeze(-1)).squeeze(-1)
    # where, not a product: a masked position's value never reaches the sum (nor its gradient).
    return torch.where(mask, per_token, torch.zeros_like(per_token)).sum(-1)


def dpo_loss(policy_chosen_logps: torch.Tensor, policy_rejected_logps: torch.Tensor,
             ref_chosen_logps: torch.Tensor, ref_rejected_logps: torch.Tensor,
             beta: float = 0.1, label_smoothing: float = 0.0, loss_type: str = "sigmoid",
             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Every argument (batch,) -> (losses, chosen_rewards, rejected_rewards), each (batch,)."""
    # The reference is frozen: its log-probs are constants of the loss.
    ref_chosen_logps = ref_chosen_logps.detach()
    ref_rejected_logps = ref_rejected_logps.detach()
    logits = (policy_chosen_logps - policy_rejected_logps) - (ref_chosen_logps - ref_rejected_logps)
    if loss_type == "sigmoid":
        # F.logsigmoid is stable: log(sigmoid(x)) is -inf (and its gradient NaN) at x = -1000.
        losses = (-(1 - label_smoothing) * F.logsigmoid(beta * logits)
                  - label_smoothing * F.logsigmoid(-beta * logits))
    elif loss_type == "ipo":
        losses = (logits - 1 / (2 * beta)) ** 2
    else:
        raise ValueError(f"unknown loss_type {loss_type!r}: expected 'sigmoid' or 'ipo'")
    chosen_rewards = beta * (policy_chosen_logps - ref_chosen_logps).detach()
    rejected_rewards = beta * (policy_rejected_logps - ref_rejected_logps).detach()
    return losses, chosen_rewards, rejected_rewards
