"""kata reset, kata restore and kata solution: the learner's file replaced (backed up
first), brought back from a backup, or the reference shown."""

from __future__ import annotations

import argparse
import datetime
from pathlib import Path

from graders.core.i18n import _
from graders.frontends.cli.app import App
from graders.frontends.cli.common import BACKUP_STAMP, UsageError, iso, resolve
from graders.frontends.cli.state import write_atomically

def cmd_reset(app: App, args: argparse.Namespace) -> int:
    kata = resolve(args.kata)
    path = app.learner_file(kata)
    if app.is_untouched(kata):
        app.print(_("{file} is already the untouched skeleton.", file=app.show_path(path)))
        return 0
    if not app.confirm(_("Replace {file} with the skeleton? (your file is backed up first)",
                         file=app.show_path(path)), args.yes):
        app.print(_("Nothing changed."))
        return 1
    if path.is_file():
        app.print(_("your file is backed up as {backup}", backup=app.show_path(app.backup(kata))))
    app.restore_skeleton(kata)
    app.print(_("{file} is the skeleton again.", file=app.show_path(path)))
    return 0


def backup_time(path: Path) -> str:
    """When a backup was made, from the stamp in its name (its file time otherwise)."""
    stamp = BACKUP_STAMP.search(path.stem)
    if stamp:
        return datetime.datetime.strptime(stamp.group(1), "%Y%m%d-%H%M%S").strftime("%Y-%m-%d %H:%M:%S")
    return iso(path.stat().st_mtime).replace("T", " ")


def cmd_restore(app: App, args: argparse.Namespace) -> int:
    kata = resolve(args.kata)
    mock = app.running_mock()
    if mock is not None and mock["kata"] == kata.name:
        app.refuse_during_mock(_("a mock interview of {kata} is running: bringing back a backup "
                                 "of {kata} must wait until you hand it in (kata mock --submit)."))
    path = app.learner_file(kata)
    backups = app.backups(kata)
    if not backups:
        app.print(_("{kata} has no backups yet: kata reset and kata mock make one before they "
                    "replace your file.", kata=kata.name))
        return 1
    current = path.read_bytes() if path.is_file() else None
    if args.list:
        app.print(_("backups of {file}, newest first (kata restore {kata} N brings number N "
                    "back):", file=app.show_path(path), kata=kata.id))
        for number, backup in enumerate(backups, start=1):
            notes = [_("latest")] if number == 1 else []
            if current is not None and backup.read_bytes() == current:
                notes.append(_("same as your file"))
            lines = _("{count} lines", count=f"{len(backup.read_bytes().splitlines()):>4}")
            app.print(f"  {number:>2}  {backup_time(backup)}  {lines}  "  # one line each, never wrapped
                      f"{app.show_path(backup)}" + (f"  ({', '.join(notes)})" if notes else ""),
                      markup=False, plain=True)
        return 0
    choice = args.backup or "1"
    if choice.isdigit() and 1 <= int(choice) <= len(backups):
        chosen = backups[int(choice) - 1]
    else:
        named = [b for b in backups if choice in (b.name, b.stem)]
        if not named:
            raise UsageError(_("{kata} has no backup {choice}: its backups are numbered 1 to "
                               "{count} (kata restore {id} --list shows them)", kata=kata.name,
                               choice=repr(choice), count=len(backups), id=kata.id))
        chosen = named[0]
    if current is not None and chosen.read_bytes() == current:
        app.print(_("{file} is already the same as {backup}.", file=app.show_path(path),
                    backup=app.show_path(chosen)))
        return 0
    if current is not None and not app.is_untouched(kata):
        app.print(_("your file is backed up as {backup}", backup=app.show_path(app.backup(kata))))
    write_atomically(path, chosen.read_bytes())

    def record(state: dict) -> None:
        app.touch(state, kata)

    app.store.update(record)
    app.print(_("{file} is back to the backup of {time} ({backup}).", file=app.show_path(path),
                time=backup_time(chosen), backup=app.show_path(chosen)))
    return 0


def cmd_solution(app: App, args: argparse.Namespace) -> int:
    kata = resolve(args.kata)
    app.refuse_during_mock(_("a mock interview of {kata} is running: the solution must wait "
                             "until you hand it in (kata mock --submit)."))
    if not app.confirm(_("Show the reference solution of {kata}? Your report will say you saw "
                         "it.", kata=kata.name), args.yes):
        app.print(_("Not shown."))
        return 1

    def record(state: dict) -> None:
        now = app.clock()
        state["revealed"].setdefault(kata.name, {"at": iso(now), "t": now})
        app.touch(state, kata)

    app.store.update(record)
    app.code(kata.solution_path.read_text(encoding="utf-8"))
    app.print("\n" + _("Now close it and write it yourself: kata reset {kata}, or kata mock "
                       "{kata}.", kata=kata.id))
    return 0
