"""DPO in the style of Stanford CS336's assignment 5 (compute_per_instance_dpo_loss): sequence
log-probs from F.cross_entropy per token, a log-ratio per response, the loss as a softplus."""

import torch
import torch.nn.functional as F


def sequence_logprobs(logits, input_ids, loss_mask):
    work = torch.float64 if logits.dtype == torch.float64 else torch.float32
    # cross_entropy wants the classes on dim 1: (batch, vocab, seq - 1).
    token_nll = F.cross_entropy(logits[:, :-1].to(work).transpose(1, 2), input_ids[:, 1:],
                                reduction="none")
    return -(token_nll * loss_mask[:, 1:].to(work)).sum(dim=1)


def dpo_loss(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps, ref_rejected_logps,
             beta=0.1, label_smoothing=0.0, loss_type="sigmoid"):
    if loss_type not in ("sigmoid", "ipo"):
        raise ValueError(f"loss_type must be 'sigmoid' or 'ipo', not {loss_type!r}")
    with torch.no_grad():
        ref_chosen, ref_rejected = ref_chosen_logps.clone(), ref_rejected_logps.clone()
    chosen_logratio = policy_chosen_logps - ref_chosen
    rejected_logratio = policy_rejected_logps - ref_rejected
    margin = chosen_logratio - rejected_logratio
    if loss_type == "ipo":
        losses = (margin - 1 / (2 * beta)) ** 2
    else:
        # -logsigmoid(z) = softplus(-z), stable for any z.
        losses = ((1 - label_smoothing) * F.softplus(-beta * margin)
                  + label_smoothing * F.softplus(beta * margin))
    return losses, beta * chosen_logratio.detach(), beta * rejected_logratio.detach()
