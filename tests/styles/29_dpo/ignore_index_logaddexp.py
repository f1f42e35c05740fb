"""Flattened F.cross_entropy with ignore_index for the log-probs (what a next-token loss already
has), torch.logaddexp for the log-sigmoid, and the reference's side under torch.no_grad()."""

import torch
import torch.nn.functional as F


def sequence_logprobs(logits, input_ids, loss_mask):
    b, n, vocab = logits.shape
    if logits.dtype != torch.float64:
        logits = logits.float()
    labels = input_ids[:, 1:]
    targets = torch.where(loss_mask[:, 1:], labels, torch.full_like(labels, -100))
    nll = F.cross_entropy(logits[:, :-1].reshape(-1, vocab), targets.reshape(-1),
                          ignore_index=-100, reduction="none")
    return -nll.view(b, n - 1).sum(-1)


def log_sigmoid(z):
    # log sigmoid(z) = -log(1 + e^-z) = -logaddexp(0, -z)
    return -torch.logaddexp(torch.zeros_like(z), -z)


def dpo_loss(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps, ref_rejected_logps,
             beta=0.1, label_smoothing=0.0, loss_type="sigmoid"):
    with torch.no_grad():
        ref_margin = ref_chosen_logps - ref_rejected_logps
        chosen_rewards = beta * (policy_chosen_logps - ref_chosen_logps)
        rejected_rewards = beta * (policy_rejected_logps - ref_rejected_logps)
    z = (policy_chosen_logps - policy_rejected_logps) - ref_margin
    if loss_type == "sigmoid":
        eps = label_smoothing
        losses = -(1 - eps) * log_sigmoid(beta * z) - eps * log_sigmoid(-beta * z)
    elif loss_type == "ipo":
        losses = torch.square(z - 0.5 / beta)
    else:
        raise ValueError(loss_type)
    return losses, chosen_rewards, rejected_rewards
