"""Kata 21_speculative_decoding (one step of speculative sampling).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES) and its quiz (QUESTIONS). Imports
nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

from graders.core.kata import Kata, Mistake
from graders.core.quizzes import CHOICE, INTEGER, NUMBER, Question

KATA = Kata(
    id="21",
    name="21_speculative_decoding",
    file="speculative.py",
    title="one step of speculative sampling: a draft proposes, the target verifies, the output distributed exactly as the target's",
    track="inference",
    difficulty="medium",
    target_minutes=25,
    prerequisites=("16",),
    mistakes=(
        "ratio-inverted",
        "ratio-not-clipped",
        "residual-from-target",
        "residual-from-draft",
        "residual-not-normalised",
        "residual-not-clamped",
        "bonus-token-missing",
        "bonus-from-wrong-position",
        "draft-not-sampled",
        "position-off-by-one",
        "no-stop-at-rejection",
        "shared-uniform",
        "target-called-per-token",
        "greedy-not-target-greedy",
        "sampling-ignores-generator",
        "input-modified-in-place",
    ),
    forbidden=(),
    hints=(
        "Three phases. Draft: gamma calls of draft_fn, each on the sequence so far, sampling "
        "one token from its last row and keeping that row q_i. Verify: one call of target_fn "
        "on prefix + all draft tokens. Accept or reject, token by token: which rows of the "
        "target's output judge which draft token, what is emitted at the first rejection, "
        "and what when nothing is rejected?",
        "Keep d_i with probability min(1, p_i(d_i) / q_i(d_i)): a fresh u ~ U[0, 1) per "
        "test and u < p/q (no min needed). At the first rejection stop and draw from the "
        "residual max(0, p_i - q_i), normalised; if all gamma are kept, draw a bonus token "
        "from p_gamma, the row after the last draft token. Every random number from the "
        "generator; greedy mode replaces each draw by an argmax and each test by equality.",
        "P = target_fn(sequence)   # (n + gamma, V): one call on prefix + every draft token\n"
        "p = P[n - 1 + i]          # the row that judges d_i; P[n - 1 + gamma] gives the bonus",
    ),
)

MISTAKES = (
    Mistake("ratio-inverted",
            "A draft token was kept with probability min(1, q/p) instead of min(1, p/q): the "
            "papers name the models differently (Chen et al. call the target q and the draft "
            "p, Leviathan et al. the reverse), and the ratio is target over draft.",
            "keep = u < p[d] / q[d], with p the target's row and q the draft's for the "
            "position of d."),
    Mistake("ratio-not-clipped",
            "torch.bernoulli got the ratio p/q itself, which is above 1 whenever the target "
            "likes a token more than the draft does: it raises.",
            "torch.bernoulli((p[d] / q[d]).clamp(max=1)), or a uniform number: u < p[d] / q[d]."),
    Mistake("residual-from-target",
            "At a rejection the token was drawn from the target's row p_i instead of the "
            "residual max(0, p_i - q_i): tokens the draft already proposes too often are "
            "drawn again, and the output is no longer distributed as the target's.",
            "residual = (p - q).clamp(min=0); draw from residual / residual.sum()."),
    Mistake("residual-from-draft",
            "At a rejection the token was drawn from the draft's row q_i again instead of the "
            "residual max(0, p_i - q_i): tokens the draft proposes more often than the target "
            "wants (q > p, where rejections come from) come back, and tokens the target likes "
            "more than the draft does stay too rare.",
            "residual = (p - q).clamp(min=0); draw from residual / residual.sum(): the mass "
            "the target has and the draft lacks."),
    Mistake("residual-not-normalised",
            "The clamped residual was used as probabilities without dividing by its sum: "
            "an inverse-CDF draw then sends the missing mass to the last token, past the "
            "vocabulary, or to token 0 (argmax of an all-False cdf > u).",
            "residual / residual.sum() before the draw (torch.multinomial normalises for "
            "you; an inverse CDF does not)."),
    Mistake("residual-not-clamped",
            "The residual p - q kept its negative entries: torch.multinomial refuses "
            "negative probabilities (and p - q sums to 0, so dividing by its sum breaks "
            "it too).",
            "(p - q).clamp(min=0), then normalise."),
    Mistake("bonus-token-missing",
            "When all gamma draft tokens were accepted nothing was added: the target's row "
            "after the last draft token is already computed, so a step emits gamma + 1 "
            "tokens then.",
            "After the loop: bonus ~ P[n - 1 + gamma]; return the gamma draft tokens and the "
            "bonus."),
    Mistake("bonus-from-wrong-position",
            "The bonus token was drawn from another row than p_gamma, the target's row after "
            "the last draft token: p_(gamma-1), the row that judged that token, p_0, "
            "or the draft's last row q_(gamma-1).",
            "P has n + gamma rows; the bonus comes from the last one, P[n - 1 + gamma]."),
    Mistake("draft-not-sampled",
            "The draft tokens were the draft's argmax while the test used p/q as if they "
            "were sampled from q: the rule is exact only when d_i ~ q_i.",
            "d = torch.multinomial(q, 1, generator=generator) (argmax belongs to greedy mode "
            "alone)."),
    Mistake("position-off-by-one",
            "A draft token was judged against another position's row: P[n + i] instead of "
            "P[n - 1 + i], or the draft's row read after appending the token.",
            "Row j of a model's output is the distribution of the token at position j + 1, so "
            "d_i, at position n + i, is judged by P[n - 1 + i] and was drawn from the last row "
            "of draft_fn(prefix + d_0 ... d_(i-1))."),
    Mistake("no-stop-at-rejection",
            "Verification went on past the first rejection: a token after a rejected one was "
            "drafted from a context the output no longer has.",
            "return at the first rejection: the accepted tokens, then the residual's token; "
            "num_accepted is the index of the first rejection, not a count of passed tests."),
    Mistake("shared-uniform",
            "One uniform number served several random decisions (several acceptance tests, "
            "or a test and the resample after it): they are no longer independent.",
            "A fresh torch.rand((), generator=generator) for each test, and a separate draw "
            "for the resample."),
    Mistake("target-called-per-token",
            "The target was called once per draft token (or again for the bonus token): one "
            "call on prefix + all gamma draft tokens gives every row needed, which is the "
            "whole point of speculative decoding.",
            "P = target_fn(torch.cat([prefix, drafts])) once, after the draft loop; read "
            "P[n - 1 + i]."),
    Mistake("greedy-not-target-greedy",
            "Greedy mode kept the draft's token at a mismatch, or emitted no correction or "
            "bonus token: its output must be the target's own greedy decoding.",
            "Accept while d_i == argmax p_i; at the first mismatch emit argmax p_i, else the "
            "bonus argmax p_gamma."),
)


# --- the quiz, and the formulas its numbers use (no torch: plain Python) ---

def tokens_per_call(alpha: float, gamma: int) -> float:
    """Expected tokens one step emits, acceptance i.i.d. with rate alpha:
    (1 - alpha^(gamma+1)) / (1 - alpha) (Leviathan et al. 2023)."""
    return (1 - alpha ** (gamma + 1)) / (1 - alpha)


def speedup(alpha: float, gamma: int, cost: float) -> float:
    """Wall-clock gain over the target alone, a draft call costing ``cost`` target calls."""
    return tokens_per_call(alpha, gamma) / (gamma * cost + 1)


def best_gamma(alpha: float, cost: float, largest: int = 64) -> int:
    return max(range(1, largest + 1), key=lambda g: speedup(alpha, g, cost))


EXAMPLE_P = [0.5, 0.3, 0.2]
EXAMPLE_Q = [0.2, 0.6, 0.2]

QUESTIONS = (
    Question(
        "The target gives p = [0.5, 0.3, 0.2] and the draft q = [0.2, 0.6, 0.2] for one "
        "position. What is the acceptance rate alpha, the chance a drafted token is kept?",
        sum(min(a, b) for a, b in zip(EXAMPLE_P, EXAMPLE_Q)), NUMBER,
        "alpha = sum over x of q(x) min(1, p(x)/q(x)) = sum of min(p(x), q(x)) = 0.2 + 0.3 + "
        "0.2 = 0.7, which is 1 - TV(p, q). A drafted token 1 is kept with probability 0.3 / "
        "0.6 = 0.5, and a rejection always resamples token 0: the residual max(0, p - q) = "
        "[0.3, 0, 0] normalises to [1, 0, 0].",
        rel_tolerance=0.01),
    Question(
        "Acceptance i.i.d. with alpha = 0.8 and gamma = 4: how many tokens does one step "
        "emit on average, accepted tokens plus the correction or bonus (2 decimals)?",
        tokens_per_call(0.8, 4), NUMBER,
        "Token i + 1 is emitted when the first i are accepted: 1 + alpha + ... + alpha^gamma "
        "= (1 - alpha^5) / (1 - alpha) = 3.3616, of which alpha (1 - alpha^4) / (1 - alpha) "
        "= 2.36 are accepted draft tokens. As gamma grows it tends to 1 / (1 - alpha) = 5.",
        rel_tolerance=0.005),
    Question(
        "Same alpha = 0.8, and a draft call costs c = 0.05 of a target call. Which gamma "
        "gives the largest wall-clock gain (1 - alpha^(gamma+1)) / ((1 - alpha)(gamma c + "
        "1))?",
        best_gamma(0.8, 0.05), INTEGER,
        "The gain is 2.80x at gamma = 4 and peaks at gamma = 8 (3.09x); beyond, each extra "
        "draft token is accepted too rarely to pay for its draft call."),
    Question(
        "Why is the output of a step distributed exactly as the target's p, whatever the "
        "draft q?",
        "B", CHOICE,
        "A token x comes out either as an accepted draft, with probability q(x) min(1, "
        "p(x)/q(x)) = min(p(x), q(x)), or from a rejection, with probability (1 - alpha) "
        "max(0, p(x) - q(x)) / (1 - alpha). The sum is min(p, q) + max(0, p - q) = p.",
        choices=("because the target re-scores every accepted token",
                 "min(p, q) + max(0, p - q) = p: acceptance and the residual add up to p",
                 "because the draft is trained to match the target",
                 "it is only approximately p, with an error that shrinks with gamma")),
    Question(
        "Must the draft sample at the target's temperature for the output to follow the "
        "target's tempered distribution?",
        "B", CHOICE,
        "Any q is lossless: the rule corrects whatever the draft proposes. A draft far from "
        "p only lowers alpha, so fewer tokens per target call. Temperature and filters are "
        "part of p and q themselves (kata 16), applied before the step.",
        choices=("yes, otherwise the output is biased",
                 "no: any draft distribution is lossless, only the acceptance rate suffers",
                 "only in greedy mode",
                 "only when gamma > 1")),
    Question(
        "After a step that accepted a of gamma draft tokens and emitted one more, what "
        "happens to the target's and the draft's key/value caches?",
        "A", CHOICE,
        "Both are cut back to the prefix plus the a accepted tokens: the emitted last token "
        "has no keys yet and is fed in next step. When all gamma were accepted, the draft "
        "never saw d_(gamma-1) and gets two tokens next step.",
        choices=("both are cut back to the prefix plus the accepted tokens",
                 "both keep every drafted token",
                 "only the draft's cache is kept; the target's is rebuilt",
                 "nothing: the caches are recomputed from the prefix every step")),
)
