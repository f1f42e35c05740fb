"""The hint ladder as data: the next rung revealed and recorded, the rungs so far, and the
mistake of the last attempt with its own hint. The work of kata hint and the room's Hint."""

from __future__ import annotations

from graders.core.catalogue import MISTAKES, mistake
from graders.core.i18n import translate
from graders.core.registry import HINT_LEVELS, Kata
from graders.practice.common import hint_level, last_attempt
from graders.practice.workspace import Workspace


def reveal_next_hint(practice: Workspace, kata: Kata) -> tuple[int, bool]:
    """Reveal the next rung of ``kata``'s hint ladder (recorded in the state): the rung now
    revealed (1-based) and whether every rung was already revealed. Refused while a mock
    interview runs."""
    practice.refuse_during_mock("refused.hint")
    top = len(kata.hints)

    def reveal_next(state: dict) -> tuple[int, bool]:
        level = hint_level(state, kata)
        state["hints"][kata.name] = min(level + 1, top)
        practice.touch(state, kata)
        return min(level + 1, top), level == top

    return practice.store.update(reveal_next)


def revealed(practice: Workspace, kata: Kata) -> int:
    """How many rungs of ``kata``'s ladder are revealed."""
    return hint_level(practice.store.read(), kata)


def rung(kata: Kata, number: int) -> dict:
    """Rung ``number`` (1-based) of ``kata``'s ladder: its level's name, its text in the
    learner's language, and whether it is code (near-code: never wrapped)."""
    level = HINT_LEVELS[number - 1]
    return {"number": number, "total": len(kata.hints), "level": level,
            "text": translate(kata.hints[number - 1]), "code": level == "near-code"}


def last_mistake(practice: Workspace, kata: Kata) -> dict | None:
    """The catalogued mistake the last graded attempt of ``kata`` made, with its explanation
    and hint in the learner's language; None when it made none."""
    latest = last_attempt(practice.store.read(), kata)
    if not (latest and latest.get("slugs") and latest["slugs"][0] in MISTAKES):
        return None
    slug = latest["slugs"][0]
    words = mistake(slug, kata.id)  # in the kata's own terms where it words the slug itself
    return {"at": latest["at"], "slug": slug, "explanation": translate(words.explanation),
            "hint": translate(words.hint)}
