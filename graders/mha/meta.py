"""Kata 03_mha (A minimal multi-head attention).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES) and its quiz (QUESTIONS). Imports
nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

from graders.core.kata import ATTENTION_BUILTINS, Kata, Mistake
from graders.core.quizzes import CHOICE, INTEGER, mha_parameters, Question

KATA = Kata(
    id="03",
    name="03_mha",
    file="mha.py",
    title="A minimal multi-head attention",
    track="foundations",
    difficulty="medium",
    target_minutes=25,
    prerequisites=("01", "02"),
    mistakes=(
        "reshape-without-transpose",
        "scale-by-embed-dim",
        "missing-scale",
        "softmax-wrong-dim",
        "qkv-chunk-order",
        "wrong-projection",
        "missing-bias",
        "missing-out-proj",
        "batch-first-ignored",
        "weights-averaged",
        "dropout-in-eval",
        "wrong-scale",
        "heads-interleaved",
        "batch-head-order",
        "non-contiguous-view",
    ),
    forbidden=ATTENTION_BUILTINS,
    hints=(
        "Multi-head attention is kata 01 run h times side by side on narrower slices, "
        "glued back together by out_proj. Start from PyTorch's parameter names: "
        "in_proj_weight, in_proj_bias, out_proj.",
        "in_proj_weight (3E, E) stacks W_q, W_k, W_v in that order (same for the bias): "
        "project query, key and value separately (key/value may be longer than query). "
        "Split into heads of width E // h (kata 02), scale by 1/sqrt(head_dim) - not "
        "1/sqrt(E) - softmax over the keys, dropout only in training, merge the heads, "
        "out_proj. Return per-head weights (b, h, n, m), not their mean.",
        "w_q, w_k, w_v = self.in_proj_weight.chunk(3)                      # (E, E) each, q first\n"
        "q = F.linear(query, w_q, b_q).view(b, n, h, d).transpose(1, 2)   # (b, h, n, d); k, v alike\n"
        "weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d), dim=-1)   # (b, h, n, m), d = E // h",
    ),
)


# The mistakes only this kata's grader names (shared ones: graders.core.catalogue).
MISTAKES = (
    Mistake("qkv-chunk-order",
            "in_proj_weight was cut in the wrong order; PyTorch stacks it q, k, v.",
            "W_q, W_k, W_v = in_proj_weight.chunk(3) (and the same for in_proj_bias)."),
    Mistake("missing-bias",
            "A projection bias was left out: in_proj_bias (or one of its thirds) or "
            "out_proj's bias.",
            "F.linear(x, W_q, b_q) with the matching third of in_proj_bias, and keep "
            "out_proj's bias."),
    Mistake("batch-first-ignored",
            "batch_first was ignored: (batch, seq, E) inputs were treated as (seq, batch, E) "
            "or the other way round.",
            "With batch_first=False transpose(0, 1) on the way in and on the way out."),
    Mistake("weights-averaged",
            "The attention weights were averaged over heads; this kata returns them per "
            "head, (b, h, n, m).",
            "Return the weights before any .mean(dim=1)."),
)


# The interviewer's follow-up questions: the notebook's quiz and `kata quiz`.
QUESTIONS = (
    Question(
        "How many parameters does `nn.MultiheadAttention(512, 8)` (with bias) have?",
        mha_parameters(512), INTEGER,
        "Four d × d matrices (W_q, W_k, W_v stacked in in_proj_weight, and out_proj) plus "
        "four bias vectors of length d: 4·512² + 4·512 = 1,048,576 + 2,048 = 1,050,624."),
    Question(
        "Going from 8 heads to 16 heads with the same embed_dim, the parameter count…",
        "C", CHOICE,
        "The heads are slices of the same d × d projections: more heads means narrower "
        "heads (d/h), not more weights.",
        choices=("doubles", "halves", "stays the same", "grows by embed_dim")),
    Question(
        "With embed_dim = 512 and 8 heads, the scores are divided by √x. What is x?",
        512 // 8, INTEGER,
        "Each head is an attention of width head_dim = 512 / 8 = 64, so its dot products "
        "have variance 64: divide by √64 = 8, not by √512."),
    Question(
        "Why h heads of width E/h rather than one head of width E?",
        "C", CHOICE,
        "Parameters (4E² + 4E) and FLOPs are the same whatever h is. One head gives each "
        "query a single distribution over the keys, one weighted average; h heads give it h "
        "independent distributions, so it can take one thing from one token and another from "
        "another token, and W_o combines them. The price: each head compares in only E/h "
        "dimensions.",
        choices=("fewer parameters", "fewer FLOPs",
                 "each query gets h independent distributions over the keys, at the same cost",
                 "it makes attention linear in the sequence length")),
)
