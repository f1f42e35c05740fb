"""kata quiz: a kata's interviewer follow-up questions in the terminal, asked and marked.

The questions, their marking and their reasoning are the notebooks' own
(:mod:`graders.frontends.quiz`): one question at a time, the answer read from the terminal
or, when stdin is a pipe, one answer per line (``printf '64\\nB\\n' | kata quiz 01``); an
empty line skips a question, the end of input leaves the rest unanswered. Each answer is
marked at once, with its reasoning. Nothing is recorded: a quiz is practice, not progress.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable

from rich.console import Console

from graders.core.i18n import _, translate
from graders.core.registry import Kata
from graders.frontends.cli.app import App
from graders.frontends.cli.common import resolve
from graders.frontends.layout import fill_indented
from graders.frontends.quiz import (REASONING_WIDTH, UNANSWERED, Question, QuizResult, letters,
                                    marked, questions, score_line)


def read_line_from(console: Console, interactive: bool) -> Callable[[str], str | None]:
    """How an answer is read: typed at a prompt in a terminal, a line of stdin otherwise
    (echoed, so that the output reads as a transcript); None at the end of input."""
    def read(prompt: str) -> str | None:
        if interactive:
            try:
                return console.input(prompt)
            except (EOFError, OSError, RuntimeError):
                console.print()
                return None
        line = sys.stdin.readline() if sys.stdin is not None else ""
        if not line:
            return None
        console.print(prompt + line.rstrip("\n"), markup=False, highlight=False)
        return line

    return read


def typed(answer: str | None) -> int | float | str | None:
    """A typed answer as the notebook's answers cell would hold it: 64 and 0.135 as numbers
    (so that a wrong one reads "you said 64"), a letter as a string, None when skipped."""
    text = (answer or "").strip()
    if not text:
        return None
    for kind in (int, float):
        try:
            return kind(text.replace("_", "").replace(",", ""))
        except ValueError:
            pass
    return text


def plain_question(number: int, question: Question) -> str:
    """The question as plain text: numbered, with its lettered options."""
    lines = [f"{number}. {translate(question.prompt)}"]
    lines += [f"   {letter}  {translate(choice)}"
              for letter, choice in zip(letters(len(question.choices)), question.choices)]
    return "\n".join(lines)


def run_quiz(kata: Kata, console: Console, read_line: Callable[[str], str | None],
             show_markdown: Callable[[str], None]) -> QuizResult:
    """Ask each question of ``kata``, mark each answer as it comes; returns the marks.
    ``show_markdown`` prints a question's markdown on a terminal (plain text elsewhere)."""
    asked = questions(kata.id)
    console.print(_("Quiz {kata}: {count} interviewer follow-up questions. Answer each one, or "
                    "press Enter to skip it.", kata=kata.name, count=len(asked)),
                  style="bold", markup=False, highlight=False)
    outcomes: list[str] = []
    ended = False  # end of input: the questions left stay unanswered
    for number, question in enumerate(asked, start=1):
        console.print()
        if console.is_terminal:
            show_markdown(question.markdown(number))
        else:  # a pipe or a file: plain text, no markdown markers
            console.print(plain_question(number, question), markup=False, highlight=False,
                          soft_wrap=True)
        answer = None
        if not ended:
            answer = read_line(_("your answer ({format}): ", format=question.answer_format))
            ended = answer is None
        outcome, text = marked(number, question, typed(answer))
        outcomes.append(outcome)
        console.print(fill_indented(text, REASONING_WIDTH), markup=False, highlight=False,
                      soft_wrap=True)
    result = QuizResult(kata.name, tuple(outcomes))
    console.print("\n" + score_line(result), style="bold", markup=False, highlight=False)
    if UNANSWERED in outcomes:
        console.print(_("Skipped questions come back when you run kata quiz {kata} again.",
                        kata=kata.id), style="dim", markup=False, highlight=False)
    return result


def cmd_quiz(app: App, args: argparse.Namespace) -> int:
    """A kata's interviewer follow-up questions, asked and marked one by one (see
    run_quiz). Nothing is recorded."""
    app.refuse_during_mock("refused.quiz")
    kata = resolve(args.kata) if args.kata else app.first_unfinished(app.store.read())
    if kata is None:
        app.print(_("Every kata passes: name one to quiz yourself on, e.g. kata quiz 03"))
        return 0
    result = run_quiz(kata, app.console, read_line_from(app.console, app.interactive),
                      app.markdown)
    return 0 if result.all_correct else 1
