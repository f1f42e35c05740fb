"""The CLI's words for what the practice service says (graders.practice.messages): each
message key worded for a terminal, naming the `kata` commands."""

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
    "restore.none": lambda kata: _("{kata} has no backups yet: kata reset and kata mock make one "
                                   "before they replace your file.", kata=kata),
    "restore.no_such": lambda **f: _("{kata} has no backup {choice}: its backups are numbered 1 "
                                     "to {count} (kata restore {id} --list shows them)", **f),
    "restore.same": lambda file, backup: _("{file} is already the same as {backup}.", file=file,
                                           backup=backup),
    "restore.done": lambda **f: _("{file} is back to the backup of {time} ({backup}).", **f),
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
    "mock.none_to_abort": lambda: _("no mock interview is running: nothing to abort"),
    "mock.none_to_submit": lambda: _("no mock interview is running: start one with kata mock"),
    "mock.started": lambda **f: _("You have {time} (until {clock}). Edit {file}, then hand it in "
                                  "with kata mock --submit. It is an interview: no hints and no "
                                  "solution until you hand it in; answer the interviewer "
                                  "follow-ups aloud.", **f),
    "mock.aborted": lambda kata, taken: _("mock interview of {kata} aborted after {taken} "
                                          "(recorded as aborted); hints, the solution and backups "
                                          "are open again.", kata=kata, taken=taken),
    "mock.backup_kept": lambda id, backup: _("Your file from before the mock: kata restore {id} "
                                             "--list shows it ({backup}).", id=id, backup=backup),
    "mock.late": lambda kata, outcome, minutes, status: _(
        "mock interview of {kata}: {outcome} after {minutes} min (graded as it stood: {status})",
        kata=kata, outcome=outcome_word(outcome), minutes=minutes, status=shown(status)),
    "mock.in_time": lambda kata, outcome, taken, allowed: _(
        "mock interview of {kata}: {outcome} in {taken} of {allowed}", kata=kata,
        outcome=outcome_word(outcome), taken=taken, allowed=allowed),
}


def text(said: Message | Said) -> str:
    """``said`` (a message, or an error the service raised) in the CLI's words."""
    if isinstance(said, Said):
        return WORDS[said.key](**said.fields) if said.key else str(said)
    return WORDS[said.key](**said.fields)
