"""kata mock: a timed mock interview - started from the skeleton with the README's
follow-ups reduced to their questions, handed in (--submit), aborted (--abort), or handed in
by any command once its time has run out."""

from __future__ import annotations

import argparse
import math
import re

from rich.console import Console

from graders.core import registry
from graders.core.i18n import _, translate
from graders.core.results import ALL_PASSED, KataResult, shown
from graders.frontends.cli.app import App
from graders.frontends.cli.common import (ABORTED, FOLLOW_UPS_HEADINGS, TIME_RAN_OUT, UsageError,
                                          best_status, clock_time, countdown, iso, outcome_word,
                                          resolve)

def _without_parentheses(text: str) -> str:
    """``text`` less its parenthesised remarks (those outside `code`, in ASCII or full-width
    parentheses), spaces tidied."""
    kept, depth, in_code = [], 0, False
    for char in text:
        if char == "`":
            in_code = not in_code
        elif not in_code and char in "(（":  # ASCII and full-width (the Chinese READMEs)
            depth += 1
            continue
        elif not in_code and char in ")）" and depth:
            depth -= 1
            continue
        if depth == 0:
            kept.append(char)
    return re.sub(r"\s+([?.,;:!])", r"\1", re.sub(r"\s+", " ", "".join(kept))).strip()


def questions_only(readme: str) -> str:
    """A kata README with its interviewer follow-ups reduced to the questions, for a mock
    interview: the answers the README gives in parentheses (e.g. "Why divide by
    `sqrt(d_k)`? (Dot products ... vanish.)") or in <details> blocks are left out."""
    lines = readme.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(FOLLOW_UPS_HEADINGS)), None)
    if start is None:
        return readme
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    section = re.sub(r"<details>.*?</details>", "", "\n".join(lines[start + 1:end]),
                     flags=re.S | re.I)
    blocks: list[list[str]] = []  # [marker, text]: a list item ("-", "1.") or a paragraph ("")
    open_block = False  # whether the next indented or plain line continues the last block
    for line in section.splitlines():
        item = re.match(r"\s*([-*+]|\d+[.)])\s+(.*)", line)
        if item:
            blocks.append([item.group(1), item.group(2)])
        elif line.strip() and open_block:
            blocks[-1][1] += " " + line.strip()
        elif line.strip():
            blocks.append(["", line.strip()])
        open_block = bool(line.strip())
    questions: list[str] = []
    for marker, text in blocks:
        text = _without_parentheses(text)
        if text and marker:
            questions.append(f"{marker} {text}")
        elif text:
            questions += ["", text, ""]
    body = re.sub(r"\n{3,}", "\n\n", "\n".join(["", "", *questions, ""]))
    return "\n".join(lines[:start + 1]) + body + "\n" + "\n".join(lines[end:])


MINUTES_RANGE = (1, 600)  # a mock's time: a minute to ten hours


def minutes_allowed(minutes) -> bool:
    """Whether ``minutes`` is a mock's time: a finite number from 1 to 600 (never inf, nan)."""
    return (isinstance(minutes, (int, float)) and not isinstance(minutes, bool)
            and math.isfinite(minutes) and MINUTES_RANGE[0] <= minutes <= MINUTES_RANGE[1])


def cmd_mock(app: App, args: argparse.Namespace) -> int:
    if args.submit:
        return submit_mock(app)
    if args.abort:
        return abort_mock(app)
    state = app.store.read()
    running = state["mock"]
    if running is not None:
        kata = registry.get(running["kata"])
        if (args.kata and resolve(args.kata) != kata) or args.random:
            raise UsageError(_("a mock interview of {kata} is running: hand it in first "
                               "(kata mock --submit), or end it (kata mock --abort)",
                               kata=kata.name))
        show_running_mock(app, running)
        return 0
    if args.minutes is not None and not minutes_allowed(args.minutes):
        raise UsageError(_("--minutes must be a number of minutes from {low} to {high}",
                           low=MINUTES_RANGE[0], high=MINUTES_RANGE[1]))
    if args.kata and args.random:
        raise UsageError(_("kata mock takes a kata or --random, not both"))
    if args.kata:
        kata = resolve(args.kata)
    elif args.random:
        not_passed = [k for k in registry.KATAS if best_status(state, k) != ALL_PASSED]
        kata = app.rng.choice(not_passed or list(registry.KATAS))
    else:  # a bare `kata mock` only says how to start one: it resets a file
        app.print(how_to_start_a_mock())
        return 0
    minutes = kata.target_minutes if args.minutes is None else args.minutes
    path = app.learner_file(kata)
    if not app.is_untouched(kata):
        if not app.confirm(_("A mock starts from the skeleton: back up {file} and reset it?",
                             file=app.show_path(path)), args.yes):
            app.print(_("No mock started."))
            return 1
        backup = app.backup(kata) if path.is_file() else None
        if backup is not None:
            app.print(_("your file is backed up as {backup}", backup=app.show_path(backup)))
        app.restore_skeleton(kata)
    else:
        backup = None

    def start(state: dict) -> dict:
        now = app.clock()
        state["mock"] = {"kata": kata.name, "started": now, "deadline": now + minutes * 60,
                         "minutes": minutes}
        if backup is not None:  # what kata mock --abort offers to bring back
            state["mock"]["backup"] = backup.name
        app.touch(state, kata)
        return state["mock"]

    mock = app.store.update(start)
    app.heading(_("mock interview: {kata} - {title}", kata=kata.name, title=translate(kata.title)),
                style="bold")
    readme = app.readme(kata)
    if readme.is_file():
        app.markdown(questions_only(readme.read_text(encoding="utf-8")))
    else:
        app.print(_("{title}: {readme} is missing; the skeleton's docstrings state the task.",
                    title=translate(kata.title), readme=app.show_path(readme)))
    app.heading(style="bold")
    app.print(_("You have {time} (until {clock}). Edit {file}, then hand it in with kata mock "
                "--submit. It is an interview: no hints and no solution until you hand it in; "
                "answer the interviewer follow-ups aloud.",
                time=countdown(mock["deadline"] - mock["started"]),
                clock=clock_time(mock["deadline"]), file=app.show_path(path)), style="bold")
    return 0


def how_to_start_a_mock() -> str:
    return _("No mock interview is running. Start one with kata mock KATA (e.g. kata mock 03), "
             "or kata mock --random for a kata you have not passed yet. It resets the kata's "
             "file to the skeleton (yours is backed up first) and starts the clock.")


def abort_mock(app: App) -> int:
    """End the running mock without grading it; recorded as "aborted", with the status of
    the file as far as it is known without grading it."""
    mock = app.running_mock()
    if mock is None:
        raise UsageError(_("no mock interview is running: nothing to abort"))
    kata = registry.get(mock["kata"])
    now = app.clock()
    taken = max(0.0, min(now, mock["deadline"]) - mock["started"])

    def finish(state: dict) -> None:
        state["mock"] = None
        state["mocks"].append({"kata": kata.name, "started": iso(mock["started"]),
                               "minutes": mock["minutes"], "taken_s": round(taken, 1),
                               "status": app.known_status(state, kata), "outcome": ABORTED,
                               "slugs": []})
        app.touch(state, kata, cap=mock["minutes"] * 60)

    app.store.update(finish)
    app.print(_("mock interview of {kata} aborted after {taken} (recorded as aborted); hints, "
                "the solution and backups are open again.", kata=kata.name,
                taken=countdown(taken)), style="bold")
    if isinstance(mock.get("backup"), str):
        app.print(_("Your file from before the mock: kata restore {id} --list shows it "
                    "({backup}).", id=kata.id, backup=mock["backup"]))
    return 0


def show_running_mock(app: App, mock: dict) -> None:
    kata = registry.get(mock["kata"])
    left = mock["deadline"] - app.clock()
    app.print(_("mock interview of {kata}: {time} left (until {clock}); edit {file}, then kata "
                "mock --submit", kata=kata.name, time=countdown(left),
                clock=clock_time(mock["deadline"]), file=app.show_path(app.learner_file(kata))),
              style="bold")


def submit_mock(app: App, console: Console | None = None) -> int:
    """Grade the running mock as it stands and record it; after the deadline it is recorded
    as "time ran out". Exit status 0 only when it passes in time."""
    console = console or app.console
    mock = app.store.read()["mock"]
    if mock is None:
        raise UsageError(_("no mock interview is running: start one with kata mock"))
    kata = registry.get(mock["kata"])
    now = app.clock()
    late = now > mock["deadline"]
    taken = min(now, mock["deadline"]) - mock["started"]
    if app.learner_file(kata).is_file():
        result = app.grade(kata, "mock", time_cap=mock["minutes"] * 60)
    else:
        result = KataResult(kata.name, error=_("{file} is missing",
                                               file=app.show_path(app.learner_file(kata))))
    outcome = TIME_RAN_OUT if late else result.status

    def finish(state: dict) -> None:
        state["mock"] = None
        state["mocks"].append({"kata": kata.name, "started": iso(mock["started"]),
                               "minutes": mock["minutes"], "taken_s": round(taken, 1),
                               "status": result.status, "outcome": outcome,
                               "slugs": result.slugs})

    app.store.update(finish)
    app.render(result, console)
    if late:
        verdict = _("mock interview of {kata}: {outcome} after {minutes} min (graded as it "
                    "stood: {status})", kata=kata.name, outcome=outcome_word(outcome),
                    minutes=f"{mock['minutes']:g}", status=shown(result.status))
    else:
        verdict = _("mock interview of {kata}: {outcome} in {taken} of {allowed}", kata=kata.name,
                    outcome=outcome_word(outcome), taken=countdown(taken),
                    allowed=countdown(mock["minutes"] * 60))
    console.print(f"\n{verdict}", style="bold", highlight=False)
    return 0 if result.passed and not late else 1


def settle_expired_mock(app: App, console: Console) -> bool:
    """A running mock past its deadline is handed in as it stands, whatever command runs.
    Returns whether there was one."""
    mock = app.store.read()["mock"]
    if mock is None or app.clock() <= mock["deadline"]:
        return False
    console.print(_("Time ran out for the mock interview of {kata}: grading it as it stands.",
                    kata=mock["kata"]), style="bold", highlight=False)
    submit_mock(app, console)
    console.print()
    return True
