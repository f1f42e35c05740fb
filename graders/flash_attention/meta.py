"""Kata 14_flash_attention (Flash attention: the online softmax, block by block).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES) and its quiz (QUESTIONS). Imports
nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

import math

from graders.core.kata import ATTENTION_BUILTINS, Kata, Mistake
from graders.core.quizzes import CHOICE, GiB, INTEGER, NUMBER, Question

KATA = Kata(
    id="14",
    name="14_flash_attention",
    file="flash_attention.py",
    title="Flash attention: the online softmax, block by block",
    track="models",
    difficulty="hard",
    target_minutes=30,
    prerequisites=("01",),
    mistakes=(
        "accumulator-not-rescaled",
        "running-max-missing",
        "normalized-per-block",
        "lse-wrong",
        "causal-block-off-by-one",
        "full-score-matrix",
        "missing-scale",
        "wrong-scale",
    ),
    forbidden=ATTENTION_BUILTINS,
    hints=(
        "Forget blocks for a moment: how would you compute softmax(s) @ v in one pass over "
        "the keys, seeing each score once, if you may keep only a few numbers per query? "
        "What do you do when a later score is larger than every score so far?",
        "The invariant: after each key block, l = Σ exp(s - m) and acc = Σ exp(s - m) v "
        "over the keys seen so far, with m their largest score (start at -inf: exp(-inf) = "
        "0 clears the empty start). A block that raises the maximum to m_new moves every "
        "old term to the new maximum: multiply l and acc by exp(m - m_new), then add the "
        "block's own exp(s - m_new) terms. After the last block: output = acc / l, lse = "
        "m + log(l). Causal: block key start + t when it is greater than the query's index.",
        "# one key block: s (b, h, n, B) scaled scores; m, l (b, h, n, 1); acc (b, h, n, d)\n"
        "m_new = torch.maximum(m, s.amax(-1, keepdim=True))   # (b, h, n, 1)\n"
        "alpha = torch.exp(m - m_new)                         # (b, h, n, 1): old terms to m_new\n"
        "l = alpha * l + torch.exp(s - m_new).sum(-1, keepdim=True)\n"
        "acc = alpha * acc + torch.exp(s - m_new) @ v_block   # (b, h, n, d)",
    ),
)


# The mistakes only this kata's grader names (shared ones: graders.core.catalogue).
MISTAKES = (
    Mistake("accumulator-not-rescaled",
            "When the running maximum grew, the output accumulator (or the running sum) was "
            "not rescaled by exp(old_max - new_max), so earlier blocks keep a wrong weight.",
            "alpha = exp(m_old - m_new); l = alpha * l + p.sum(-1); acc = alpha * acc + p @ v_block."),
    Mistake("running-max-missing",
            "The exponentials were taken without subtracting a running maximum (or from one "
            "that starts at 0, or that stops being updated after the first block), so large "
            "scores overflow to inf or small ones underflow to 0.",
            "Start the running maximum at -inf and take exp(scores - m_new) with m_new = "
            "max(m_old, scores.amax(-1))."),
    Mistake("normalized-per-block",
            "Each block was normalised by its own sum (a softmax per block) instead of by the "
            "sum over all keys.",
            "Accumulate unnormalised exp(scores - m) @ v and the running sum l; divide by l "
            "once, after the last block."),
    Mistake("lse-wrong",
            "The returned log-sum-exp is off: it is the natural log of sum_j exp(s_ij) over "
            "the scaled scores, i.e. m + log(l) with the final running maximum m and sum l.",
            "lse = m + torch.log(l) after the last block (not log(l) alone, nor m alone, nor "
            "in base 2)."),
    Mistake("causal-block-off-by-one",
            "The causal mask inside a key block is misplaced (off by one, or by the block's "
            "start): query i must see keys 0..i, the diagonal included, and no later key.",
            "Compare global indices: key start + t of the block is blocked for query i when "
            "start + t > i."),
)


# The interviewer's follow-up questions: the notebook's quiz and `kata quiz`.
QUESTIONS = (
    Question(
        "How many GiB does one layer's score matrix take for a single sequence of "
        "n = m = 32768 tokens with 32 heads in float16?",
        32 * 32768 * 32768 * 2 // GiB, INTEGER,
        "32 heads × 32768² scores × 2 bytes = 68,719,476,736 bytes = 64 GiB, for one layer "
        "and one sequence. This kata's loop holds one (n, block_size) block per head instead: "
        "with block_size 128, 32 · 32768 · 128 · 2 bytes = 256 MiB. The GPU kernel also tiles "
        "the queries: only B_r × B_c tiles sit in SRAM, while Q, K, V and O stream through "
        "HBM."),
    Question(
        "A query's running maximum is 5; the next block's largest score is 7. By what factor "
        "are its running sum and its accumulator multiplied before the block's terms are added?",
        math.exp(5 - 7), NUMBER,
        "α = exp(m_old − m_new) = exp(−2) ≈ 0.135. Every term so far was exp(s − 5); it must "
        "become exp(s − 7), which is exp(s − 5) · exp(−2). The new block's terms are "
        "exp(s − 7) directly.",
        rel_tolerance=0.01),
    Question(
        "The keys are split in two halves, and attention over each half gives (out₁, lse₁) "
        "and (out₂, lse₂). Which lse does attention over all the keys have?",
        "C", CHOICE,
        "lse = log(Σ₁ eˢ + Σ₂ eˢ) = log(e^lse₁ + e^lse₂) = logaddexp(lse₁, lse₂). The merged "
        "output is then out₁ · e^(lse₁ − lse) + out₂ · e^(lse₂ − lse): the same rescaling as "
        "the online softmax, and how split-K decoding and ring attention combine partial "
        "results.",
        choices=("max(lse₁, lse₂)", "lse₁ + lse₂", "log(exp(lse₁) + exp(lse₂))",
                 "(lse₁ + lse₂) / 2")),
    Question(
        "What should the running maximum start at, so that a row whose scores are all about "
        "−10⁴ still comes out right?",
        "B", CHOICE,
        "Starting at 0, the maximum stays 0 for that row: every exp(s − 0) = exp(−10⁴) "
        "underflows to 0, and the output is 0 / 0 = NaN. Starting at −inf, the first "
        "block sets it to the row's true maximum, and α = exp(−inf) = 0 wipes the empty "
        "start.",
        choices=("0", "-inf", "1")),
    Question(
        "What does FlashAttention keep from the forward pass for the backward pass?",
        "D", CHOICE,
        "The gradients need the weights P, but storing them would bring back the n × m "
        "matrix. FlashAttention keeps the output O and lse, n numbers per head, and "
        "recomputes each block of P exactly as exp(S − lse) from Q and a block of K "
        "(lesson section 8). The scores are computed twice, yet the backward pass moves "
        "far fewer bytes.",
        choices=("the n × m weights, written to HBM",
                 "nothing: the backward pass reruns the whole forward pass first",
                 "only the running maximum of each query",
                 "the output and lse; each block of the weights is recomputed")),
)
