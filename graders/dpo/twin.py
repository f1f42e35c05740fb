"""Kata 29's twin: the reference sequence log-probabilities and DPO loss, each with one switch
per catalogued mistake, so that a check can compute what a mistake produces on its own inputs
and name it by matching.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

# sequence_logprobs switches -> slug. The prompt/padding switches need to know which positions
# are padding: the grader's inputs come with an attention mask (True on prompt and response).
LOGPROB_MISTAKES: dict[str, str] = {
    "not-shifted": "labels-not-shifted",  # logits[:, t] scored against input_ids[:, t]
    "attention-mask": "prompt-tokens-counted",  # the attention mask used as the loss mask
    "not-prompt": "padding-counted",  # the mask built from the prompt length alone (t >= p)
    "no-mask": "padding-counted",  # every position t >= 1 counted, prompt and padding alike
    "mean": "mean-not-sum",  # the average over the response tokens (SimPO's), not the sum
}
# dpo_loss switches -> slug (value mistakes; the autograd ones are found by matches).
LOSS_MISTAKES: dict[str, str] = {
    "reference-plus": "reference-sign-flipped",  # (pc - pr) + (rc - rr)
    "logits-negated": "chosen-rejected-swapped",  # (pr - pc) - (rr - rc), rewards right
    "arguments-swapped": "chosen-rejected-swapped",  # chosen and rejected swapped everywhere
    "beta-outside": "beta-outside-logsigmoid",  # -beta * logsigmoid(logits)
    "log-of-sigmoid": "log-sigmoid-unstable",  # log(sigmoid(x)): -inf at x = -1000
    "ipo-beta-over-2": "ipo-beta-misplaced",  # (logits - 1/2*beta)**2, i.e. beta / 2
    "ipo-beta-inside": "ipo-beta-misplaced",  # (beta * logits - 1/2)**2
    "smoothing-plus": "smoothing-sign-wrong",  # ... + eps * logsigmoid(-beta * logits)
    "smoothing-same-side": "smoothing-sign-wrong",  # ... - eps * logsigmoid(+beta * logits)
}


def work_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def sequence_logprobs(logits: Tensor, input_ids: Tensor, loss_mask: Tensor,
                      attention_mask: Tensor | None = None, mistake: str | None = None) -> Tensor:
    """(batch, seq, vocab), (batch, seq), (batch, seq) -> (batch,); ``attention_mask`` (batch,
    seq) bool, True on prompt and response, is needed by the prompt/padding switches only."""
    logps = torch.log_softmax(logits.to(work_dtype(logits.dtype)), dim=-1)
    if mistake == "not-shifted":
        per_token = torch.gather(logps, -1, input_ids.unsqueeze(-1)).squeeze(-1)
        return torch.where(loss_mask, per_token, torch.zeros_like(per_token)).sum(-1)
    per_token = torch.gather(logps[:, :-1], -1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    if mistake == "attention-mask":
        loss_mask = attention_mask
    elif mistake == "not-prompt":
        loss_mask = loss_mask | ~attention_mask
    elif mistake == "no-mask":
        loss_mask = torch.ones_like(loss_mask)
    mask = loss_mask[:, 1:]
    total = torch.where(mask, per_token, torch.zeros_like(per_token)).sum(-1)
    if mistake == "mean":
        return total / mask.sum(-1).clamp_min(1)
    return total


def dpo_loss(pc: Tensor, pr: Tensor, rc: Tensor, rr: Tensor, beta: float = 0.1,
             label_smoothing: float = 0.0, loss_type: str = "sigmoid",
             mistake: str | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """The policy's (pc, pr) and the reference's (rc, rr) log-probs of the chosen and rejected
    responses, each (batch,) -> (losses, chosen_rewards, rejected_rewards), each (batch,)."""
    eps = label_smoothing
    rc, rr = rc.detach(), rr.detach()
    if mistake == "arguments-swapped":
        pc, pr, rc, rr = pr, pc, rr, rc
    logits = (pc - pr) - (rc - rr)
    if mistake == "reference-plus":
        logits = (pc - pr) + (rc - rr)
    elif mistake == "logits-negated":
        logits = -logits
    if loss_type == "ipo":
        if mistake == "ipo-beta-over-2":
            losses = (logits - beta / 2) ** 2
        elif mistake == "ipo-beta-inside":
            losses = (beta * logits - 0.5) ** 2
        else:
            losses = (logits - 1 / (2 * beta)) ** 2
    elif mistake == "beta-outside":
        losses = -(1 - eps) * beta * F.logsigmoid(logits) - eps * beta * F.logsigmoid(-logits)
    elif mistake == "log-of-sigmoid":
        losses = -(1 - eps) * torch.log(torch.sigmoid(beta * logits))
        if eps:  # 0 * log(0) would be NaN: a learner writes the second term only with eps
            losses = losses - eps * torch.log(torch.sigmoid(-beta * logits))
    elif mistake == "smoothing-plus":
        losses = -(1 - eps) * F.logsigmoid(beta * logits) + eps * F.logsigmoid(-beta * logits)
    elif mistake == "smoothing-same-side":
        losses = -(1 - eps) * F.logsigmoid(beta * logits) - eps * F.logsigmoid(beta * logits)
    else:
        losses = -(1 - eps) * F.logsigmoid(beta * logits) - eps * F.logsigmoid(-beta * logits)
    chosen_rewards = beta * (pc - rc).detach()
    rejected_rewards = beta * (pr - rr).detach()
    return losses, chosen_rewards, rejected_rewards
