"""What a kata's quiz is made of: :class:`Question` (a prompt, its answer and the
reasoning shown once answered), the kinds of answer, and the formulas and units several
katas' questions compute their numbers with. Each kata's questions live in its
``graders/<module>/meta.py`` (``QUESTIONS``), with the small functions only they use;
how one answer is marked is here too (:func:`marked`), for every front end: the notebooks'
quiz (graders.frontends.quiz), ``kata quiz`` and the room. Light: no torch.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from graders.core.i18n import N_, _, listing, translate

INTEGER, NUMBER, CHOICE = "integer", "number", "choice"  # the kinds of answer
CORRECT, WRONG, UNANSWERED = "correct", "wrong", "unanswered"


@dataclass(frozen=True)
class Question:
    prompt: str  # markdown, one paragraph
    answer: int | float | str  # an int (INTEGER), a float (NUMBER) or a letter (CHOICE)
    kind: str  # INTEGER | NUMBER | CHOICE
    reasoning: str  # revealed once the question has been answered
    choices: tuple[str, ...] = ()  # CHOICE only: the options, lettered A, B, C, ... in order
    rel_tolerance: float = 0.0  # NUMBER only: |given - answer| <= rel_tolerance * |answer|

    def __post_init__(self):
        if self.kind == CHOICE:
            assert self.answer in letters(len(self.choices)), (self.prompt, self.answer)
        if self.kind == NUMBER:
            assert self.rel_tolerance > 0, self.prompt

    @property
    def answer_format(self) -> str:
        """What the learner types, for the comment in the answers cell."""
        if self.kind == INTEGER:
            return _("a whole number")
        if self.kind == NUMBER:
            return _("a number (within {tolerance})", tolerance=percent(self.rel_tolerance))
        return _("a letter: {letters}",
                 letters=letter_choices(len(self.choices)))

    @property
    def answer_format_in_code(self) -> str:
        """:attr:`answer_format` as a notebook's answers cell says it: a letter is a string
        (its letters listed as prose lists them, quoted on every side in English, bare in
        Chinese: 一个字母（字符串，如 "A"）：A、B、C 或 D)."""
        if self.kind != CHOICE:
            return self.answer_format
        return _("a letter, as a string: {letters}", letters=letter_choices(len(self.choices)))

    @property
    def shown_answer(self) -> str:
        """The answer as a wrong answer's verdict shows it: with the decimals the question
        asks for ("... (3 decimals)?"), else with as many significant digits as its
        tolerance can tell apart (never a float's 16 digits)."""
        if self.kind != NUMBER or not isinstance(self.answer, float):
            return str(self.answer)
        asked = re.search(r"\((\d+) decimals?\)", self.prompt)
        if asked:
            return f"{self.answer:.{int(asked.group(1))}f}"
        digits = max(2, math.ceil(-math.log10(self.rel_tolerance)) + 1)
        shown = f"{self.answer:.{digits}g}"
        if "e" in shown and abs(self.answer) < 10 ** digits:  # e.g. 1.31e+05: write it out
            shown = f"{self.answer:.0f}"
        return shown

    def markdown(self, number: int) -> str:
        """The question as the notebook shows it: numbered, with its lettered options."""
        lines = [f"**{number}.** {translate(self.prompt)}"]
        lines += [f"   - **{letter}** {translate(choice)}"
                  for letter, choice in zip(letters(len(self.choices)), self.choices)]
        return "\n".join(lines)

    def judge(self, given) -> str:
        """CORRECT, WRONG or UNANSWERED (None, or an empty string)."""
        if given is None or (isinstance(given, str) and not given.strip()):
            return UNANSWERED
        if self.kind == CHOICE:
            return CORRECT if str(given).strip().upper() == self.answer else WRONG
        number = _as_number(given)
        if number is None:
            return WRONG
        if self.kind == INTEGER:
            return CORRECT if number == self.answer else WRONG
        return CORRECT if abs(number - self.answer) <= self.rel_tolerance * abs(self.answer) else WRONG


def percent(fraction: float) -> str:
    """A tolerance as a percentage, never rounded to 0 %: 0.002 -> "0.2%", 0.01 -> "1%"."""
    return f"{round(fraction * 100, 6):g}%"


def letters(count: int) -> tuple[str, ...]:
    return tuple("ABCDEFGH"[:count])


def letter_choices(count: int) -> str:
    """The letters a learner may type, listed: "'A', 'B', 'C' or 'D'" (Chinese: A、B、C 或 D)."""
    shown = [_("'{letter}'", letter=letter) for letter in letters(count)]
    return listing(shown, last=N_("{items}, {last}"))


def _as_number(given) -> float | None:
    """A learner's number: an int or float, or a string such as "1_050_624" or "6.28"."""
    if isinstance(given, bool):
        return None
    if isinstance(given, (int, float)):
        return given
    try:
        return float(str(given).replace(",", "").replace("_", "").strip())
    except ValueError:
        return None


# --- formulas and units several katas' questions use (the self-tests check them against PyTorch) ---

def mha_parameters(d_model: int, bias: bool = True) -> int:
    """nn.MultiheadAttention(d_model, h): W_q, W_k, W_v, W_o (d x d each) and four biases."""
    return 4 * d_model * d_model + (4 * d_model if bias else 0)


def encoder_layer_parameters(d_model: int, dim_feedforward: int) -> int:
    """nn.TransformerEncoderLayer: attention, two linears with bias, two LayerNorms (w and b)."""
    feed_forward = (d_model * dim_feedforward + dim_feedforward) + (dim_feedforward * d_model + d_model)
    norms = 2 * (2 * d_model)
    return mha_parameters(d_model) + feed_forward + norms


GiB = 2**30
MiB = 2**20


REASONING_WIDTH = 88  # a terminal front end wraps the reasoning to this many columns
REASONING_INDENT = "   "  # the reasoning's lines, under the verdict


@dataclass(frozen=True)
class QuizResult:
    kata: str
    outcomes: tuple[str, ...]  # CORRECT | WRONG | UNANSWERED, one per question

    @property
    def all_correct(self) -> bool:
        return all(outcome == CORRECT for outcome in self.outcomes)

    @property
    def score(self) -> int:
        return sum(outcome == CORRECT for outcome in self.outcomes)

    def __repr__(self) -> str:
        return f"QuizResult({self.kata}: {self.score}/{len(self.outcomes)} correct)"


def marked(number: int, question: Question, given) -> tuple[str, str]:
    """Mark one answer: (CORRECT, WRONG or UNANSWERED, the text to show: the verdict, then
    the reasoning when it was answered). The notebooks' quiz and ``kata quiz`` both mark
    with this."""
    outcome = question.judge(given)
    if outcome == UNANSWERED:
        return outcome, f"{number}. " + _("unanswered ({format})", format=question.answer_format)
    if outcome == CORRECT:
        verdict = _("correct")
    else:
        given_shown, answer = _shown_given(given), question.shown_answer
        if question.kind == CHOICE and isinstance(given, str) and given_shown == given.strip():
            given_shown, answer = (_("'{letter}'", letter=given_shown),
                                   _("'{letter}'", letter=answer))  # both sides alike
        verdict = _("wrong: you said {given}, the answer is {answer}", given=given_shown,
                    answer=answer)
    reasoning = "\n".join(REASONING_INDENT + line
                          for line in translate(question.reasoning).splitlines())
    return outcome, f"{number}. {verdict}\n{reasoning}"  # unwrapped: the front end lays it out


def _shown_given(given) -> str:
    """A wrong answer as its verdict repeats it: a number or a one-word string as written
    (``12``, ``C``, ``6.28``), anything else as Python writes it (``''``, ``'a b'``, ``[1]``)
    so that what was given, an empty or spaced string included, is never hidden."""
    if isinstance(given, str) and given.strip() and given.strip().isprintable() \
            and " " not in given.strip():
        return given.strip()
    return repr(given)


def score_line(result: QuizResult) -> str:
    score = dict(score=result.score, total=len(result.outcomes))
    return (_("{score}/{total} correct: well done", **score) if result.all_correct
            else _("{score}/{total} correct", **score))
