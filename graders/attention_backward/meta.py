"""Kata 19_attention_backward (The backward pass of attention, by hand).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES; lse-wrong and full-score-matrix
are kata 14's, missing-scale and non-contiguous-view are shared) and its quiz (QUESTIONS),
with the formulas its quiz uses. Imports nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

import math

from graders.core.kata import ATTENTION_BUILTINS, Kata, Mistake
from graders.core.quizzes import CHOICE, INTEGER, NUMBER, MiB, Question

KATA = Kata(
    id="19",
    name="19_attention_backward",
    file="attention_backward.py",
    title="The backward pass of attention, by hand",
    track="llm",
    difficulty="hard",
    target_minutes=40,
    prerequisites=("01", "14"),
    mistakes=(
        "softmax-jacobian-missing-d",
        "missing-scale-in-grad",
        "dk-not-transposed",
        "dv-not-transposed",
        "causal-mask-missing-in-backward",
        "lse-not-subtracted",
        "lse-wrong",
        "saves-probabilities",
        "autograd-in-backward",
        "d-from-wrong-terms",
        "missing-scale",
        "full-score-matrix",
        "non-contiguous-view",
    ),
    forbidden=ATTENTION_BUILTINS,
    hints=(
        "Write the forward as three steps, S = s q kᵀ, P = softmax(S), O = P V, and walk "
        "them backwards one at a time: which gradient does each step need, and which "
        "tensors from the forward does it read? Then ask which of those you could "
        "recompute instead of keeping.",
        "Backwards through O = P V: dV = Pᵀ dO and dP = dO Vᵀ. Through the softmax, row by "
        "row: dS = P ∘ (dP - D), where D_i = Σ_j P_ij dP_ij is one number per query - and "
        "since O_i = Σ_j P_ij V_j, it equals rowsum(dO ∘ O), which needs no (n, m) matrix. "
        "Through S = s q kᵀ: dQ = s dS K and dK = s dSᵀ Q. Never keep P: the forward's lse "
        "gives it back exactly, tile by tile, as exp(S - lse) (with the causal mask), "
        "so the ctx keeps q, k, v, out and lse only.",
        "# per tile: q_i, do_i (b, h, Bq, d); k_j, v_j (b, h, Bk, d); lse_i, D_i (b, h, Bq, 1)\n"
        "p = torch.exp(q_i @ k_j.transpose(-2, -1) * scale - lse_i)  # (b, h, Bq, Bk), masked if causal\n"
        "ds = p * (do_i @ v_j.transpose(-2, -1) - D_i)  # D = (dO * O).sum(-1, keepdim=True)",
    ),
)

MISTAKES = (
    Mistake("softmax-jacobian-missing-d",
            "The softmax's backward was taken as dS = P ∘ dP: the softmax's Jacobian also "
            "has a term from the normalisation, so every row loses D_i = Σ_j P_ij dP_ij.",
            "dS = P ∘ (dP - D) with D = rowsum(dO ∘ O), one number per query."),
    Mistake("missing-scale-in-grad",
            "dQ or dK lacks the 1/sqrt(d) factor: the scores were S = s q kᵀ, so the chain "
            "rule brings s back into both of their gradients.",
            "dQ = s · dS K and dK = s · dSᵀ Q, with s = 1 / math.sqrt(d)."),
    Mistake("dk-not-transposed",
            "dK was computed from dS instead of dSᵀ: dS is (queries, keys), and dK needs one "
            "row per key (with n != m the product does not even fit).",
            "dK = s · dS.transpose(-2, -1) @ Q: (b, h, m, n) @ (b, h, n, d)."),
    Mistake("dv-not-transposed",
            "dV was computed as P dO instead of Pᵀ dO: P is (queries, keys), and dV needs one "
            "row per key (with n != m the product does not even fit).",
            "dV = P.transpose(-2, -1) @ dO: (b, h, m, n) @ (b, h, n, d)."),
    Mistake("causal-mask-missing-in-backward",
            "The recomputed probabilities are not causally masked (everywhere, or in the tiles "
            "on the diagonal): P = exp(S - lse) gives future keys weight unless their scores "
            "are -inf as in the forward.",
            "Mask S with -inf where key > query before exp(S - lse), in every tile that "
            "crosses the diagonal, from the tile's global indices."),
    Mistake("lse-not-subtracted",
            "P was recomputed as exp(S), without subtracting the forward's log-sum-exp: those "
            "are unnormalised weights (and overflow for large scores).",
            "P = torch.exp(S - lse[..., None]): exactly the forward's softmax, row by row."),
    Mistake("saves-probabilities",
            "The forward kept an (n, m) tensor (the probabilities, the scores or a mask) in "
            "ctx: that is the O(n·m) memory FlashAttention's backward avoids by recomputing P.",
            "ctx.save_for_backward(q, k, v, out, lse) and nothing larger; recompute P = "
            "exp(S - lse) in the backward."),
    Mistake("autograd-in-backward",
            "The backward called autograd (torch.autograd.grad, .backward() or a torch.func "
            "transform) instead of computing the gradients by hand.",
            "Write dV, dP, D, dS, dQ and dK from the formulas with matmuls and elementwise "
            "ops only."),
    Mistake("d-from-wrong-terms",
            "D, the softmax's correction per query, was built from the wrong terms: it is "
            "Σ_j P_ij dP_ij over all the keys (= rowsum(dO ∘ O)), not rowsum(dP), not "
            "rowsum(dO), not a sum over one key block.",
            "D = (dO * O).sum(-1, keepdim=True), computed once before the loop over tiles."),
)


def attention_matmul_flops(n: int, m: int, d: int, backward: bool = False,
                           recompute: bool = True) -> int:
    """Matmul FLOPs of softmax attention for one head, 2 per multiply-add: the forward does
    S = Q Kᵀ and O = P V; the backward dV = Pᵀ dO, dP = dO Vᵀ, dQ = dS K, dK = dSᵀ Q, plus
    S = Q Kᵀ again when P is recomputed rather than stored."""
    matmuls = (4 + recompute) if backward else 2
    return matmuls * 2 * n * m * d


def causal_tiles(n: int, block: int) -> tuple[int, int]:
    """(tiles computed, tiles among them that need a mask) for causal attention over n
    queries and keys in block x block tiles: the tiles on or below the diagonal, and the
    diagonal ones."""
    blocks = -(-n // block)
    return blocks * (blocks + 1) // 2, blocks


def half_rounding(value: float, significand_bits: int) -> float:
    """The largest rounding error of a positive ``value`` stored with ``significand_bits``
    bits of significand (bfloat16 8, float16 11, float32 24): half the spacing there."""
    exponent = math.floor(math.log2(value))
    return 2.0 ** (exponent - (significand_bits - 1)) / 2


QUESTIONS = (
    Question(
        "Why does FlashAttention's backward pass recompute the probabilities P from Q, K and "
        "lse instead of storing them in the forward pass?",
        "B", CHOICE,
        "Storing P costs O(n·m) memory per head (64 GiB for one layer at 32k tokens, 32 "
        "heads, float16) and, worse, writing it to GPU memory (HBM) and reading it back: "
        "attention is memory-bound, so those bytes cost more time than the FLOPs. "
        "Recomputing S = Q Kᵀ tile by tile in on-chip SRAM adds one matmul of FLOPs, and "
        "exp(S − lse) gives back exactly the forward's P: the backward is faster and keeps, "
        "beyond the inputs Q, K, V and the output O (n·d numbers per head, kept anyway), "
        "only lse: n numbers per head instead of n·m.",
        choices=("recomputation is more accurate than storing P in float16",
                 "P takes O(n·m) memory and HBM traffic; one extra matmul in SRAM is cheaper",
                 "autograd cannot save tensors inside a custom Function",
                 "P changes between the forward and the backward pass")),
    Question(
        "Where does D_i = rowsum(dO ∘ O)_i come from?",
        "A", CHOICE,
        "The softmax's backward needs D_i = Σ_j P_ij dP_ij, and dP_ij = dO_i · V_j. So D_i = "
        "Σ_j P_ij (dO_i · V_j) = dO_i · (Σ_j P_ij V_j) = dO_i · O_i. One dot product of "
        "length d per query, from tensors already at hand, instead of a sum over the n × m "
        "matrix P ∘ dP: FlashAttention-2 computes it once, before the loop over tiles.",
        choices=("D_i = Σ_j P_ij dP_ij, and Σ_j P_ij V_j = O_i turns it into dO_i · O_i",
                 "it is the gradient of lse",
                 "it is a normalisation FlashAttention adds for numerical stability",
                 "it is the row sum of dS")),
    Question(
        "What does each row of dS = P ∘ (dP − D) sum to (in exact arithmetic)?",
        0, INTEGER,
        "Σ_j dS_ij = Σ_j P_ij dP_ij − D_i Σ_j P_ij = D_i − D_i · 1 = 0. The softmax is "
        "unchanged when a constant is added to a row of scores, so a gradient along that "
        "direction must vanish. With dS = P ∘ dP (D forgotten) the rows do not sum to 0, a "
        "quick test for that mistake."),
    Question(
        "Counting the matmuls only, how many times the forward's FLOPs does FlashAttention's "
        "backward pass take?",
        attention_matmul_flops(1, 1, 1, backward=True) / attention_matmul_flops(1, 1, 1),
        NUMBER,
        "The forward does two matmuls of 2·n·m·d FLOPs each: S = Q Kᵀ and O = P V. The "
        "backward does four, dV = Pᵀ dO, dP = dO Vᵀ, dQ = dS K, dK = dSᵀ Q, plus S = Q Kᵀ "
        "again to recompute P: five, so 5 / 2 = 2.5 times the forward (2 times if P were "
        "stored). Training a layer thus costs about 3.5 forward passes of attention.",
        rel_tolerance=0.02),
    Question(
        "How many MiB does lse take for one layer of 32 heads at n = 32768 tokens in float32, "
        "one sequence (what FlashAttention keeps instead of P)?",
        32 * 32768 * 4 // MiB, INTEGER,
        "32 heads × 32768 queries × 4 bytes = 4,194,304 bytes = 4 MiB, against 64 GiB for P "
        "in float16: n numbers per head instead of n × m. O is kept anyway, as the layer's "
        "output."),
    Question(
        "FlashAttention-2's backward loops over key blocks outside and query blocks inside. "
        "What does that order buy?",
        "C", CHOICE,
        "For one key block j, dK_j = Σ_i s · dS_ijᵀ Q_i and dV_j = Σ_i P_ijᵀ dO_i sum over "
        "every query block, so with key blocks outside they accumulate in on-chip memory "
        "and are written to HBM once. dQ_i sums over key blocks and is updated from every "
        "key block (atomic adds in the GPU kernel, or a second pass). Queries outside makes "
        "dQ local and dK, dV the shared sums instead.",
        choices=("it makes D unnecessary",
                 "it avoids recomputing P",
                 "dK and dV of a key block accumulate on chip and are written once; dQ is "
                 "the one accumulated across blocks",
                 "it is the only order in which causal tiles can be skipped")),
    Question(
        "Causal attention, n = m = 1024, in 128 × 128 tiles: of the 64 tiles, how many does "
        "the backward compute at all (the others are skipped)?",
        causal_tiles(1024, 128)[0], INTEGER,
        "8 query blocks × 8 key blocks; query block i needs key blocks 0 … i, so 1 + 2 + … + "
        "8 = 36 tiles, almost half the work saved. Only the 8 on the diagonal need a mask; "
        "the 28 below it are entirely visible."),
    Question(
        "A query's lse is about 19. Stored in bfloat16 (8 significant bits), by up to how "
        "much can it be off?",
        half_rounding(19.0, 8), NUMBER,
        "Between 16 and 32 bfloat16 numbers are 2⁴ / 2⁷ = 0.125 apart, so lse is off by up to "
        "0.0625, and every P = exp(S − lse) of that row is off by the same factor, "
        "exp(±0.0625): the recomputed row sums to 1 ± 6.5 %. In float16 (11 bits) the error "
        "is 0.0078, ± 0.8 %. That is why FlashAttention returns lse in float32 whatever the "
        "input's dtype, and keeps D and every accumulator in float32 too.",
        rel_tolerance=0.02),
)
