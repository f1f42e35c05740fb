"""Kata 29's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

SHIFT = ("    logps = torch.log_softmax(logits[:, :-1].to(work), dim=-1)\n"
         "    labels = input_ids[:, 1:]\n"
         "    mask = loss_mask[:, 1:]\n")
MASK = "    mask = loss_mask[:, 1:]\n"
SUM = "    return torch.where(mask, per_token, torch.zeros_like(per_token)).sum(-1)\n"
LOGITS = ("    logits = (policy_chosen_logps - policy_rejected_logps) - (ref_chosen_logps - "
          "ref_rejected_logps)\n")
SIGMOID = ("        losses = (-(1 - label_smoothing) * F.logsigmoid(beta * logits)\n"
           "                  - label_smoothing * F.logsigmoid(-beta * logits))\n")
DETACH_REF = ("    ref_chosen_logps = ref_chosen_logps.detach()\n"
              "    ref_rejected_logps = ref_rejected_logps.detach()\n")
REWARDS = ("    chosen_rewards = beta * (policy_chosen_logps - ref_chosen_logps).detach()\n"
           "    rejected_rewards = beta * (policy_rejected_logps - ref_rejected_logps).detach()\n")

MUTANTS = [
    Mutant("labels-not-shifted", why="scores the logits at t against the token at t.",
           edits=[(SHIFT, "    logps = torch.log_softmax(logits.to(work), dim=-1)\n"
                          "    labels = input_ids\n"
                          "    mask = loss_mask\n")]),
    Mutant("prompt-tokens-counted",
           why="counts every position up to the response's end: the prompt too.",
           edits=[(MASK, "    mask = loss_mask.flip(-1).cummax(-1).values.flip(-1)[:, 1:]\n")]),
    Mutant("padding-counted", why="masks by the prompt's length only: padding counted.",
           edits=[(MASK, "    mask = loss_mask.cummax(-1).values[:, 1:]\n")]),
    Mutant("padding-counted", variant="no_mask", why="ignores the mask altogether.",
           edits=[(MASK, "    mask = torch.ones_like(loss_mask[:, 1:])\n")]),
    Mutant("mean-not-sum", why="averages over the response tokens, as SimPO does.",
           edits=[(SUM, SUM.replace(".sum(-1)\n", ".sum(-1) / mask.sum(-1)\n"))]),
    Mutant("reference-sign-flipped", why="adds the reference's log-ratio.",
           edits=[(LOGITS, LOGITS.replace(") - (ref", ") + (ref"))]),
    Mutant("chosen-rejected-swapped", why="puts the rejected response first in both ratios.",
           edits=[(LOGITS, "    logits = (policy_rejected_logps - policy_chosen_logps) - "
                           "(ref_rejected_logps - ref_chosen_logps)\n")]),
    Mutant("beta-outside-logsigmoid", why="multiplies the log-sigmoid by beta.",
           edits=[(SIGMOID, SIGMOID.replace("F.logsigmoid(beta * logits)",
                                            "beta * F.logsigmoid(logits)")
                                   .replace("F.logsigmoid(-beta * logits)",
                                            "beta * F.logsigmoid(-logits)"))]),
    Mutant("log-sigmoid-unstable", why="computes log(sigmoid(x)) as written.",
           edits=[(SIGMOID, SIGMOID.replace("F.logsigmoid(beta * logits)",
                                            "torch.log(torch.sigmoid(beta * logits))")
                                   .replace("F.logsigmoid(-beta * logits)",
                                            "torch.log(torch.sigmoid(-beta * logits))"))]),
    Mutant("rewards-not-detached", why="returns the rewards with their graph.",
           edits=[(REWARDS, REWARDS.replace(").detach()", ")"))]),
    Mutant("reference-gets-gradient", why="never detaches the reference's log-probs.",
           edits=[(DETACH_REF, "")]),
    Mutant("ipo-beta-misplaced", why="writes 1 / 2 * beta, which is beta / 2.",
           edits=[("(logits - 1 / (2 * beta)) ** 2", "(logits - 1 / 2 * beta) ** 2")]),
    Mutant("smoothing-sign-wrong", why="adds the label-smoothing term instead of subtracting it.",
           edits=[(SIGMOID, SIGMOID.replace("- label_smoothing *", "+ label_smoothing *"))]),
]
