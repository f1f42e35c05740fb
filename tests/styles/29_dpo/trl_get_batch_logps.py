"""DPO as TRL writes it: DPOTrainer.get_batch_logps on labels with -100 at the positions that do
not count, and DPOTrainer.dpo_loss with its pi_logratios / ref_logratios."""

import torch
import torch.nn.functional as F

LABEL_PAD_TOKEN_ID = -100


def get_batch_logps(logits: torch.Tensor, labels: torch.Tensor,
                    label_pad_token_id: int = LABEL_PAD_TOKEN_ID) -> torch.Tensor:
    """logits (batch, seq, vocab), labels (batch, seq) with label_pad_token_id where nothing
    is scored -> (batch,) summed log-probs."""
    if logits.shape[:-1] != labels.shape:
        raise ValueError("Logits (batch and sequence length dim) and labels must have the same "
                         "shape.")
    labels = labels[:, 1:].clone()
    logits = logits[:, :-1, :]
    loss_mask = labels != label_pad_token_id
    # dummy token; we'll ignore the losses on these tokens later
    labels[labels == label_pad_token_id] = 0
    per_token_logps = torch.gather(logits.log_softmax(-1), dim=2,
                                   index=labels.unsqueeze(2)).squeeze(2)
    return (per_token_logps * loss_mask).sum(-1)


def sequence_logprobs(logits, input_ids, loss_mask):
    if logits.dtype in (torch.float16, torch.bfloat16):
        logits = logits.float()
    labels = input_ids.masked_fill(~loss_mask, LABEL_PAD_TOKEN_ID)
    return get_batch_logps(logits, labels)


def dpo_loss(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps, ref_rejected_logps,
             beta=0.1, label_smoothing=0.0, loss_type="sigmoid"):
    ref_chosen_logps = ref_chosen_logps.detach()
    ref_rejected_logps = ref_rejected_logps.detach()
    pi_logratios = policy_chosen_logps - policy_rejected_logps
    ref_logratios = ref_chosen_logps - ref_rejected_logps
    logits = pi_logratios - ref_logratios

    if loss_type == "sigmoid":
        losses = (
            -F.logsigmoid(beta * logits) * (1 - label_smoothing)
            - F.logsigmoid(-beta * logits) * label_smoothing
        )
    elif loss_type == "ipo":
        # eqn (17) of the paper where beta is the regularization parameter for the IPO loss,
        # denoted by tau in the paper.
        losses = (logits - 1 / (2 * beta)) ** 2
    else:
        raise ValueError(f"Unknown loss type: {loss_type}. Should be one of ['sigmoid', 'ipo']")

    chosen_rewards = beta * (policy_chosen_logps - ref_chosen_logps).detach()
    rejected_rewards = beta * (policy_rejected_logps - ref_rejected_logps).detach()
    return losses, chosen_rewards, rejected_rewards
