"""Kata 29_dpo (DPO loss).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES), its wording of a shared one
(WORDINGS) and its quiz (QUESTIONS). Imports nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

import math

from graders.core.kata import Kata, Mistake
from graders.core.quizzes import INTEGER, NUMBER, Question

KATA = Kata(
    id="29",
    name="29_dpo",
    file="dpo.py",
    title="DPO loss",
    track="training",
    difficulty="medium",
    target_minutes=20,
    prerequisites=("26",),
    mistakes=(
        "labels-not-shifted",
        "prompt-tokens-counted",
        "padding-counted",
        "mean-not-sum",
        "reference-sign-flipped",
        "chosen-rejected-swapped",
        "beta-outside-logsigmoid",
        "log-sigmoid-unstable",
        "rewards-not-detached",
        "reference-gets-gradient",
        "ipo-beta-misplaced",
        "smoothing-sign-wrong",
    ),
    forbidden=(),
    hints=(
        "Two functions. sequence_logprobs scores each response token with the logits one "
        "position before it and sums (no mean) over loss_mask only. dpo_loss compares how much "
        "more the policy prefers the chosen response than the reference does, in nats, and "
        "pushes that margin up through a stable log-sigmoid; the reference is a constant.",
        "sequence_logprobs: log_softmax(logits[:, :-1]) in float32 at least, gather "
        "input_ids[:, 1:], keep loss_mask[:, 1:], sum over positions. dpo_loss: logits = "
        "(πc − πr) − (refc − refr); sigmoid: −(1 − ε)·logsigmoid(β·logits) − ε·logsigmoid(−β·"
        "logits) with F.logsigmoid (never log(sigmoid)); ipo: (logits − 1/(2β))²; rewards "
        "β·(π − ref), detached; the reference's log-probs detached; anything else raises "
        "ValueError.",
        "per_token = log_probs[:, :-1].gather(-1, input_ids[:, 1:, None]).squeeze(-1)\n"
        "logps = (per_token * loss_mask[:, 1:]).sum(-1)   # position t - 1 predicts token t\n"
        "losses = -(1 - eps) * F.logsigmoid(beta * logits) - eps * F.logsigmoid(-beta * logits)",
    ),
)

# kata 29 sums log-probs (no division): the shared sentence speaks of a mean's count.
WORDINGS = (
    Mistake("padding-counted",
            "Padding positions were counted: their tokens' log-probs were added to the sum (the "
            "mask ignored, or built from the prompt length alone), so a row's value depends on "
            "how much padding the batch gave it.",
            "Keep only loss_mask[:, 1:] (the response tokens): torch.where(mask, per_token, 0)"
            ".sum(-1)"),
)

# The mistakes only this kata's grader names (shared ones: graders.core.catalogue).
MISTAKES = (
    Mistake("prompt-tokens-counted",
            "The prompt's tokens were counted: the sum ran over the prompt and the response "
            "(as an attention mask covers them), not the response alone, so each value also "
            "scores the prompt, which the chosen and the rejected response share.",
            "Sum over loss_mask[:, 1:] only: True on the response's tokens, False on the prompt "
            "and the padding."),
    Mistake("mean-not-sum",
            "The log-probs were averaged over the response tokens (SimPO's length-normalised "
            "score) instead of summed: DPO's log π(y|x) is the sum over y's tokens.",
            "Return the masked sum; no division by the number of response tokens."),
    Mistake("reference-sign-flipped",
            "The reference's log-ratio was added instead of subtracted: logits = (πc − πr) + "
            "(refc − refr).",
            "logits = (πc − πr) − (refc − refr): the margin the policy gained over the "
            "reference."),
    Mistake("chosen-rejected-swapped",
            "Chosen and rejected were swapped: the loss pushes the margin of the rejected "
            "response up (logits = (πr − πc) − (refr − refc), or the arguments exchanged).",
            "The chosen response comes first in both log-ratios: πc − πr and refc − refr."),
    Mistake("beta-outside-logsigmoid",
            "β multiplies the log-sigmoid instead of its argument: −β·logsigmoid(logits) is "
            "another loss whose minimum does not depend on β.",
            "−logsigmoid(β · logits): β scales the margin inside, as the implicit reward "
            "β·log(π/ref) says."),
    Mistake("log-sigmoid-unstable",
            "log(sigmoid(x)) (or log(1 + exp(−x))) was computed as written: sigmoid(−1000) is 0 "
            "in float32 and float64, so the loss is inf and its gradient NaN at large margins.",
            "Use F.logsigmoid(x) (or −F.softplus(−x)), which never forms sigmoid(x) itself."),
    Mistake("rewards-not-detached",
            "The rewards are still attached to the policy's graph: they are metrics, and a "
            "caller that logs or sums them keeps the graph alive (or back-propagates into it).",
            "chosen_rewards = beta * (policy_chosen_logps - ref_chosen_logps).detach()"),
    Mistake("reference-gets-gradient",
            "The reference's log-probs received a gradient: the loss would train the frozen "
            "reference model too, the opposite of what the reference is for.",
            "Detach them first: ref_chosen_logps = ref_chosen_logps.detach() (TRL computes "
            "them under torch.no_grad())."),
    Mistake("ipo-beta-misplaced",
            "The IPO target is wrong: 1/2*beta is β/2, not 1/(2β), or β multiplies the margin "
            "inside the square ((β·logits − 1/2)² is β² times IPO's loss).",
            "losses = (logits - 1 / (2 * beta)) ** 2"),
    Mistake("smoothing-sign-wrong",
            "The label-smoothing term is wrong: added instead of subtracted, or taken on "
            "logsigmoid(+β·logits), which is plain DPO again; conservative DPO believes the "
            "label with probability 1 − ε and the flipped label with ε.",
            "losses = -(1 - eps) * F.logsigmoid(beta * logits) "
            "- eps * F.logsigmoid(-beta * logits)"),
)


def softplus(x: float) -> float:
    """log(1 + e^x), the DPO loss of a pair with beta * logits = -x."""
    return math.log1p(math.exp(x))


QUESTIONS = (
    Question("At initialisation the policy is the reference. What is the DPO loss (sigmoid, "
             "label_smoothing = 0) of every pair, whatever β? (4 decimals)",
             round(math.log(2), 4), NUMBER,
             "logits = 0, so the loss is −logsigmoid(0) = log 2 = 0.6931.", rel_tolerance=1e-3),
    Question("Still at initialisation, with β = 0.1: what is the gradient of one pair's loss "
             "w.r.t. policy_chosen_logps? (2 decimals)",
             -0.1 / 2, NUMBER,
             "d/dπc [−logsigmoid(β·logits)] = −β·sigmoid(−β·logits) = −β/2 = −0.05; "
             "policy_rejected_logps gets +0.05.", rel_tolerance=1e-3),
    Question("β = 0.1: the policy prefers the chosen response by 20 nats more than the reference "
             "does (logits = 20). What is the pair's loss? (4 decimals)",
             round(softplus(-2.0), 4), NUMBER,
             "−logsigmoid(0.1 · 20) = log(1 + e^−2) = 0.1269; with β = 1 it would be "
             "log(1 + e^−20) ≈ 2e-9: a large β stops pushing sooner.", rel_tolerance=1e-3),
    Question("Conservative DPO with ε = 0.1 and β = 0.1: at what logits (margin, in nats) is a "
             "pair's loss smallest? (2 decimals)",
             round(math.log(9) / 0.1, 2), NUMBER,
             "d/dx = β·(sigmoid(βx) − (1 − ε)) = 0 at sigmoid(βx) = 0.9, x = log(9)/0.1 = "
             "21.97: past it the ε term pulls back, where plain DPO pushes on for ever.",
             rel_tolerance=1e-3),
    Question("IPO with β = 0.1: at what margin (logits) is the loss 0?",
             5, INTEGER,
             "(logits − 1/(2β))² = 0 at logits = 1/(2 · 0.1) = 5: IPO aims at a fixed margin "
             "instead of an ever larger one."),
)
