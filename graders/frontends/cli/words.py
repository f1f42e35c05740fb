"""The CLI's words for what the practice service says (graders.practice.messages): each
message key worded for a terminal, naming the `kata` commands."""

from __future__ import annotations

from graders.core.i18n import _
from graders.practice import SHARED_WORDS, Message, Said, Words, worded

WORDS: Words = {
    **SHARED_WORDS,
    "restore.none": lambda kata: _("{kata} has no backups yet: kata reset and kata mock make one "
                                   "before they replace your file.", kata=kata),
    "restore.no_such": lambda **f: _("{kata} has no backup {choice}: its backups are numbered 1 "
                                     "to {count} (kata restore {id} --list shows them)", **f),
    "refused.restore": lambda kata: _("a mock interview of {kata} is running: bringing back a "
                                      "backup of {kata} must wait until you hand it in (kata mock "
                                      "--submit).", kata=kata),
    "refused.solution": lambda kata: _("a mock interview of {kata} is running: the solution must "
                                       "wait until you hand it in (kata mock --submit).", kata=kata),
    "refused.hint": lambda kata: _("a mock interview of {kata} is running: hints must wait until "
                                   "you hand it in (kata mock --submit).", kata=kata),
    "refused.quiz": lambda kata: _("a mock interview of {kata} is running: the quiz, which "
                                   "explains its answers, must wait until you hand it in (kata "
                                   "mock --submit).", kata=kata),
    "mock.running": lambda kata: _("a mock interview of {kata} is running: hand it in first "
                                   "(kata mock --submit), or end it (kata mock --abort)", kata=kata),
    "mock.none_to_submit": lambda: _("no mock interview is running: start one with kata mock"),
    "mock.started": lambda **f: _("You have {time} (until {clock}). Edit {file}, then hand it in "
                                  "with kata mock --submit. It is an interview: no hints and no "
                                  "solution until you hand it in; answer the interviewer "
                                  "follow-ups aloud.", **f),
    "mock.backup_kept": lambda id, backup: _("Your file from before the mock: kata restore {id} "
                                             "--list shows it ({backup}).", id=id, backup=backup),
}


def text(said: Message | Said) -> str:
    """``said`` (a message, or an error the service raised) in the CLI's words."""
    return worded(WORDS, said)
