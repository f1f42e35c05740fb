"""Kata 17_beam_search (Beam search over a next-token step function).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES) and its quiz (QUESTIONS), with the
one formula its quiz and its grader share. Imports nothing heavy: `kata list` reads every
meta.
"""

from __future__ import annotations

import math

from graders.core.kata import Kata, Mistake
from graders.core.quizzes import CHOICE, INTEGER, NUMBER, Question

KATA = Kata(
    id="17",
    name="17_beam_search",
    file="beam_search.py",
    title="Beam search over a next-token step function",
    track="llm",
    difficulty="medium",
    target_minutes=30,
    prerequisites=("09",),
    mistakes=(
        "log-probs-not-summed",
        "scores-not-accumulated",
        "topk-per-beam",
        "beam-index-wrong",
        "finished-beam-not-removed",
        "length-penalty-in-pruning",
        "length-penalty-missing",
        "max-len-off-by-one",
        "eos-ignored",
        "step-per-hypothesis",
    ),
    forbidden=(),
    hints=(
        "Kata 09's greedy decoding keeps one hypothesis and takes the argmax. Keep k "
        "hypotheses instead, each with its total log-probability: what are the candidates "
        "at one step, and which k of them survive?",
        "Each step, call step_fn once on the live prefixes stacked (k, t). Add each "
        "parent's running sum to its row of log-probabilities: k x V candidates, all of "
        "the same length, so the raw sums compare fairly. Take the top beam_size - "
        "len(finished) over all of them at once (flatten), and recover each winner's "
        "parent and token from its flat index. Winners ending in eos leave the beam for "
        "the finished list; stop at beam_size finished or max_len tokens. Only the final "
        "ranking divides by n ** length_penalty.",
        "candidates = (scores[:, None] + log_probs).flatten()   # (k * V,): raw sums, one length\n"
        "parent, token = flat // V, flat % V   # flat: candidates.topk(...)'s indices, row-major (k, V)",
    ),
)

MISTAKES = (
    Mistake("log-probs-not-summed",
            "The running score multiplied log-probabilities (or added probabilities) instead of "
            "adding log-probabilities: the log-probability of a sequence is the sum of its "
            "tokens' log-probabilities.",
            "new score = parent's score + log_prob of the token; start from 0.0."),
    Mistake("scores-not-accumulated",
            "The candidates were ranked by this step's log-probability alone, forgetting the "
            "score of the prefix they extend.",
            "candidates = scores[:, None] + log_probs: each row carries its parent's running sum."),
    Mistake("topk-per-beam",
            "Each live hypothesis kept its own best continuations; the beam keeps the best "
            "candidates over all k x V of them, so one strong hypothesis may fill several slots "
            "and a weak one none.",
            "Flatten the (k, V) candidate scores and take one topk over all k * V."),
    Mistake("beam-index-wrong",
            "A flat candidate index was split into (hypothesis, token) with the wrong divisor "
            "or layout, so tokens are appended to the wrong prefixes.",
            "For row-major (k, V) candidates flattened to k * V: parent = flat // V, "
            "token = flat % V (V = log_probs.size(1))."),
    Mistake("finished-beam-not-removed",
            "A hypothesis ending in eos kept its place in the beam: it was extended further, or "
            "kept competing with its frozen score, instead of moving to the finished list.",
            "When a kept candidate ends in eos, append it to finished and keep only the others "
            "live; the next step keeps beam_size - len(finished) candidates."),
    Mistake("length-penalty-in-pruning",
            "The length penalty was applied to the running scores during the search; it "
            "serves the final ranking only (carried forward, it distorts every later sum).",
            "Keep raw cumulative log-probabilities in the beam; divide by n ** length_penalty "
            "once, when ranking the finished hypotheses."),
    Mistake("length-penalty-missing",
            "The final scores or their ranking lack the division by n ** length_penalty "
            "(n = tokens after bos, eos included).",
            "score = total / (len(tokens) - 1) ** length_penalty, and sort by that score."),
    Mistake("max-len-off-by-one",
            "The sequences stop one token too late or too early: max_len counts every token, "
            "bos included.",
            "Stop when the prefixes have max_len tokens: step while tokens.size(1) < max_len."),
    Mistake("eos-ignored",
            "eos was treated as an ordinary token: no hypothesis finished before max_len.",
            "After each step, move the kept candidates whose last token is eos_idx to the "
            "finished list."),
    Mistake("step-per-hypothesis",
            "step_fn was called once per live hypothesis; it is the expensive model call, made "
            "once per step with every live hypothesis stacked into one batch.",
            "step_fn(torch.stack(prefixes)) or keep the live prefixes as one (k, t) tensor."),
)


def beam_sequence_count(vocab: int, max_len: int) -> int:
    """How many sequences beam search can finish with: eos after 0 .. max_len - 3 other
    tokens, plus every sequence of max_len tokens (V - 1 choices before the last, V for it)."""
    others = vocab - 1
    return sum(others ** i for i in range(max_len - 2)) + others ** (max_len - 2) * vocab


QUESTIONS = (
    Question(
        "What does beam search return with `beam_size = 1`?",
        "B", CHOICE,
        "One hypothesis survives each step: the best of its V continuations, the argmax. It "
        "stops at eos or max_len, exactly as kata 09's greedy decoding does. It is not the most "
        "probable sequence: in the README's example greedy takes \"a\" (0.5 against 0.4) and "
        "ends at [bos, a, eos] (probability 0.5 · 0.35 = 0.175), while a beam of 2 keeps "
        "\"b\" and finds the finished [bos, b, eos] (0.4 · 0.85 = 0.34), twice as probable.",
        choices=("the most probable sequence", "greedy decoding's sequence",
                 "a sample from the model", "the shortest sequence that ends in eos")),
    Question(
        "V = 5 (bos and eos included) and max_len = 4. How wide must the beam be to return every "
        "sequence the search can finish with, i.e. to become exhaustive search?",
        beam_sequence_count(5, 4), INTEGER,
        "Sequences end at eos or at max_len. eos right after bos: 1. eos after one of the 4 "
        "other tokens: 4. Four tokens (max_len): 4 · 4 prefixes times any of 5 last tokens, "
        "80. In all 1 + 4 + 80 = 85. With a beam of 85 nothing is ever pruned, so beam search "
        "ranks every possible sequence; the count grows like V^max_len, which is why exact "
        "search is out of reach and the beam prunes."),
    Question(
        "With `length_penalty = 0` (raw sums of log-probabilities), which hypotheses does beam "
        "search favour?",
        "A", CHOICE,
        "Every log-probability is negative, so every extra token lowers the sum: a hypothesis "
        "that ends early keeps a higher score than a longer one of the same average quality. "
        "Dividing by n ** α (α > 0) ranks by something closer to the average log-probability "
        "per token, which removes that bias.",
        choices=("short ones: each extra token adds a negative log-probability",
                 "long ones: more tokens add more probability",
                 "none: the sum is independent of length",
                 "those containing eos more than once")),
    Question(
        "Two finished hypotheses: A has 2 tokens after bos and a total log-probability of −1.2; "
        "B has 6 and −3.0. From which `length_penalty` α on does B rank first (score = total / "
        "n ** α)?",
        math.log(3.0 / 1.2) / math.log(6 / 2), NUMBER,
        "B wins when −3.0 / 6^α > −1.2 / 2^α, i.e. (6 / 2)^α > 3.0 / 1.2: α > log 2.5 / log 3 "
        "≈ 0.834. With the raw sums (α = 0) A wins, −1.2 against −3.0; at α = 1 B wins, −0.5 "
        "against −0.6. The penalty decides between hypotheses of different lengths only: "
        "that is why it serves the final ranking, never the pruning of one step's candidates, "
        "which all have the same length.",
        rel_tolerance=0.01),
    Question(
        "Google's NMT system divides by ((5 + n) / 6) ** α instead of n ** α. By how much does "
        "it divide a hypothesis of n = 10 tokens at α = 0.6?",
        ((5 + 10) / 6) ** 0.6, NUMBER,
        "((5 + 10) / 6)^0.6 = 2.5^0.6 ≈ 1.73, against 10^0.6 ≈ 3.98 for n^α. Both are 1 for a "
        "one-token hypothesis, but GNMT's grows more slowly: the constant 5 softens the reward "
        "for length, which n^α gives in full. Fairseq and Hugging Face use the plain n^α "
        "(as this kata does), and α = 0.6 to 1 is typical.",
        rel_tolerance=0.01),
    Question(
        "Why do chat models sample (temperature, top-p) instead of running beam search?",
        "C", CHOICE,
        "Beam search maximises likelihood, and the most likely text is not the best text: it "
        "is generic, repeats itself and loops (Holtzman et al., 'The Curious Case of Neural "
        "Text Degeneration'), and a wider beam often makes it worse: shorter, blander outputs, "
        "the 'beam search curse' of translation. Open-ended generation wants varied, "
        "human-like text, which sampling from a truncated distribution gives; beam search "
        "stays where one right answer exists (translation, speech recognition). It also costs "
        "beam_size rows per step and as many KV caches, reordered at every step.",
        choices=("beam search cannot use a KV cache",
                 "beam search needs a length penalty, which chat models cannot have",
                 "the most likely text is bland and repetitive, and wider beams make it worse",
                 "beam search only works with an encoder–decoder")),
    Question(
        "Beam search with a KV cache and 4 live rows. After a step the kept candidates' parents "
        "are [2, 0, 0, 3]. What must happen to the cache before the next step?",
        "D", CHOICE,
        "Row i of the next batch continues the prefix of row parents[i], so its cache must be "
        "that row's: cache = cache.index_select(0, parents) on the batch axis (Hugging Face's "
        "_reorder_cache). Row 0's cache is copied twice, row 1's is dropped; appending the new "
        "tokens' keys and values without reordering attends to the wrong prefixes.",
        choices=("nothing: the cache does not depend on the beam",
                 "clear it and recompute it from the new prefixes",
                 "append the new tokens' keys and values to rows 0-3 as they are",
                 "reorder its batch rows by the parents: rows 2, 0, 0, 3")),
    Question(
        "length_penalty = 0 (raw sums). After a step the best finished hypothesis scores −2.1 "
        "and the best live one −2.4; max_len is still far. Can the search stop now without "
        "changing its result?",
        "A", CHOICE,
        "Yes. Every log-probability is ≤ 0, so a live hypothesis's sum can only fall: nothing "
        "it grows into can beat −2.1, and the best answer is already found (to return all "
        "beam_size hypotheses the bound must beat the worst finished one that would be "
        "kept). With α > 0 the division by n ** α can lift a longer hypothesis, so the bound "
        "must cover every length still reachable: the best live sum (negative) divided by "
        "(max_len − 1) ** α, the most tokens after bos. Hugging Face's early_stopping=\"never\" applies such a "
        "bound; True stops as soon as num_beams hypotheses finished; False uses a cheaper "
        "heuristic.",
        choices=("yes: live sums only fall, so none can overtake −2.1",
                 "no: a longer hypothesis always scores higher",
                 "no: beam search must run to max_len",
                 "only if the live hypothesis ends in eos next")),
)
