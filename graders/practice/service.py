"""The practice service both front ends work through, as one object: Practice, a Workspace
(graders.practice.workspace: the learner's files and state, grading and recording, backups,
the running mock, the clock) with a method for every other piece of work a front end asks
for - reset, restore and the solution, hints, mock interviews, the quiz, reviews and the
report. Each method hands the work to its module (files, hints, mock, quiz, review,
reviewing, report), which takes the Workspace or the state: those modules sit below this
one, so none of them imports it. It returns data and raises graders.practice.common's
errors; it never prints (the CLI's App adds a console, the room serializes what it returns)."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Callable

from graders.core.registry import Kata
from graders.practice import files, hints
from graders.practice import mock as mocks
from graders.practice import quiz as quizzes
from graders.practice import report as reports
from graders.practice import review, reviewing
from graders.practice.messages import Message, Outcome
from graders.practice.state import write_atomically
from graders.practice.workspace import Workspace


class Practice(Workspace):
    """The practice service: what a front end (the `kata` command's App, the room's RoomApp)
    is. Its fields are the Workspace's (root, clock, rng, grader, front_end)."""

    # -- files: reset, restore, the solution (graders.practice.files) --
    def write_file(self, kata: Kata, data: bytes) -> Path:
        """Write ``data`` as the learner's file of ``kata`` (atomically: a reader sees the old
        file or the new one, never half of it); its path. Nothing is recorded."""
        path = self.learner_file(kata)
        write_atomically(path, data)
        return path

    def already_skeleton(self, kata: Kata) -> Message | None:
        """What a reset would say without doing anything: the file is the untouched skeleton
        (None when it is not)."""
        return files.already_skeleton(self, kata)

    def reset(self, kata: Kata) -> Outcome:
        """Back the learner's file up (when there is one), then write the skeleton over it."""
        return files.reset(self, kata)

    def refuse_restore_during_mock(self, kata: Kata) -> None:
        """Refused: a backup of the kata of a running mock waits until it is handed in."""
        files.refuse_restore_during_mock(self, kata)

    def no_backups(self, kata: Kata) -> Message | None:
        """What a restore says when ``kata`` has no backup (None when it has one)."""
        return files.no_backups(self, kata)

    def backup_list(self, kata: Kata) -> list[dict]:
        """The kata's backups, newest first (see graders.practice.files.backup_list)."""
        return files.backup_list(self, kata)

    def restore(self, kata: Kata, choice: str | None = None) -> Outcome:
        """Bring back backup ``choice`` (a number from 1, newest first, or a file name; the
        latest by default), the learner's file backed up first unless it is the skeleton."""
        return files.restore(self, kata, choice)

    def reveal_solution(self, kata: Kata) -> str:
        """The reference solution's source, its reveal recorded; refused during a mock."""
        return files.reveal_solution(self, kata)

    # -- hints (graders.practice.hints) --
    def reveal_next_hint(self, kata: Kata) -> tuple[int, bool]:
        """Reveal the next rung of ``kata``'s hint ladder: (the rung now revealed, 1-based;
        whether every rung was revealed already). Refused during a mock."""
        return hints.reveal_next_hint(self, kata)

    def revealed_hints(self, kata: Kata) -> int:
        """How many rungs of ``kata``'s ladder are revealed."""
        return hints.revealed(self, kata)

    def hint_rung(self, kata: Kata, number: int) -> dict:
        """Rung ``number`` (1-based) of ``kata``'s ladder: number, total, level, text, code."""
        return hints.rung(kata, number)

    def last_mistake(self, kata: Kata) -> dict | None:
        """The catalogued mistake of ``kata``'s last graded attempt (at, slug, explanation,
        hint), None when it made none."""
        return hints.last_mistake(self, kata)

    # -- mock interviews (graders.practice.mock) --
    def mock_status(self) -> dict | None:
        """The running mock as data (None when none runs): its kata, times, what is left."""
        return mocks.status(self)

    def expired_mock(self, grace: float = 0.0) -> dict | None:
        """The running mock when it is past its deadline by more than ``grace`` seconds."""
        return mocks.expired(self, grace)

    def choose_mock_kata(self, kata: Kata | None, random: bool) -> Kata:
        """The kata of a new mock: ``kata``, or with ``random`` one not passed yet."""
        return mocks.choose(self, kata, random)

    def start_mock(self, kata: Kata, minutes: float | None = None) -> Outcome:
        """Start a mock of ``kata`` for ``minutes`` (its target time by default), the file
        backed up and reset first (see graders.practice.mock.start)."""
        return mocks.start(self, kata, minutes)

    def abort_mock(self) -> Outcome:
        """End the running mock without grading it (recorded as aborted)."""
        return mocks.abort(self)

    def submit_mock(self) -> Outcome:
        """Grade the running mock as it stands and record it (see graders.practice.mock.submit)."""
        return mocks.submit(self)

    # -- the quiz (graders.practice.quiz) --
    def quiz_questions(self, kata: Kata) -> list[dict]:
        """``kata``'s quiz as a page shows it: number, prompt, choices, format per question.
        Refused during a mock."""
        return quizzes.asked(self, kata)

    def quiz_mark(self, kata: Kata, answers: dict) -> dict:
        """The marks of ``answers`` (question number as a string -> answer): marks, score,
        correct. Refused during a mock."""
        return quizzes.mark(self, kata, answers)

    # -- reviews (graders.practice.review, graders.practice.reviewing) --
    def today(self) -> datetime.date:
        """Today by the service's clock: the day reviews are due on."""
        return review.today(self)

    def reviews_due(self, state: dict | None = None,
                    today: datetime.date | None = None) -> list[review.Review]:
        """The reviews due ``today`` (by default today) or overdue, soonest first, by
        ``state`` (by default the state as it is now)."""
        return review.due(self.store.read() if state is None else state,
                          self.today() if today is None else today)

    def review_schedule(self, state: dict | None = None) -> list[review.Review]:
        """Every kata with a review scheduled, soonest first."""
        return review.schedule(self.store.read() if state is None else state)

    def recurring_mistakes(self, state: dict | None = None) -> list[review.Recurring]:
        """The catalogued mistakes made in two or more katas, most widespread first."""
        return review.recurring_mistakes(self.store.read() if state is None else state)

    def start_review(self, kata: Kata, *, as_mock: bool = False,
                     minutes: float | None = None) -> Outcome:
        """Start a review of ``kata``: its file back to the skeleton (backed up first), or a
        mock of it (``as_mock``), recorded as under way."""
        return reviewing.start(self, kata, as_mock=as_mock, minutes=minutes)

    # -- the report (graders.practice.report) --
    def report(self, announce: Callable[[str], None]) -> dict:
        """The self-assessment as data (a file changed since it was last graded is graded,
        ``announce`` saying so)."""
        return reports.build_report(self, announce)

    def report_markdown(self, report: dict) -> str:
        """``report`` as markdown, its advice in this front end's words (the room's buttons
        or the commands)."""
        return reports.report_markdown(report, room=self.front_end == "room")
