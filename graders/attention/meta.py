"""Kata 01_attention (Single-head scaled dot-product attention).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES) and its quiz (QUESTIONS). Imports
nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

import math

from graders.core.kata import ATTENTION_BUILTINS, Kata, Mistake
from graders.core.quizzes import CHOICE, INTEGER, MiB, NUMBER, Question

KATA = Kata(
    id="01",
    name="01_attention",
    file="attention.py",
    title="Single-head scaled dot-product attention",
    track="foundations",
    difficulty="easy",
    target_minutes=15,
    prerequisites=(),
    mistakes=(
        "missing-scale",
        "wrong-scale",
        "softmax-wrong-dim",
        "mask-inverted",
        "mask-after-softmax",
        "wrong-projection",
        "missing-out-proj",
        "nan-on-fully-masked",
        "finite-mask-fill",
    ),
    forbidden=ATTENTION_BUILTINS,
    hints=(
        "Write the formula down before any code: softmax(Q Kᵀ / √d_k + mask) V. Which "
        "axis of the scores runs over the keys? And what should a query whose keys are "
        "all blocked get - in the forward pass and in the backward pass?",
        "The scores of the queries against the keys form an (..., n, m) matrix: one row "
        "per query, one column per key. Scale by 1/sqrt(d_k) (d_k = query.size(-1)) "
        "*before* the softmax, which normalises each row (dim=-1). A bool mask is True where a key is "
        "blocked (fill with -inf); a float mask is added. An all -inf row gives NaN: give "
        "such rows harmless scores *before* the softmax and zero their weights after. "
        "Zeroing the NaN weights alone (torch.where after the softmax) still leaves NaN "
        "gradients with a float -inf mask. SingleHeadAttention: q_proj/k_proj/v_proj, "
        "attend, out_proj; batch_first=False means (seq, batch, d).",
        "# scores (..., n, m): scaled, the blocked keys already at -inf\n"
        "all_blocked = torch.isneginf(scores).all(dim=-1, keepdim=True)   # (..., n, 1)\n"
        "# neutralise those rows *before* the softmax (no NaN, forward or backward), then\n"
        "# give them zero weights\n"
        "weights = scores.masked_fill(all_blocked, 0.0).softmax(dim=-1).masked_fill(all_blocked, 0.0)",
    ),
)


# The mistakes only this kata's grader names (shared ones: graders.core.catalogue).
MISTAKES = (
    Mistake("mask-after-softmax",
            "The mask was applied after the softmax, so the remaining weights no longer sum "
            "to 1.",
            "Fill the blocked *scores* with -inf, then take the softmax."),
)


# The interviewer's follow-up questions: the notebook's quiz and `kata quiz`.
QUESTIONS = (
    Question(
        "The entries of a query q and a key k are independent, with mean 0 and variance 1, "
        "and d_k = 64. What is the variance of the dot product q·k?",
        64, INTEGER,
        "q·k is a sum of 64 independent products q_i k_i, each with mean 0 and variance "
        "E[q_i²] E[k_i²] = 1, so the variance is 64 (a standard deviation of 8). "
        "Dividing by √d_k = 8 brings it back to 1 and keeps the softmax out of saturation."),
    Question(
        "The weights have shape (b, n, m): n queries, m keys. Which of these is all ones?",
        "B", CHOICE,
        "The softmax runs over the keys (dim=-1): every query spreads a total weight of 1 "
        "over the m keys, so summing over the last axis gives ones of shape (b, n).",
        choices=("`weights.sum(dim=-2)`", "`weights.sum(dim=-1)`", "`weights.sum(dim=0)`",
                 "none of them")),
    Question(
        "A query whose keys are all blocked by the mask: what weights does this kata's "
        "contract give it?",
        "C", CHOICE,
        "Its scores are all -inf, and softmax(-inf, ..., -inf) is 0/0 = NaN, which would "
        "poison every later sum (and the gradients). The contract replaces that row with "
        "zeros, so the query's output is zeros.",
        choices=("NaN", "uniform, 1/m each", "all zero", "one-hot on the first key")),
    Question(
        "How many MiB does the (b, n, m) score matrix take in float32 with b = 8 and "
        "n = m = 1024?",
        8 * 1024 * 1024 * 4 // MiB, INTEGER,
        "8 · 1024 · 1024 scores × 4 bytes = 33,554,432 bytes = 32 MiB. It grows as n·m: "
        "doubling the sequence length quadruples it."),
    Question(
        "Computed as written, exp(x) / exp(x).sum(), the float32 softmax of the scores "
        "[1000, 999] is NaN. What is its first weight, computed stably (3 decimals)?",
        1 / (1 + math.exp(-1)), NUMBER,
        "exp(1000) overflows to inf and inf / inf = NaN. Subtracting the maximum changes "
        "nothing mathematically, softmax(x) = softmax(x - max x), and leaves exponents ≤ 0: "
        "softmax([0, -1]) = [1 / (1 + e⁻¹), e⁻¹ / (1 + e⁻¹)] = [0.731, 0.269]. "
        "torch.softmax does this for you.",
        rel_tolerance=0.002),
    Question(
        "A float mask blocks every key of one query with -inf. You compute the softmax, then "
        "replace that row's NaN weights with `torch.where(all_blocked, 0.0, weights)`. "
        "What is still wrong?",
        "C", CHOICE,
        "The forward pass is fixed, but the softmax's backward multiplies by that row's NaN "
        "weights: 0 · NaN = NaN reaches its scores, and through query @ key.mT the gradient "
        "of that query and of every key. Give fully blocked rows finite scores before the "
        "softmax (masked_fill(all_blocked, 0.0)), then zero their weights. (With a bool "
        "mask, masked_fill's backward happens to stop the NaN.)",
        choices=("nothing", "the output of that query is NaN",
                 "the gradients of that query and of every key are NaN",
                 "the other queries' weights no longer sum to 1")),
    Question(
        "Why did the Transformer use scaled dot-product attention rather than additive "
        "attention, vᵀ tanh(W q + U k)?",
        "B", CHOICE,
        "Both score a query against a key; the dot product does it for all pairs with one "
        "matmul, which is much faster and needs no (n, m, width) hidden tensor. Unscaled, it "
        "fell behind additive attention for large d_k because the scores' variance grows "
        "like d_k and saturates the softmax: the 1/√d_k removes that weakness.",
        choices=("it is more accurate at every width",
                 "it is one matmul for all pairs, and 1/√d_k fixes its weakness at large d_k",
                 "additive attention cannot be masked",
                 "it has more parameters to learn with")),
    Question(
        "In self-attention, what happens to the (n, n) score matrix if W_q = W_k?",
        "A", CHOICE,
        "Scores become (W x_i) · (W x_j), the same for (i, j) and (j, i): token i attends to "
        "j exactly as much as j to i, and a token's score with itself, |W x_i|², tends to top "
        "its row. Separate W_q and W_k let what a token looks for differ from what it offers.",
        choices=("it becomes symmetric", "it becomes lower triangular",
                 "its rows sum to 1", "nothing changes")),
)
