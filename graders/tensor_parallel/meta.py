"""Kata 31_tensor_parallel (Tensor-parallel attention).

Beside the grader (checks.py) and the twin (twin.py), what the learner does not read: its
registry entry with the hint ladder (KATA), the mistakes only it names (MISTAKES) and its
quiz (QUESTIONS). Imports nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

from graders.core.kata import Kata, Mistake  # noqa: F401 (Mistake: for MISTAKES)
from graders.core.quizzes import CHOICE, INTEGER, Question

KATA = Kata(
    id="31",
    name="31_tensor_parallel",
    file="tensor_parallel.py",
    title="Tensor-parallel attention",
    track="training",
    difficulty="hard",
    target_minutes=40,
    prerequisites=(),
    mistakes=(),
    forbidden=(),
    hints=(
        "TODO: the first rung: the idea of ColumnParallelLinear, no code.",
        "TODO: the second rung: the steps, with shapes.",
        "TODO: the third rung, the one tricky line as near-code on two lines or more:\nColumnParallelLinear(in_features, out_features, bias=True, group=None)",
    ),
)


# The mistakes only this kata's grader names (shared ones: graders.core.catalogue, never
# declared again here).
MISTAKES: tuple[Mistake, ...] = ()


QUESTIONS = (
    Question("How many elements has a tensor of shape (2, 3)?", 6, INTEGER,
             "2 rows of 3: 2 * 3 = 6."),
    Question("Which shape does the placeholder task return for x of shape (2, 3)?", "A", CHOICE,
             "It returns x itself.", choices=("(2, 3)", "(3, 2)")),
)
