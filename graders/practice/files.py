"""The learner's file replaced by the skeleton (backed up first), brought back from a
backup, or the reference solution revealed: the work of kata reset, kata restore and kata
solution and of the room's Reset, Restore and Solution buttons, as data."""

from __future__ import annotations

import datetime
from pathlib import Path

from graders.core.registry import Kata
from graders.practice.common import BACKUP_STAMP, UsageError, iso
from graders.practice.messages import Message, Outcome, message
from graders.practice.state import write_atomically
from graders.practice.workspace import Workspace


def already_skeleton(practice: Workspace, kata: Kata) -> Message | None:
    """What a reset would say without doing anything: the file is the untouched skeleton."""
    if practice.is_untouched(kata):
        return message("reset.untouched", file=practice.show_path(practice.learner_file(kata)))
    return None


def reset(practice: Workspace, kata: Kata) -> Outcome:
    """Back the learner's file up (when there is one), then write the skeleton over it."""
    path = practice.learner_file(kata)
    outcome = Outcome()
    if path.is_file():
        outcome.say("file.backed_up", backup=practice.show_path(practice.backup(kata)),
                        dropped=practice.dropped_backups)
    practice.restore_skeleton(kata)
    return outcome.say("reset.done", file=practice.show_path(path))


def backup_time(path: Path) -> str:
    """When a backup was made, from the stamp in its name (its file time otherwise)."""
    stamp = BACKUP_STAMP.search(path.stem)
    if stamp:
        return datetime.datetime.strptime(stamp.group(1), "%Y%m%d-%H%M%S").strftime("%Y-%m-%d %H:%M:%S")
    return iso(path.stat().st_mtime).replace("T", " ")


def refuse_restore_during_mock(practice: Workspace, kata: Kata) -> None:
    """A backup of the kata of a running mock waits until the mock is handed in."""
    mock = practice.running_mock()
    if mock is not None and mock["kata"] == kata.name:
        practice.refuse_during_mock("refused.restore")


def no_backups(practice: Workspace, kata: Kata) -> Message | None:
    if practice.backups(kata):
        return None
    return message("restore.none", kata=kata.name)


def backup_list(practice: Workspace, kata: Kata) -> list[dict]:
    """The kata's backups, newest first: number, time, lines, path, and whether it is the
    latest and the same as the learner's file."""
    path = practice.learner_file(kata)
    current = path.read_bytes() if path.is_file() else None
    rows = []
    for number, backup in enumerate(practice.backups(kata), start=1):
        data = backup.read_bytes()
        rows.append({"number": number, "time": backup_time(backup),
                     "lines": len(data.splitlines()), "path": practice.show_path(backup),
                     "latest": number == 1, "same": current is not None and data == current})
    return rows


def restore(practice: Workspace, kata: Kata, choice: str | None = None) -> Outcome:
    """Bring back backup ``choice`` (a number from 1, newest first, or a file name; the
    latest by default), the learner's file backed up first unless it is the skeleton."""
    refuse_restore_during_mock(practice, kata)
    empty = no_backups(practice, kata)
    if empty is not None:
        return Outcome([empty], ok=False)
    path = practice.learner_file(kata)
    backups = practice.backups(kata)
    current = path.read_bytes() if path.is_file() else None
    choice = choice or "1"
    if choice.isdigit() and 1 <= int(choice) <= len(backups):
        chosen = backups[int(choice) - 1]
    else:
        named = [b for b in backups if choice in (b.name, b.stem)]
        if not named:
            raise UsageError(key="restore.no_such", kata=kata.name, choice=repr(choice),
                             count=len(backups), id=kata.id)
        chosen = named[0]
    outcome = Outcome()
    if current is not None and chosen.read_bytes() == current:
        return outcome.say("restore.same", file=practice.show_path(path),
                           backup=practice.show_path(chosen))
    if current is not None and not practice.is_untouched(kata):
        outcome.say("file.backed_up", backup=practice.show_path(practice.backup(kata)),
                        dropped=practice.dropped_backups)
    write_atomically(path, chosen.read_bytes())
    practice.store.update(lambda state: practice.touch(state, kata))
    return outcome.say("restore.done", file=practice.show_path(path), time=backup_time(chosen),
                       backup=practice.show_path(chosen))


def reveal_solution(practice: Workspace, kata: Kata) -> str:
    """The reference solution's source, its reveal recorded (the report says so); refused
    while a mock interview runs."""
    practice.refuse_during_mock("refused.solution")

    def record(state: dict) -> None:
        now = practice.clock()
        state["revealed"].setdefault(kata.name, {"at": iso(now), "t": now})
        practice.touch(state, kata)

    practice.store.update(record)
    return kata.solution_path.read_text(encoding="utf-8")
