"""Kata 30's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

CENTRED = "    centred = grouped - grouped.mean(dim=1, keepdim=True)\n"
STD = "        centred = centred / (grouped.std(dim=1, keepdim=True) + eps)\n"
RATIO = "    ratio = torch.exp(logprobs - old_logprobs.detach())          # the old policy is a constant\n"
CLAMP = "    clipped = torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps)\n"
SURROGATE = "    surrogate = torch.min(ratio * adv, clipped * adv)\n"
KL = "    log_ref_ratio = ref_logprobs - logprobs\n"
PER_TOKEN = "    per_token = -(surrogate - beta * kl)\n"
SEQUENCE = "        loss = ((per_token * mask).sum(dim=1) / mask.sum(dim=1)).mean()\n"
TOKEN = "        loss = (per_token * mask).sum() / mask.sum()\n"

MUTANTS = [
    Mutant("std-over-batch", why="divides by the std of the whole batch, not of each group.",
           edits=[(STD, STD.replace("grouped.std(dim=1, keepdim=True)", "rewards.std()"))]),
    Mutant("std-over-batch", variant="mean_too",
           why="centres and scales by the whole batch's mean and std (one group of B·G).",
           edits=[(CENTRED, "    centred = rewards.view(-1, group_size) - rewards.mean()\n"),
                  (STD, STD.replace("grouped.std(dim=1, keepdim=True)", "rewards.std()"))]),
    Mutant("mean-not-subtracted", why="divides the raw rewards by the group's std.",
           edits=[(CENTRED, "    centred = grouped\n")]),
    Mutant("std-biased", why="takes the population std (divides by G, as numpy's std does).",
           edits=[(STD, STD.replace("keepdim=True)", "keepdim=True, unbiased=False)"))]),
    Mutant("nan-on-equal-rewards", why="divides by the std alone: 0 / 0 on equal rewards.",
           edits=[(STD, STD.replace(" + eps)", ")"))]),
    Mutant("ratio-not-exponentiated", why="uses the log-ratio as the ratio.",
           edits=[(RATIO, "    ratio = logprobs - old_logprobs.detach()\n")]),
    Mutant("clip-bound-reversed", why="takes the max of the two surrogates.",
           edits=[(SURROGATE, SURROGATE.replace("torch.min", "torch.max"))]),
    Mutant("clip-one-sided", why="clamps the ratio from above only.",
           edits=[(CLAMP, "    clipped = torch.clamp(ratio, max=1 + clip_eps)\n")]),
    Mutant("clip-one-sided", variant="lower",
           why="clamps the ratio from below only.",
           edits=[(CLAMP, "    clipped = torch.clamp(ratio, min=1 - clip_eps)\n")]),
    Mutant("old-logprobs-get-gradient", why="forgets to detach the old log-probs.",
           edits=[(RATIO, "    ratio = torch.exp(logprobs - old_logprobs)\n")]),
    Mutant("kl-wrong-direction", why="writes k3 with log pi - log pi_ref.",
           edits=[(KL, "    log_ref_ratio = logprobs - ref_logprobs\n")]),
    Mutant("kl-sign-wrong", why="adds the KL penalty to the objective instead of subtracting it.",
           edits=[(PER_TOKEN, "    per_token = -(surrogate + beta * kl)\n")]),
    Mutant("padding-counted", why="averages each completion over all n positions.",
           edits=[(SEQUENCE, "        loss = per_token.mean(dim=1).mean()\n")]),
    Mutant("padding-counted", variant="denominator",
           why="masks the sum but divides by the padded length n.",
           edits=[(SEQUENCE, "        loss = ((per_token * mask).sum(dim=1) / mask.size(1)).mean()\n")]),
    Mutant("aggregation-swapped", why="computes the token mean for 'sequence'.",
           edits=[(SEQUENCE, TOKEN)]),
]
