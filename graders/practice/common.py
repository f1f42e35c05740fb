"""What the practice service and both front ends share: the stored outcomes' names, the
errors the service raises, the words for statuses, tracks and hints in the learner's
language, and small readers of the learner's state. Nothing here prints."""

from __future__ import annotations

import collections
import datetime
import functools
import hashlib
import re
from typing import Iterable

from graders.core import registry
from graders.core.statefile import STATE_DIR  # noqa: F401 (the folder of the state and backups)
from graders.core.i18n import _
from graders.core.registry import Kata
from graders.core.results import ALL_PASSED, CORE_PASSED, FAILING, NOT_STARTED, shown

IDLE_GAP_S = 20 * 60  # a longer pause between two actions on a kata counts as a break
TIME_RAN_OUT = "time ran out"
ABORTED = "aborted"  # a mock ended with kata mock --abort (stored: data, never translated)
STATUS_RANK = {NOT_STARTED: 0, FAILING: 1, CORE_PASSED: 2, ALL_PASSED: 3}
FILE_MISSING = "file missing"  # a status of the file now, never of a graded attempt
# The order in which the progress line counts each status now (the counts add up to the
# number of katas); see progress_words for the words.
PROGRESS_ORDER = (ALL_PASSED, CORE_PASSED, FAILING, NOT_STARTED, FILE_MISSING)
# A kata README's questions for a mock, in each language's edition (see the glossary).
FOLLOW_UPS_HEADING = "## Interviewer follow-ups"
FOLLOW_UPS_HEADINGS = (FOLLOW_UPS_HEADING, "## 面试官追问", "## 面试官的追问")  # the last: an older title
BACKUP_STAMP = re.compile(r"-(\d{8}-\d{6})(?:-(\d+))?$")  # heads-20250615-103000-2.py


class Said(Exception):
    """An error as data: ``key`` and ``fields`` name what each front end words in its own
    way (graders.practice.messages); an empty ``key``: ``text``, already worded."""

    def __init__(self, text: str = "", *, key: str = "", **fields):
        super().__init__(text or key)
        self.key, self.fields = key, fields


class UsageError(Said):
    """A request the service cannot make sense of (an unknown kata, no mock to hand in): the
    CLI prints it with exit status 2, the room answers 400."""


class Refused(Said):
    """What may not be done now, e.g. a hint during a mock interview: the CLI prints it with
    exit status 1, the room answers 409. ``key`` names the refusal, ``fields`` its details
    (``kata``: the running mock's); each front end has its own words for it."""


def normalised(data: bytes) -> bytes:
    """``data`` with its Windows line ends (CR LF) as LF."""
    return data.replace(b"\r\n", b"\n")  # a Windows checkout of the skeleton is still untouched


@functools.lru_cache(maxsize=1)
def graders_fingerprint() -> str:
    """A hash of the grading code: a cached result is only reused if the graders are the same."""
    digest = hashlib.sha256()
    graders_dir = registry.REPO_ROOT / "graders"
    for path in sorted(graders_dir.rglob("*.py")):
        relative = path.relative_to(graders_dir)
        # The front ends, the practice service, the contributors' tools and the pristine
        # skeletons grade nothing.
        if (relative.parts[0] not in ("frontends", "practice", "tools")
                and relative.name != registry.PRISTINE_SKELETON):
            digest.update(str(relative).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def iso(t: float) -> str:
    return datetime.datetime.fromtimestamp(t).isoformat(timespec="seconds")


def clock_time(t: float) -> str:
    return datetime.datetime.fromtimestamp(t).strftime("%H:%M")


def countdown(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


def duration(seconds: float) -> str:
    """Human time for a report: "-", "<1 min", "12 min", "1 h 05 min"."""
    if seconds <= 0:
        return "-"
    minutes = round(seconds / 60)
    if minutes < 1:
        return _("<1 min")
    if minutes < 60:
        return _("{minutes} min", minutes=minutes)
    return _("{hours} h {minutes} min", hours=minutes // 60, minutes=f"{minutes % 60:02d}")


def resolve(key: str, *, paths: bool = True) -> Kata:
    """The kata ``key`` names, as registry.get finds it (id, number, name, a unique part of
    a name such as "flash", and with ``paths`` a path inside its folder); a usage error
    naming the katas otherwise."""
    try:
        return registry.get(key, paths=paths)
    except KeyError:
        candidates = registry.partial_matches(key)
        if len(candidates) > 1:
            raise UsageError(_("{name} could be {katas}: say which", name=repr(key), katas=_(", ").join(
                kata.name for kata in candidates))) from None
        known = ", ".join(f"{kata.name} ({int(kata.id)}, {kata.name[3:]})" for kata in registry.KATAS)
        raise UsageError(_("no kata called {name}; the katas are: {katas}", name=repr(key),
                           katas=known)) from None


def progress_words(status: str) -> str:
    """How the progress line names a status now, in the learner's language."""
    if status == CORE_PASSED:
        return _("core passed (follow-ups left)")
    if status == FILE_MISSING:
        return _("file missing")
    return shown(status)


def outcome_word(outcome: str) -> str:
    """A mock interview's outcome (a status, "time ran out" or "aborted") in the learner's
    language."""
    if outcome == TIME_RAN_OUT:
        return _("time ran out")
    return _("aborted") if outcome == ABORTED else shown(outcome)


def mock_result(mock: dict) -> str:
    """A finished mock's result for the report: its outcome, and where time ran out, what
    state the kata was in at the deadline."""
    if mock.get("outcome") == TIME_RAN_OUT and mock.get("status") in STATUS_RANK:
        return _("time ran out ({status} at the deadline)", status=shown(mock["status"]))
    return outcome_word(mock.get("outcome", ""))


def difficulty_word(difficulty: str) -> str:
    """A registry difficulty (easy, medium, hard) in the learner's language."""
    return {"easy": _("easy"), "medium": _("medium"), "hard": _("hard")}.get(difficulty, difficulty)


def hint_level_word(level: str) -> str:
    """A hint rung's name (registry.HINT_LEVELS) in the learner's language."""
    return {"nudge": _("nudge"), "the key idea": _("the key idea"),
            "near-code": _("near-code")}.get(level, level)


def track_title(key: str) -> str:
    """A track's title (registry.TRACKS) in the learner's language."""
    title = registry.TRACKS.get(key, key)
    translated = {"Foundations": _("Foundations"), "Decoder-only LLMs": _("Decoder-only LLMs"),
                  "Full models and modern inference": _("Full models and modern inference"),
                  "LLM inference systems": _("LLM inference systems"),
                  "Training and aligning LLMs": _("Training and aligning LLMs")}
    return translated.get(title, title)


def progress_line(statuses: dict[str, str]) -> str:
    """Where the learner stands, from every kata's status now (``statuses``: kata name ->
    status), one count per status so that the counts add up to the number of katas, e.g.
    "7 katas: 2 all passed, 1 core passed (follow-ups left), 4 not started; next: 03_mha".
    `kata list` and `kata report` both print it."""
    counts = collections.Counter(statuses.values())
    separator = _(", ")  # a list's comma, in the learner's language
    parts = separator.join(_("{count} {status}", count=counts[status], status=progress_words(status))
                           for status in PROGRESS_ORDER if counts[status] or status == ALL_PASSED)
    upcoming = next((k.name for k in registry.KATAS if statuses.get(k.name) != ALL_PASSED), None)
    if upcoming:
        return _("{count} katas: {counts}; next: {kata}", count=len(statuses), counts=parts,
                 kata=upcoming)
    return _("{count} katas: {counts}; every kata passes", count=len(statuses), counts=parts)


def tracks(katas: Iterable[Kata]) -> list[tuple[str, list[Kata]]]:
    """``katas`` grouped by track, in the order of registry.TRACKS: (track title in the
    learner's language, katas)."""
    katas = list(katas)
    groups = [(track_title(key), [k for k in katas if k.track == key]) for key in registry.TRACKS]
    strays = [k for k in katas if k.track not in registry.TRACKS]  # never in a sound registry
    return [(title, members) for title, members in groups + [(_("Other"), strays)] if members]


def track_heading(title: str, members: list[Kata]) -> str:
    """E.g. "Foundations (01-07)"."""
    span = members[0].id if len(members) == 1 else f"{members[0].id}-{members[-1].id}"
    return _("{title} ({span})", title=title, span=span)


def best_status(state: dict, kata: Kata) -> str:
    """The best status any graded attempt of ``kata`` reached."""
    statuses = [a["status"] for a in state["attempts"] if a["kata"] == kata.name]
    return max(statuses, key=STATUS_RANK.__getitem__, default=NOT_STARTED)


def last_attempt(state: dict, kata: Kata) -> dict | None:
    return next((a for a in reversed(state["attempts"]) if a["kata"] == kata.name), None)


def hint_level(state: dict, kata: Kata) -> int:
    return max(0, min(state["hints"].get(kata.name, 0), len(kata.hints)))
