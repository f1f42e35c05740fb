"""Reviews: a kata comes back, spaced out, when it did not go cleanly — and the mistakes that
recur across katas.

A kata is due for review when, by the state's own record, it passed only after hints or after
the solution was shown, when a catalogued mistake came back in two or more of its attempts,
or when a mock interview of it ran out of time. Its first review is due the day after that;
a review (the kata from the skeleton, the learner's file backed up first; optionally as a
mock) passed *unaided* — no new hint, no solution, no failing check on the way — spaces the
next one further out along :data:`SCHEDULE_DAYS` (1, 3, 7, then 21 days, and 21 after
that); one passed with help, or after a failing check, starts the ladder again (due the next
day). What is due is computed from the state and today's date alone (pure functions, the
clock injected), so the CLI and the room always agree. Starting a review changes the learner's files (a
reset or a mock): that one action is :func:`graders.practice.reviewing.start`, above the
workspace (whose grading ends a review here), so that this module imports none of the
practice service's modules.

State (``state["reviews"]``, kata name -> entry): ``{"step": n, "due": "YYYY-MM-DD",
"reasons": [...], "started": epoch or None, "hints_at_start": n, "solution_at_start": bool,
"attempts_at_start": n}``; written when a review starts and when it ends.
"""

from __future__ import annotations

import datetime
import re
from collections import defaultdict
from dataclasses import dataclass

from graders.core import registry
from graders.core.registry import Kata
from graders.core.results import ALL_PASSED
from graders.practice.common import TIME_RAN_OUT, hint_level

SCHEDULE_DAYS = (1, 3, 7, 21)  # days to the next review after 0, 1, 2, 3+ unaided passes
RECURRING = "recurring-mistake"
AFTER_HINTS = "passed-after-hints"
AFTER_SOLUTION = "solution-seen"
MOCK_TIMED_OUT = "mock-ran-out-of-time"
STARTED_BY_YOU = "started-by-you"  # a review the learner started of a kata that was not due


def interval(step: int) -> int:
    """Days from one review to the next after ``step`` unaided passes in a row."""
    return SCHEDULE_DAYS[min(step, len(SCHEDULE_DAYS) - 1)]


def day(t: float) -> datetime.date:
    return datetime.datetime.fromtimestamp(t).date()


def reasons(state: dict, kata: Kata) -> list[str]:
    """Why ``kata`` needs reviewing, from the state's record (empty: it went cleanly)."""
    found = []
    attempts = [a for a in state["attempts"] if a["kata"] == kata.name]
    passed = any(a["status"] == ALL_PASSED for a in attempts)
    slug_counts: dict[str, int] = defaultdict(int)
    for attempt in attempts:
        for slug in set(attempt.get("slugs") or ()):
            slug_counts[slug] += 1
    if any(count >= 2 for count in slug_counts.values()):
        found.append(RECURRING)
    if passed and hint_level(state, kata) > 0:
        found.append(AFTER_HINTS)
    if passed and kata.name in state["revealed"]:
        found.append(AFTER_SOLUTION)
    if any(m.get("kata") == kata.name and m.get("outcome") == TIME_RAN_OUT for m in state["mocks"]):
        found.append(MOCK_TIMED_OUT)
    return found


def _trigger_time(state: dict, kata: Kata) -> float | None:
    """When the kata's first review was earned: its first pass, or its first mock that ran
    out of time, or (a recurring mistake, never passed) the attempt that repeated it."""
    times = [a.get("t", 0.0) for a in state["attempts"]
             if a["kata"] == kata.name and a["status"] == ALL_PASSED]
    times += [_epoch(m.get("started")) + float(m.get("taken_s", 0.0)) for m in state["mocks"]
              if m.get("kata") == kata.name and m.get("outcome") == TIME_RAN_OUT]
    if not times:
        times = [a.get("t", 0.0) for a in state["attempts"] if a["kata"] == kata.name]
    return min(times) if times else None


def _epoch(stamp) -> float:
    """A finished mock's ISO start time as seconds since the epoch (0 when unreadable)."""
    try:
        return datetime.datetime.fromisoformat(stamp).timestamp()
    except (TypeError, ValueError):
        return 0.0


@dataclass(frozen=True)
class Review:
    kata: Kata
    due: datetime.date
    step: int  # unaided passes in a row so far
    reasons: tuple[str, ...]
    started: bool  # a review of it is under way

    def is_due(self, today: datetime.date) -> bool:
        return self.due <= today


def schedule(state: dict) -> list[Review]:
    """Every kata with a review scheduled, soonest first."""
    found = []
    for kata in registry.KATAS:
        entry = state.get("reviews", {}).get(kata.name)
        why = tuple(reasons(state, kata))
        if entry is not None:
            try:
                due = datetime.date.fromisoformat(entry["due"])
            except (KeyError, TypeError, ValueError):
                continue
            found.append(Review(kata, due, int(entry.get("step", 0)),
                                tuple(entry.get("reasons") or why or (STARTED_BY_YOU,)),
                                bool(entry.get("started"))))
        elif why and (first := _trigger_time(state, kata)) is not None:
            found.append(Review(kata, day(first) + datetime.timedelta(days=interval(0)), 0, why,
                                False))
    return sorted(found, key=lambda r: (r.due, r.kata.id))


def due(state: dict, today: datetime.date) -> list[Review]:
    """The reviews due on ``today`` (or overdue), soonest first."""
    return [r for r in schedule(state) if r.is_due(today)]


def begin(state: dict, kata: Kata, now: float) -> None:
    """Record that a review of ``kata`` starts now (its file is reset by the caller)."""
    current = next((r for r in schedule(state) if r.kata.name == kata.name), None)
    state.setdefault("reviews", {})[kata.name] = {
        "step": current.step if current else 0,
        "due": (current.due if current else day(now)).isoformat(),
        "reasons": list(current.reasons) if current and current.reasons else [STARTED_BY_YOU],
        "started": now, "hints_at_start": hint_level(state, kata),
        "solution_at_start": kata.name in state["revealed"],
        "attempts_at_start": len(state["attempts"])}


def after_grade(state: dict, kata: Kata, status: str, now: float) -> None:
    """A graded check of ``kata`` (its attempt already recorded): a review under way that now
    passes ends — unaided, the next review is further out; with help or after a failing
    check, the ladder starts again."""
    entry = state.get("reviews", {}).get(kata.name)
    if not entry or not entry.get("started") or status != ALL_PASSED:
        return
    since = [a for a in state["attempts"][int(entry.get("attempts_at_start", 0)):]
             if a["kata"] == kata.name]
    unaided = (hint_level(state, kata) <= int(entry.get("hints_at_start", 0))
               and (kata.name in state["revealed"]) == bool(entry.get("solution_at_start"))
               and all(a["status"] == ALL_PASSED for a in since))
    step = int(entry.get("step", 0)) + 1 if unaided else 0
    entry.update(step=step, started=None,
                 due=(day(now) + datetime.timedelta(days=interval(step))).isoformat(),
                 last=("unaided" if unaided else "helped"))


@dataclass(frozen=True)
class Recurring:
    slug: str
    katas: tuple[Kata, ...]  # where it was made, in kata order
    lesson: str  # where it is taught: "notebooks/NN_name.ipynb, § heading", or a README


def recurring_mistakes(state: dict) -> list[Recurring]:
    """Catalogued mistakes made in two or more katas: topics to revisit, most widespread
    first, each with the lesson section that teaches it."""
    where: dict[str, set[str]] = defaultdict(set)
    for attempt in state["attempts"]:
        for slug in attempt.get("slugs") or ():
            where[slug].add(attempt["kata"])
    found = []
    for slug, names in where.items():
        katas = tuple(k for k in registry.KATAS if k.name in names)
        if len(katas) >= 2:
            found.append(Recurring(slug, katas, lesson_for(slug, katas)))
    return sorted(found, key=lambda r: (-len(r.katas), r.slug))


_HEADING = re.compile(r"^# (#{2,3} .+)$", re.M)


def lesson_for(slug: str, katas: tuple[Kata, ...]) -> str:
    """The lesson section that teaches ``slug``: the heading above its first mention in the
    lessons of ``katas`` (then of every kata), else the first kata's README."""
    for kata in (*katas, *registry.KATAS):
        lesson = registry.REPO_ROOT / "notebooks" / "lessons" / f"{kata.name}.py"
        if not lesson.is_file():
            continue
        text = lesson.read_text(encoding="utf-8")
        at = text.find(slug)
        if at < 0:
            continue
        headings = [m for m in _HEADING.finditer(text) if m.start() < at]
        section = headings[-1].group(1).lstrip("# ").strip() if headings else ""
        return f"notebooks/{kata.name}.ipynb" + (f", § {section}" if section else "")
    return f"katas/{katas[0].name}/README.md"


def today(practice) -> datetime.date:
    return day(practice.clock())
