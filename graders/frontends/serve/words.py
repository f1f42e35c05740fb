"""The room's words for what the practice service says (graders.practice.messages): each
message key worded for the page, naming its buttons (Hand in, Restore) where the terminal
names commands. A refusal in the room is the room's own."""

from __future__ import annotations

from typing import Callable

from graders.core.i18n import _
from graders.core.results import shown
from graders.practice.common import Said, outcome_word
from graders.practice.messages import Message

WORDS: dict[str, Callable[..., str]] = {
    "file.backed_up": lambda backup: _("your file is backed up as {backup}", backup=backup),
    "reset.untouched": lambda file: _("{file} is already the untouched skeleton.", file=file),
    "reset.done": lambda file: _("{file} is the skeleton again.", file=file),
    "restore.none": lambda kata: _("{kata} has no backups yet: Reset and a mock interview make "
                                   "one before they replace your file.", kata=kata),
    "restore.same": lambda file, backup: _("{file} is already the same as {backup}.", file=file,
                                           backup=backup),
    "restore.done": lambda **f: _("{file} is back to the backup of {time} ({backup}).", **f),
    "refused.restore": lambda kata: _("a mock interview of {kata} is running: bringing back a "
                                      "backup must wait until you hand it in (Hand in).", kata=kata),
    "refused.solution": lambda kata: _("a mock interview of {kata} is running: the solution must "
                                       "wait until you hand it in (Hand in).", kata=kata),
    "refused.hint": lambda kata: _("a mock interview of {kata} is running: hints must wait until "
                                   "you hand it in.", kata=kata),
    "refused.quiz": lambda kata: _("a mock interview of {kata} is running: the quiz must wait "
                                   "until you hand it in.", kata=kata),
    "mock.running": lambda kata: _("a mock interview of {kata} is running: hand it in first "
                                   "(Hand in), or end it (Abort)", kata=kata),
    "mock.none_to_abort": lambda: _("no mock interview is running: nothing to abort"),
    "mock.none_to_submit": lambda: _("no mock interview is running: start one with Start a mock "
                                     "on the home page"),
    "mock.aborted": lambda kata, taken: _("mock interview of {kata} aborted after {taken} "
                                          "(recorded as aborted); hints, the solution and backups "
                                          "are open again.", kata=kata, taken=taken),
    "mock.backup_kept": lambda id, backup: _("Your file from before the mock is a backup: press "
                                             "Restore to bring it back ({backup}).", backup=backup),
    "mock.late": lambda kata, outcome, minutes, status: _(
        "mock interview of {kata}: {outcome} after {minutes} min (graded as it stood: {status})",
        kata=kata, outcome=outcome_word(outcome), minutes=minutes, status=shown(status)),
    "mock.in_time": lambda kata, outcome, taken, allowed: _(
        "mock interview of {kata}: {outcome} in {taken} of {allowed}", kata=kata,
        outcome=outcome_word(outcome), taken=taken, allowed=allowed),
}

STATUS = {"mock.running": 409}  # a usage error the room answers as a refusal


def text(said: Message | Said) -> str:
    """``said`` (a message, or an error the service raised) in the room's words."""
    if isinstance(said, Said):
        return WORDS[said.key](**said.fields) if said.key else str(said)
    return WORDS[said.key](**said.fields)


def lines(messages: list[Message]) -> str:
    return "\n".join(text(said) for said in messages)
