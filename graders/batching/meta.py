"""Kata 25_continuous_batching (iteration-level scheduling over a packed, ragged batch).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES) and its quiz (QUESTIONS). Imports
nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

from graders.core.kata import Kata, Mistake  # noqa: F401 (Mistake: for MISTAKES)
from graders.core.quizzes import CHOICE, INTEGER, Question

KATA = Kata(
    id="25",
    name="25_continuous_batching",
    file="batching.py",
    title="iteration-level scheduling over a packed, ragged batch",
    track="inference",
    difficulty="medium",
    target_minutes=15,
    prerequisites=(),
    mistakes=(),
    forbidden=(),
    hints=(
        "Look at the shape of x.",
        "The output has the shape of x: the placeholder task returns x itself.",
        "def batching(x):\n    return x.clone()",
    ),
)


# The mistakes only this kata's grader names (shared ones: graders.core.catalogue).
MISTAKES: tuple[Mistake, ...] = ()


QUESTIONS = (
    Question("How many elements has a tensor of shape (2, 3)?", 6, INTEGER,
             "2 rows of 3: 2 * 3 = 6."),
    Question("Which shape does the placeholder task return for x of shape (2, 3)?", "A", CHOICE,
             "It returns x itself.", choices=("(2, 3)", "(3, 2)")),
)
