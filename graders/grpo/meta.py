"""Kata 30_grpo (GRPO loss).

Beside the grader (checks.py) and the twin (twin.py), what the learner does not read: its
registry entry with the hint ladder (KATA), the mistakes only it names (MISTAKES) and its
quiz (QUESTIONS). Imports nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

from graders.core.kata import Kata, Mistake
from graders.core.quizzes import NUMBER, Question

KATA = Kata(
    id="30",
    name="30_grpo",
    file="grpo.py",
    title="GRPO loss",
    track="training",
    difficulty="hard",
    target_minutes=25,
    prerequisites=("29",),
    mistakes=(
        "std-over-batch",
        "mean-not-subtracted",
        "std-biased",
        "nan-on-equal-rewards",
        "ratio-not-exponentiated",
        "clip-bound-reversed",
        "clip-one-sided",
        "old-logprobs-get-gradient",
        "kl-wrong-direction",
        "kl-sign-wrong",
        "padding-counted",
        "aggregation-swapped",
    ),
    forbidden=(),
    hints=(
        "A completion's advantage is its reward measured against its own group: the G "
        "completions of the same prompt, never the whole batch. The loss is PPO's clipped "
        "surrogate per token plus a penalty toward the reference, averaged over response tokens "
        "only. Ask which tensor is a constant, which way the clip points for a negative "
        "advantage, and what a group of equal rewards gives.",
        "group_advantages: view the rewards as (B, G), subtract each row's mean, divide by "
        "its torch.std (unbiased) + eps, flatten back. grpo_loss, every tensor (B·G, n): ratio "
        "= exp(logprobs - old_logprobs), old detached; surrogate = the smaller of ratio · A and "
        "clamp(ratio, 1 - eps, 1 + eps) · A, with A broadcast as (B·G, 1); k3 = exp(ref - lp) - "
        "(ref - lp) - 1; per token -(surrogate - beta · k3); then a masked mean per row and the "
        "mean of rows ('sequence'), or one masked mean over the batch ('token').",
        "ratio = torch.exp(logprobs - old_logprobs.detach())\n"
        "surrogate = torch.min(ratio * A[:, None], ratio.clamp(1 - clip_eps, 1 + clip_eps) * A[:, None])\n"
        "loss = ((per_token * mask).sum(1) / mask.sum(1)).mean()   # 'sequence'",
    ),
)


# The mistakes only this kata's grader names (shared ones: graders.core.catalogue, never
# declared again here).
MISTAKES: tuple[Mistake, ...] = (
    Mistake("std-over-batch",
            "The rewards were normalised over the whole batch (its std, or its mean and std) "
            "instead of within each prompt's group: a group of easy prompts then pulls down "
            "the advantages of every other group.",
            "g = rewards.view(-1, group_size): mean and std along dim=1 with keepdim=True, one "
            "pair per prompt."),
    Mistake("mean-not-subtracted",
            "The rewards were divided by the group's std without subtracting the group's mean: "
            "with rewards >= 0 every advantage is >= 0, so every completion is reinforced.",
            "(r - mean_group) / (std_group + eps): the mean is the baseline that replaces PPO's "
            "value network."),
    Mistake("std-biased",
            "The std is the population one (divides by G, unbiased=False, numpy's default): a "
            "convention mismatch with TRL and CS336, which use torch.std's unbiased estimate "
            "(divides by G - 1); with G = 4 every advantage is sqrt(4/3), 15.5%, too large.",
            "grouped.std(dim=1, keepdim=True), torch's default unbiased=True"),
    Mistake("nan-on-equal-rewards",
            "A group whose rewards are all equal has std 0, and 0 / 0 is NaN: the eps was left "
            "out of the denominator, and one such group turns the whole loss into NaN.",
            "Divide by std + eps: a group of equal rewards then gives 0 / eps = 0 (no signal, "
            "and no NaN)."),
    Mistake("ratio-not-exponentiated",
            "The log-ratio logprobs - old_logprobs was used as the ratio: it is 0, not 1, when "
            "the policies agree, and the clip bounds 1 ± eps no longer mean anything.",
            "ratio = torch.exp(logprobs - old_logprobs): a ratio of probabilities computed in log "
            "space."),
    Mistake("clip-bound-reversed",
            "The two surrogates were combined with max instead of min: the objective is no "
            "longer a pessimistic bound, and a large ratio keeps being pushed further.",
            "surrogate = torch.min(ratio * A, clipped * A), then loss = -surrogate"),
    Mistake("clip-one-sided",
            "The ratio was clamped on one side only (clamp(max=1 + eps) or clamp(min=1 - eps)): "
            "tokens with a negative advantage and a ratio below 1 - eps (or a positive one "
            "above 1 + eps) keep their gradient.",
            "torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps): both bounds, and the min picks the "
            "side that matters for A's sign."),
    Mistake("old-logprobs-get-gradient",
            "The old log-probs received a gradient: they come from the policy that sampled the "
            "batch and are constants of this step; differentiating them would update through "
            "the rollout.",
            "ratio = torch.exp(logprobs - old_logprobs.detach())"),
    Mistake("kl-wrong-direction",
            "The k3 term was written with `log pi - log pi_ref` in the exponent: that is k3 for "
            "`KL(pi_ref || pi)`, unbiased only on samples of pi_ref; on the policy's own "
            "samples it estimates neither direction (its mean is a chi-square term minus "
            "`KL(pi || pi_ref)`), and its gradient differs.",
            "d = ref_logprobs - logprobs; kl = torch.exp(d) - d - 1 (Schulman's k3, "
            "DeepSeekMath eq. 4)."),
    Mistake("kl-sign-wrong",
            "The KL penalty was added to the objective (loss -(surrogate + beta kl)) instead of "
            "subtracted: minimising the loss then drives the policy away from the reference.",
            "per-token loss = -(surrogate - beta * kl), i.e. -surrogate + beta * kl"),
    Mistake("aggregation-swapped",
            "The two aggregations were exchanged: 'sequence' is the mean of each completion's "
            "masked mean (every completion weighs the same), 'token' one masked mean over all "
            "tokens of the batch (every token weighs the same, DAPO).",
            "'sequence': ((x * m).sum(1) / m.sum(1)).mean(); 'token': (x * m).sum() / m.sum()"),
)


QUESTIONS = (
    Question("A group of G = 4 rewards [1, 0, 0, 0] (one completion right): what is the right "
             "one's advantage with torch.std's unbiased std (ignore eps)?",
             1.5, NUMBER,
             "mean 0.25, unbiased std sqrt((0.5625 + 3 * 0.0625) / 3) = 0.5: (1 - 0.25) / 0.5 "
             "= 1.5 (1.7321 with the population std).", rel_tolerance=1e-3),
    Question("A token with ratio 1.5 and advantage -1, clip_eps = 0.2: what is its surrogate "
             "min(ratio * A, clip(ratio) * A)?",
             -1.5, NUMBER,
             "min(-1.5, -1.2) = -1.5: for A < 0 only a ratio below 0.8 is clipped; above 1.2 the "
             "full ratio stays, and so does its gradient.", rel_tolerance=1e-6),
    Question("Two completions, one of 1 token with loss 1.0 and one of 3 tokens with loss 0.0: "
             "what is the loss with aggregation='token' (with 'sequence' it is 0.5)?",
             0.25, NUMBER,
             "(1.0 + 3 * 0.0) / 4 = 0.25: the token mean weighs each token the same, the "
             "sequence mean each completion.", rel_tolerance=1e-6),
    Question("k3 at ref - logprobs = 1 (pi_ref = e * pi on a token): exp(1) - 1 - 1 = ?",
             0.7183, NUMBER,
             "e - 2 = 0.7183; k1 = log pi - log pi_ref would give -1, a negative estimate of a "
             "KL.", rel_tolerance=1e-3),
)
