"""Kata 16_sampling (Sampling: temperature, top-k and top-p).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES) and its quiz (QUESTIONS). Imports
nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

import math

from graders.core.kata import Kata, Mistake
from graders.core.quizzes import CHOICE, INTEGER, NUMBER, Question

KATA = Kata(
    id="16",
    name="16_sampling",
    file="sampling.py",
    title="Sampling: temperature, top-k and top-p",
    track="llm",
    difficulty="medium",
    target_minutes=25,
    prerequisites=("01",),
    mistakes=(
        "temperature-after-softmax",
        "temperature-multiplied",
        "top-k-off-by-one",
        "top-p-drops-crossing-token",
        "top-p-unsorted",
        "top-p-on-logits",
        "filtered-set-to-zero",
        "filter-order",
        "sampling-ignores-generator",
        "greedy-temperature-zero-missing",
        "input-modified-in-place",
    ),
    forbidden=(),
    hints=(
        "Write the three filters first, each on its own: what does each keep, and what "
        "does a removed token become so that the softmax gives it probability exactly 0? "
        "Then sample is a pipeline: where does the temperature act, and in which order "
        "do the filters run?",
        "Temperature divides the logits, before any softmax (dividing probabilities "
        "is undone by renormalising), and 0 is the limit: the argmax, no draw. Top-k "
        "keeps the logits >= the row's k-th largest (torch.topk). Top-p sorts the "
        "probabilities in decreasing order and keeps a token while the mass of the "
        "tokens *before* it is still < p, so the token that crosses p stays; the "
        "decision made in sorted order must go back to vocabulary order. Removed "
        "entries become -inf with masked_fill (never in place), and every random "
        "number comes from the generator.",
        "# remove_sorted (..., V): your decision, made in the order of probs.sort(dim=-1, descending=True)\n"
        "# order (..., V): that sort's indices, order[..., j] = the vocabulary id of the j-th most probable\n"
        "remove = remove_sorted.scatter(-1, order, remove_sorted)   # (..., V): remove[..., order[..., j]] = remove_sorted[..., j]",
    ),
)

MISTAKES = (
    Mistake("temperature-after-softmax",
            "The temperature divided the probabilities after the softmax, not the logits: "
            "renormalising (or torch.multinomial) undoes the division, so T changes nothing.",
            "Divide the logits before the softmax: softmax(logits / T). T < 1 sharpens the "
            "distribution, T > 1 flattens it."),
    Mistake("temperature-multiplied",
            "The logits were multiplied by the temperature instead of divided: T = 2 "
            "sharpened the distribution where it should flatten it.",
            "logits / temperature (or logits * (1 / temperature))."),
    Mistake("top-k-off-by-one",
            "top-k kept k + 1 or k - 1 tokens: the threshold is the k-th largest logit, "
            "itself kept.",
            "kth = torch.topk(logits, k, dim=-1).values[..., -1:] (shape (..., 1)); keep "
            "logits >= kth."),
    Mistake("top-p-drops-crossing-token",
            "top-p kept only the tokens whose cumulative probability, themselves included, "
            "stays below p: the token that carries the mass across p was dropped (and a "
            "single token above p left nothing at all).",
            "Compare the mass *before* each token with p: remove where cumsum - probs >= p, "
            "so the most probable token is always kept."),
    Mistake("top-p-unsorted",
            "top-p summed the probabilities in vocabulary order: the nucleus is the most "
            "probable tokens, so sort by decreasing probability first.",
            "probs.sort(dim=-1, descending=True), decide in sorted order, then scatter the "
            "decision back to vocabulary order with the sort's indices."),
    Mistake("top-p-on-logits",
            "top-p summed the logits (or unnormalised exp(logits)) instead of the "
            "probabilities: p is a probability mass, so the cumulative sum must run over "
            "softmax(logits).",
            "probs = torch.softmax(logits, dim=-1) before sorting and summing."),
    Mistake("filtered-set-to-zero",
            "Removed tokens were set to 0 instead of -inf: a logit of 0 still has "
            "probability exp(0) / Z > 0, so removed tokens are still drawn.",
            "logits.masked_fill(remove, float('-inf')): exp(-inf) = 0."),
    Mistake("filter-order",
            "The steps ran in the wrong order: the pipeline is temperature, then top-k, "
            "then top-p on the tempered, top-k-filtered logits (Hugging Face's order). "
            "Top-p before top-k, or the filters before the temperature, keep different "
            "tokens.",
            "logits = apply_temperature(logits, T); then top_k_filter; then top_p_filter on "
            "that result; then softmax and one draw."),
    Mistake("greedy-temperature-zero-missing",
            "temperature 0 was divided by instead of meaning greedy decoding: logits / 0 "
            "gives inf and NaN probabilities, or an error.",
            "if temperature == 0: return logits.argmax(dim=-1), before any division."),
)


# --- the quiz, and the small functions its numbers use (no torch: plain Python) ---

def softmax(logits: list[float]) -> list[float]:
    """The softmax of a list of numbers, in plain Python (the quiz imports no torch)."""
    top = max(logits)
    weights = [math.exp(x - top) for x in logits]
    return [w / sum(weights) for w in weights]


def top_p_count(probs: list[float], p: float) -> int:
    """How many tokens top-p keeps: those whose more probable tokens carry < p in all."""
    ranked = sorted(probs, reverse=True)
    return sum(sum(ranked[:i]) < p for i in range(len(ranked)))


def min_p_count_from_logits(logits: list[float], min_p: float, temperature: float = 1.0) -> int:
    """How many tokens min-p keeps after the temperature: those whose probability is at
    least min_p times the top one's, i.e. whose logit / T is within log(1 / min_p) of the
    top one's (no softmax needed)."""
    top = max(logits)
    return sum((x - top) / temperature >= math.log(min_p) for x in logits)


SAMPLING_EXAMPLE = [2.0, 1.0, 0.0, -1.0]
# min-p's case: 4 plausible tokens and a long tail of implausible ones (the lesson draws
# 50,000 logits from N(-5, 1); the largest of them stays below this bound).
MIN_P_HEAD = [5.0, 4.5, 4.0, 3.0]
MIN_P_TAIL_MAX = -0.5

QUESTIONS = (
    Question(
        "The logits are [2, 1, 0, -1] (probabilities 0.644, 0.237, 0.087, 0.032). How many "
        "tokens does top-p with p = 0.7 keep?",
        top_p_count(softmax(SAMPLING_EXAMPLE), 0.7), INTEGER,
        "Token 0 is always kept. Token 1 is kept because the tokens before it carry 0.644 < "
        "0.7; token 2 is not, since 0.644 + 0.237 = 0.881 >= 0.7. So 2 tokens: token 1 is "
        "the one that carries the total across p. Dropping it (keeping only tokens whose "
        "running total *including* themselves stays below p) would keep token 0 alone, and "
        "at p = 0.6 nothing at all."),
    Question(
        "With the same logits and temperature 0.5, what is the probability of token 0 "
        "(3 decimals)?",
        softmax([x / 0.5 for x in SAMPLING_EXAMPLE])[0], NUMBER,
        "softmax([4, 2, 0, -2])[0] = 1 / (1 + e⁻² + e⁻⁴ + e⁻⁶) ≈ 0.865, up from 0.644 at "
        "T = 1. Dividing by T < 1 stretches the gaps between logits, so the leader takes "
        "more of the mass; T > 1 shrinks them towards the uniform distribution.",
        rel_tolerance=0.005),
    Question(
        "Why does sample() treat temperature 0 as greedy decoding (the argmax)?",
        "B", CHOICE,
        "As T → 0⁺, softmax(logits / T) puts all its mass on the largest logit: every "
        "other token's weight exp((l_i − l_max) / T) goes to 0. T = 0 itself would divide "
        "by zero (inf − inf = NaN in the softmax), so the limit is implemented directly as "
        "the argmax, with no draw and no randomness.",
        choices=("it is a convention with no mathematical meaning",
                 "softmax(logits / T) tends to a one-hot on the argmax as T → 0",
                 "logits / 0 is 0, so every token ties and the first one wins",
                 "the softmax of logits / 0 is uniform")),
    Question(
        "A flat distribution: 1000 tokens, each with probability 0.001. How many tokens "
        "does top-p with p = 0.9 keep (top-k with k = 50 keeps 50)?",
        900, INTEGER,
        "Token i (in any order, they are equal) is kept while the tokens before it carry "
        "i / 1000 < 0.9: tokens 0 to 899, 900 in all. On a flat distribution top-p keeps "
        "many tokens, because the model really is unsure; top-k cuts at 50 whatever the "
        "shape."),
    Question(
        "A peaked distribution: the top token has probability 0.95, the other 999 share "
        "0.05. How many tokens do top-k (k = 50) and top-p (p = 0.9) keep?",
        "A", CHOICE,
        "Top-p keeps the top token alone (0.95 already reaches 0.9), while top-k keeps 50, "
        "49 of which share only 0.05: on a confident step top-k still samples the tail. "
        "This is why top-p (nucleus sampling, Holtzman et al., 2020) adapts to the model's "
        "confidence and top-k does not; servers often use both, top-k as a cheap cap.",
        choices=("top-k 50, top-p 1", "top-k 50, top-p 900", "top-k 1, top-p 1",
                 "top-k 50, top-p 50")),
    Question(
        "min-p sampling keeps the tokens whose probability is at least min_p times the top "
        "token's. A step has 4 plausible tokens (logits 5, 4.5, 4, 3) and 50,000 "
        "implausible ones (logits around −5, none above −0.5). At temperature 1.5, after "
        "the temperature, how many tokens does min-p with min_p = 0.1 keep?",
        min_p_count_from_logits(MIN_P_HEAD + [MIN_P_TAIL_MAX], 0.1, 1.5), INTEGER,
        "A token stays iff p_i ≥ 0.1 · p_max, i.e. (l_i − l_max) / T ≥ ln 0.1: its logit "
        "within 1.5 · 2.303 ≈ 3.45 of the top one, above 1.55. The 4 plausible tokens pass, "
        "no tail token does: 4. Top-p (0.9) at the same temperature keeps tens of thousands "
        "(the lesson counts them): each tail token is tiny, but together they hold a large "
        "share of the mass, and a mass cut must take them. That is min-p's case for high "
        "temperatures: its cut is relative to the leader, not a mass. On a short row it is "
        "not tighter than top-p, and llama.cpp, which runs min-p before the temperature, "
        "makes its cut independent of T."),
)
