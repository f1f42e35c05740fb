"""The quiz at the end of each kata's notebook: an interviewer's follow-up questions, asked
and marked.

Each kata has 2-8 :class:`~graders.core.quizzes.Question` s, declared beside its grader in
``graders/<module>/meta.py`` (``QUESTIONS``). ``notebooks/build.py`` turns them into the
quiz cells (the prompts in markdown, then an ``answers = {1: None, ...}`` cell that calls
:func:`quiz`), so the questions in a notebook cannot drift from the ones graded here.
Expected numbers are computed from formulas, not typed in; the self-tests check them
against PyTorch's own modules.

    >>> result = quiz("07", {1: 2362368, 2: None})   # prints one line per question
    >>> result.all_correct
    False
"""

from __future__ import annotations

from graders.core import registry
from graders.core.quizzes import (  # noqa: F401 (the quiz's vocabulary, used by its readers)
    CHOICE, CORRECT, INTEGER, NUMBER, REASONING_WIDTH, UNANSWERED, WRONG, GiB, MiB, Question,
    QuizResult, encoder_layer_parameters, letters, marked, mha_parameters, score_line)


def questions(kata_key: str) -> tuple[Question, ...]:
    return registry.questions(kata_key)


def answer_key(kata_key: str) -> dict[int, int | float | str]:
    """The right answers, numbered from 1 like the notebook's ``answers`` cell."""
    return {number: q.answer for number, q in enumerate(questions(kata_key), start=1)}


def quiz(kata_key: str, answers: dict[int, object]) -> QuizResult:
    """Grade ``answers`` (question number -> answer, None when unanswered); print one verdict
    per question, with the reasoning for each answered one. Never raises on a wrong answer."""
    kata = registry.get(kata_key)
    outcomes = []
    for number, question in enumerate(questions(kata.id), start=1):
        outcome, text = marked(number, question, answers.get(number))
        outcomes.append(outcome)
        print(text)
    result = QuizResult(kata.name, tuple(outcomes))
    print("\n" + score_line(result))
    return result

