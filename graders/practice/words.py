"""The words both front ends give a message of the practice service alike (the CLI and the
room differ where one names commands and the other buttons: graders.frontends.cli.words,
graders.frontends.serve.words), and the one way a front end words what was said."""

from __future__ import annotations

from typing import Callable

from graders.core.i18n import _
from graders.core.results import shown
from graders.practice.common import Said, outcome_word
from graders.practice.messages import Message

Words = dict[str, Callable[..., str]]

SHARED_WORDS: Words = {
    "file.backed_up": lambda backup, dropped=0: _("your file is backed up as {backup}",
                                                  backup=backup) + dropped_words(dropped),
    "reset.untouched": lambda file: _("{file} is already the untouched skeleton.", file=file),
    "reset.done": lambda file: _("{file} is the skeleton again.", file=file),
    "restore.same": lambda file, backup: _("{file} is already the same as {backup}.", file=file,
                                           backup=backup),
    "restore.done": lambda **f: _("{file} is back to the backup of {time} ({backup}).", **f),
    "mock.none_to_abort": lambda: _("no mock interview is running: nothing to abort"),
    "mock.aborted": lambda kata, taken: _("mock interview of {kata} aborted after {taken} "
                                          "(recorded as aborted); hints, the solution and backups "
                                          "are open again.", kata=kata, taken=taken),
    "mock.late": lambda kata, outcome, minutes, status: _(
        "mock interview of {kata}: {outcome} after {minutes} min (graded as it stood: {status})",
        kata=kata, outcome=outcome_word(outcome), minutes=minutes, status=shown(status)),
    "review.started": lambda kata: _("A review of {kata} has started: write it again from the "
                                     "skeleton. Passing it without hints or the solution spaces "
                                     "the next review further out.", kata=kata),
    "mock.in_time": lambda kata, outcome, taken, allowed: _(
        "mock interview of {kata}: {outcome} in {taken} of {allowed}", kata=kata,
        outcome=outcome_word(outcome), taken=taken, allowed=allowed),
}


def dropped_words(dropped: int) -> str:
    """What a new backup removed (graders.practice.workspace bounds a kata's backups), as a
    sentence after the one that names the backup; "" when nothing was removed."""
    from graders.practice.workspace import MAX_BACKUP_BYTES, MAX_BACKUPS

    if not dropped:
        return ""
    return " " + _("To make room, the oldest backups of this kata were removed ({count}): a kata "
                   "keeps its {most} newest backups, {size} MiB in all at most.", count=dropped, most=MAX_BACKUPS,
                   size=MAX_BACKUP_BYTES >> 20)


def worded(words: Words, said: Message | Said) -> str:
    """``said`` (a message, or an error the service raised) in ``words``."""
    if isinstance(said, Said):
        return words[said.key](**said.fields) if said.key else str(said)
    return words[said.key](**said.fields)


def review_reason_word(reason: str) -> str:
    """Why a kata is due for review (graders.practice.review's reasons), in the learner's
    language."""
    from graders.practice import review

    return {review.RECURRING: _("a mistake recurred"),
            review.AFTER_HINTS: _("passed after hints"),
            review.AFTER_SOLUTION: _("the solution was seen"),
            review.MOCK_TIMED_OUT: _("a mock ran out of time"),
            review.STARTED_BY_YOU: _("started by you")}.get(reason, reason)
