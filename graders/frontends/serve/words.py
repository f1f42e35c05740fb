"""The room's words for what the practice service says (graders.practice.messages): each
message key worded for the page, naming its buttons (Hand in, Restore) where the terminal
names commands. A refusal in the room is the room's own."""

from __future__ import annotations

from graders.core.i18n import _
from graders.practice import SHARED_WORDS, Message, Said, Words, worded

WORDS: Words = {
    **SHARED_WORDS,
    "restore.none": lambda kata: _("{kata} has no backups yet: Reset and a mock interview make "
                                   "one before they replace your file.", kata=kata),
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
    "mock.none_to_submit": lambda: _("no mock interview is running: start one with Start a mock "
                                     "on the home page"),
    "mock.started": lambda kata, time, clock, file: _(
        "mock interview of {kata}: {time} (until {clock}). Edit the file, then press Hand in; no "
        "hints and no solution until then.", kata=kata, time=time, clock=clock),
    "mock.backup_kept": lambda id, backup: _("Your file from before the mock is a backup: press "
                                             "Restore to bring it back ({backup}).", backup=backup),
}

STATUS = {"mock.running": 409}  # a usage error the room answers as a refusal


def text(said: Message | Said) -> str:
    """``said`` (a message, or an error the service raised) in the room's words."""
    return worded(WORDS, said)


def lines(messages: list[Message]) -> str:
    return "\n".join(text(said) for said in messages)
