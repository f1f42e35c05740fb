"""Kata 02_heads (Splitting into h heads and merging them back).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES) and its quiz (QUESTIONS). Imports
nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

from graders.core.kata import ATTENTION_BUILTINS, Kata
from graders.core.quizzes import CHOICE, INTEGER, Question

KATA = Kata(
    id="02",
    name="02_heads",
    file="heads.py",
    title="Splitting into h heads and merging them back",
    track="foundations",
    difficulty="easy",
    target_minutes=10,
    prerequisites=("01",),
    mistakes=(
        "reshape-without-transpose",
        "heads-interleaved",
        "batch-head-order",
        "non-contiguous-view",
    ),
    forbidden=ATTENTION_BUILTINS,
    hints=(
        "Draw the last dimension of (b, n, h*d) as h blocks of d columns. Head i is block "
        "i. Which reshape keeps each block together, and which axis then has to move?",
        "Two steps, not one: first cut the last axis into (heads, width) with the head "
        "index as the *outer* factor - a cut changes no memory, so each block stays "
        "together - then move the head axis next to the batch. A single reshape to "
        "(b, h, n, d) has the right shape but deals whole tokens to the heads. Merging is "
        "the same two steps in reverse; after moving an axis the memory is out of order, "
        "so gluing axes needs a copy (view refuses, reshape copies when it must). "
        "Seq-first: fold batch and heads into one axis with the batch as the outer factor "
        "(row i*h + j = batch i, head j).",
        "heads = x.view(b, n, h, d).transpose(1, 2)   # (b, n, E) -> (b, n, h, d) -> (b, h, n, d)\n"
        "# merging: the same two steps backwards; after a transpose, reshape (view refuses).\n"
        "# seq-first: the same cut of the columns, (b, h) folded batch-major: row i*h + j",
    ),
)


# The mistakes only this kata's grader names (shared ones: graders.core.catalogue).

# The mistakes only this kata's grader names (shared ones: graders.core.catalogue).
MISTAKES = ()


# The interviewer's follow-up questions: the notebook's quiz and `kata quiz`.
QUESTIONS = (
    Question(
        "x has shape (b, n, h·d) = (1, 2, 4) with h = 2 heads of width d = 2. After "
        "`x.reshape(1, 2, 2, 2)` read as (b, h, n, d), with no transpose, what does head 0 hold?",
        "B", CHOICE,
        "reshape keeps memory order, and the memory of x is token 0's four columns, then "
        "token 1's. So 'head 0' is both halves of token 0 and 'head 1' both halves of "
        "token 1: each head sees one token instead of its own slice of every token.",
        choices=("columns 0:2 of token 0 and columns 0:2 of token 1",
                 "columns 0:2 and 2:4 of token 0",
                 "columns 0 and 2 of both tokens",
                 "all of x")),
    Question(
        "Is `x.view(b, n, h, d).transpose(1, 2)` contiguous?",
        "B", CHOICE,
        "transpose swaps two strides without moving any data, so the result is a "
        "non-contiguous view. Calling .view on it to merge dimensions raises; use "
        ".reshape (which copies when it must) or .contiguous().view.",
        choices=("yes", "no")),
    Question(
        "In PyTorch's seq-first layout (b·h, n, d) with b = 4 and h = 8, which row holds "
        "batch element 2, head 5?",
        2 * 8 + 5, INTEGER,
        "The rows are batch-major: row i·h + j is batch i, head j, so 2·8 + 5 = 21. "
        "Head-major order (j·b + i = 22) is a different tensor that happens to have the "
        "same shape."),
)
