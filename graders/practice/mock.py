"""Mock interviews as data: started from the skeleton with the README's follow-ups reduced
to their questions and without its list of the mistakes the grader names; handed in,
aborted, or handed in by whatever comes first once its time has run out. The work of kata
mock and of the room's mock buttons."""

from __future__ import annotations

import math
import re

from graders.core import registry
from graders.core.i18n import _
from graders.core.registry import Kata
from graders.core.results import ALL_PASSED, KataResult
from graders.practice.common import (ABORTED, FOLLOW_UPS_HEADINGS, TIME_RAN_OUT, UsageError,
                                     best_status, clock_time, countdown, iso)
from graders.practice.messages import Outcome
from graders.practice.workspace import Workspace


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


_SLUG_IN_BACKTICKS = re.compile(r"`\[([a-z0-9]+(?:-[a-z0-9]+)+)\]`")


# A sentence's end: . ! ? before white space and a capital (not "e.g. `[slug]`"), or 。！？.
_SENTENCE_END = re.compile(r"((?<=[.!?])\s+(?=[A-Z*(])|(?<=[。！？]))")


def without_mistake_names(readme: str) -> str:
    """A kata README less the sentences that name the grader's mistakes ("When the grader
    recognises a classic mistake it names it, e.g. `[heads-interleaved]`, ..." and its
    Chinese twin), since a mock hides the mistakes' names until it is handed in: outside
    fenced code, each sentence holding a catalogued slug in backticks is left out, and a
    paragraph left empty goes with the blank line after it."""
    from graders.core.catalogue import MISTAKES

    def names_a_mistake(text: str) -> bool:
        return any(slug in MISTAKES for slug in _SLUG_IN_BACKTICKS.findall(text))

    def without_names(paragraph: list[str]) -> list[str]:
        text = "\n".join(paragraph)
        if "```" in text or not names_a_mistake(text):
            return paragraph
        parts = _SENTENCE_END.split(text)  # sentence, separator, sentence, ...
        kept = "".join(sentence + separator
                       for sentence, separator in zip(parts[::2], [*parts[1::2], ""])
                       if not names_a_mistake(sentence))
        return kept.rstrip().splitlines()

    out: list[str] = []
    paragraph: list[str] = []  # non-blank lines, or a fenced block with its blank lines
    in_fence = False
    for line in readme.split("\n"):
        fence = line.lstrip().startswith("```")
        if in_fence or fence or line.strip():
            paragraph.append(line)
            in_fence = in_fence != fence
            continue
        kept = without_names(paragraph)
        if kept or not paragraph:  # a blank line goes with the paragraph before it
            out += [*kept, line]
        paragraph = []
    return "\n".join(out + without_names(paragraph))


def mock_readme(readme: str) -> str:
    """A kata README as a mock interview shows it (kata mock, the room's mock): its
    follow-ups reduced to their questions (:func:`questions_only`), and no list of the
    mistakes the grader names (:func:`without_mistake_names`)."""
    return without_mistake_names(questions_only(readme))


MINUTES_RANGE = (1, 600)  # a mock's time: a minute to ten hours


def minutes_allowed(minutes) -> bool:
    """Whether ``minutes`` is a mock's time: a finite number from 1 to 600 (never inf, nan)."""
    return (isinstance(minutes, (int, float)) and not isinstance(minutes, bool)
            and math.isfinite(minutes) and MINUTES_RANGE[0] <= minutes <= MINUTES_RANGE[1])


def status(practice: Workspace) -> dict | None:
    """The running mock as data (None when none runs): its kata, times and what is left."""
    mock = practice.running_mock()
    if mock is None:
        return None
    kata = registry.get(mock["kata"])
    now = practice.clock()
    return {"kata": kata.name, "id": kata.id, "started": mock["started"],
            "deadline": mock["deadline"], "now": now, "left_s": max(0.0, mock["deadline"] - now),
            "minutes": mock["minutes"], "left": countdown(mock["deadline"] - now),
            "clock": clock_time(mock["deadline"]),
            "file": practice.show_path(practice.learner_file(kata))}


def choose(practice: Workspace, kata: Kata | None, random: bool) -> Kata:
    """The kata of a new mock: ``kata``, or with ``random`` one not passed yet (any kata
    once every kata passes)."""
    if kata is not None:
        return kata
    state = practice.store.read()
    not_passed = [k for k in registry.KATAS if best_status(state, k) != ALL_PASSED]
    return practice.rng.choice(not_passed or list(registry.KATAS))


def start(practice: Workspace, kata: Kata, minutes: float | None = None) -> Outcome:
    """Start a mock of ``kata`` for ``minutes`` (its target time by default): the learner's
    file, unless it is the untouched skeleton, is backed up and reset first (a front end
    asks before). Data: ``mock`` (as status gives it) and ``readme``, the README as a mock
    shows it (:func:`mock_readme`; None when it is missing), ``readme_path``."""
    minutes = kata.target_minutes if minutes is None else minutes
    outcome = Outcome()
    path = practice.learner_file(kata)
    backup = None
    if not practice.is_untouched(kata):
        backup = practice.backup(kata) if path.is_file() else None
        if backup is not None:
            outcome.say("file.backed_up", backup=practice.show_path(backup),
                        dropped=practice.dropped_backups)
        practice.restore_skeleton(kata)

    def begin(state: dict) -> None:
        now = practice.clock()
        state["mock"] = {"kata": kata.name, "started": now, "deadline": now + minutes * 60,
                         "minutes": minutes}
        if backup is not None:  # what aborting offers to bring back
            state["mock"]["backup"] = backup.name
        practice.touch(state, kata)

    practice.store.update(begin)
    readme = practice.readme(kata)
    outcome.data["readme_path"] = practice.show_path(readme)
    outcome.data["readme"] = (mock_readme(readme.read_text(encoding="utf-8"))
                              if readme.is_file() else None)
    outcome.data["mock"] = mock = status(practice)
    return outcome.say("mock.started", kata=kata.name, time=countdown(mock["deadline"] - mock["started"]),
                       clock=mock["clock"], file=mock["file"])


def abort(practice: Workspace) -> Outcome:
    """End the running mock without grading it; recorded as "aborted", with the status of
    the file as far as it is known without grading it."""
    mock = practice.running_mock()
    if mock is None:
        raise UsageError(key="mock.none_to_abort")
    kata = registry.get(mock["kata"])
    taken = max(0.0, min(practice.clock(), mock["deadline"]) - mock["started"])

    def finish(state: dict) -> None:
        state["mock"] = None
        state["mocks"].append({"kata": kata.name, "started": iso(mock["started"]),
                               "minutes": mock["minutes"], "taken_s": round(taken, 1),
                               "status": practice.known_status(state, kata), "outcome": ABORTED,
                               "slugs": []})
        practice.touch(state, kata, cap=mock["minutes"] * 60)

    practice.store.update(finish)
    outcome = Outcome().say("mock.aborted", kata=kata.name, taken=countdown(taken))
    if isinstance(mock.get("backup"), str):
        outcome.say("mock.backup_kept", id=kata.id, backup=mock["backup"])
    return outcome


def submit(practice: Workspace) -> Outcome:
    """Grade the running mock as it stands and record it; after the deadline it is recorded
    as "time ran out". ``ok`` only when it passes in time. Data: ``result`` (the KataResult)
    and ``record`` (the finished mock as stored)."""
    mock = practice.running_mock()
    if mock is None:
        raise UsageError(key="mock.none_to_submit")
    kata = registry.get(mock["kata"])
    now = practice.clock()
    late = now > mock["deadline"]
    taken = min(now, mock["deadline"]) - mock["started"]
    if practice.learner_file(kata).is_file():
        result = practice.grade(kata, "mock", time_cap=mock["minutes"] * 60)
    else:
        result = KataResult(kata.name, error=_("{file} is missing",
                                               file=practice.show_path(practice.learner_file(kata))))
    outcome_name = TIME_RAN_OUT if late else result.status
    record = {"kata": kata.name, "started": iso(mock["started"]), "minutes": mock["minutes"],
              "taken_s": round(taken, 1), "status": result.status, "outcome": outcome_name,
              "slugs": result.slugs}

    def finish(state: dict) -> None:
        state["mock"] = None
        state["mocks"].append(record)

    practice.store.update(finish)
    done = Outcome(ok=result.passed and not late, data={"result": result, "record": record})
    if late:
        return done.say("mock.late", kata=kata.name, outcome=outcome_name,
                        minutes=f"{mock['minutes']:g}", status=result.status)
    return done.say("mock.in_time", kata=kata.name, outcome=outcome_name, taken=countdown(taken),
                    allowed=countdown(mock["minutes"] * 60))


def expired(practice: Workspace, grace: float = 0.0) -> dict | None:
    """The running mock when it is past its deadline by more than ``grace`` seconds
    (whatever comes next hands it in; the room allows the page's own hand-in at 0:00 to
    save the editor first)."""
    mock = practice.running_mock()
    return mock if mock is not None and practice.clock() > mock["deadline"] + grace else None
