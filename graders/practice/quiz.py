"""A kata's quiz (the interviewer follow-up questions of its notebook) as data: its
questions, and the marks of a set of answers. Nothing is recorded; refused while a mock
interview runs (the quiz explains its answers)."""

from __future__ import annotations

from graders.core import registry
from graders.core.i18n import translate
from graders.core.quizzes import CORRECT, QuizResult, marked, score_line
from graders.core.registry import Kata
from graders.practice.workspace import Workspace


def questions(practice: Workspace, kata: Kata) -> list:
    """``kata``'s quiz questions (graders.core.quizzes.Question), numbered from 1."""
    practice.refuse_during_mock("refused.quiz")
    return list(registry.meta(kata).QUESTIONS)


def asked(practice: Workspace, kata: Kata) -> list[dict]:
    """The questions as a page shows them: number, prompt (markdown), choices, format."""
    return [{"number": n, "prompt": translate(q.prompt), "choices": [translate(c) for c in q.choices],
             "format": q.answer_format} for n, q in enumerate(questions(practice, kata), start=1)]


def mark(practice: Workspace, kata: Kata, answers: dict) -> dict:
    """The marks of ``answers`` (question number as a string -> answer): each question's
    outcome and reasoning, the score line, and how many are right."""
    marks = []
    for number, question in enumerate(questions(practice, kata), start=1):
        outcome, text = marked(number, question, answers.get(str(number)))
        marks.append({"number": number, "outcome": outcome, "text": text})
    result = QuizResult(kata.name, tuple(m["outcome"] for m in marks))
    return {"marks": marks, "score": score_line(result),
            "correct": sum(m["outcome"] == CORRECT for m in marks)}
