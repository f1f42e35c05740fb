"""Kata 07_flops (Parameters and FLOPs of attention).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES) and its quiz (QUESTIONS). Imports
nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

from graders.core.kata import Kata, Mistake
from graders.core.quizzes import INTEGER, mha_parameters, NUMBER, Question

KATA = Kata(
    id="07",
    name="07_flops",
    file="flops.py",
    title="Parameters and FLOPs of attention",
    track="foundations",
    difficulty="medium",
    target_minutes=20,
    prerequisites=("03", "06"),
    mistakes=(
        "macs-not-flops",
        "missing-out-proj-flops",
        "missing-attention-flops",
        "per-head-divided",
        "bias-not-counted",
        "batch-ignored",
    ),
    forbidden=(),
    hints=(
        "Count only matrix multiplications, and write each one as a (p, q) @ (q, r) "
        "product: that is p*q*r multiply-adds, 2*p*q*r FLOPs. List the products an "
        "attention layer does.",
        "Projections: q, k, v and out are each (tokens, d) @ (d, d) over l*b tokens. "
        "Attention: Q Kᵀ is (l, d/h) @ (d/h, l) and weights @ V is (l, l) @ (l, d/h) per "
        "batch element and head - summed over the h heads, the head count cancels out. "
        "Cross-attention: Q "
        "and out run over tgt_len tokens, K and V over src_len. Parameters: four d x d "
        "weights plus four length-d biases. Memory: b*h*l*l elements of the dtype's size.",
        "proj = 2 * (l * b) * d * d              # one projection: (l*b, d) @ (d, d)\n"
        "qk = b * h * (2 * l * (d // h) * l)     # Q Kᵀ: (l, d/h) @ (d/h, l) per batch and head\n"
        "# weights @ V costs what Q Kᵀ costs; h cancels: qk == 2 * b * l * l * d",
    ),
)


# The mistakes only this kata's grader names (shared ones: graders.core.catalogue).
MISTAKES = (
    Mistake("macs-not-flops",
            "Multiply-adds were counted instead of FLOPs: the answer is off by exactly a "
            "factor 2.",
            "A (p, q) @ (q, r) product is 2*p*q*r FLOPs: one multiply and one add each."),
    Mistake("missing-out-proj-flops",
            "The output projection's matmul was left out of the count.",
            "There are four d x d projections: q, k, v and out."),
    Mistake("missing-attention-flops",
            "The attention matmuls (QK^T and weights @ V) were left out of the count.",
            "They add 2 * 2*l*l*d per batch element: quadratic in the sequence length."),
    Mistake("per-head-divided",
            "The count was divided (or multiplied) by the number of heads; the head count "
            "cancels out.",
            "h heads of width d/h cost as much as one head of width d."),
    Mistake("bias-not-counted",
            "The bias vectors were left out of the parameter count.",
            "Four d x d weights plus four length-d biases: 4d^2 + 4d."),
    Mistake("batch-ignored",
            "The batch size was left out: every sequence in the batch is computed (and "
            "stored) separately.",
            "Multiply by batch_size."),
)


# --- the formulas behind this quiz's numbers (the self-tests check them against PyTorch) ---

def projection_flops(seq_len: int, batch_size: int, d_model: int) -> int:
    """The q, k, v and output projections: four (l*b, d) @ (d, d) products, 2 FLOPs each MAC."""
    return 4 * 2 * seq_len * batch_size * d_model * d_model


def attention_matmul_flops(seq_len: int, batch_size: int, d_model: int) -> int:
    """Q K^T and weights @ V: each 2*l*l*d per batch element, summed over the heads."""
    return 2 * 2 * seq_len * seq_len * batch_size * d_model


def self_attention_flops(seq_len: int, batch_size: int, d_model: int) -> int:
    """8*l*b*d^2 + 4*l^2*b*d."""
    return projection_flops(seq_len, batch_size, d_model) + attention_matmul_flops(seq_len, batch_size, d_model)


# The interviewer's follow-up questions: the notebook's quiz and `kata quiz`.
QUESTIONS = (
    Question(
        "Parameters of multi-head attention with d = 768 and bias?",
        mha_parameters(768), INTEGER,
        "4d² + 4d: four d × d projections and four biases. 4·589,824 + 3,072 = 2,362,368."),
    Question(
        "FLOPs (2 per multiply-add, matmuls only) of self-attention with l = 2048 tokens, "
        "batch b = 1, d = 512?",
        self_attention_flops(2048, 1, 512), INTEGER,
        "Projections 8·l·b·d² = 8·2048·512² = 4,294,967,296; the two attention matmuls "
        "4·l²·b·d = 4·2048²·512 = 8,589,934,592. Total 12,884,901,888."),
    Question(
        "With d = 768, beyond what sequence length l do the attention matmuls (4l²bd) cost "
        "more than the projections (8lbd²)?",
        2 * 768, INTEGER,
        "4l²bd > 8lbd² ⇔ l > 2d = 1536. Below that the projections dominate; above it the "
        "quadratic term does."),
    Question(
        "Doubling the sequence length multiplies the attention-matmul FLOPs (4l²bd) by?",
        4, INTEGER,
        "The score matrix is l × l: attention is O(n²·d) in time and O(n²) in memory per "
        "head, while the projections grow only linearly in l."),
    Question(
        "The backward pass of a linear layer costs how many times the FLOPs of its forward "
        "pass?",
        2, INTEGER,
        "Forward: Y = X Wᵀ, one matmul. Backward: the gradient for the input, dY W, and the "
        "gradient for the weights, dYᵀ X, two matmuls of the same size. A training step is "
        "about 3 × the forward."),
    Question(
        "At about 6 FLOPs per parameter per token, how many FLOPs does training a model of "
        "7·10⁹ parameters on 10¹² tokens take?",
        6 * 7e9 * 1e12, NUMBER,
        "2N per token forward (one multiply-add per parameter), 4N backward: 6 · 7·10⁹ · 10¹² "
        "= 4.2·10²². The attention matmuls come on top, 4·l·d per token and layer against "
        "24·d² for the rest: small while the context l is well below 6d.",
        rel_tolerance=0.05),
)
