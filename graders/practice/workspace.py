"""The body of the practice service (graders.practice.service.Practice, the one entry point
the front ends use, is a Workspace): where the learner's files and state are, how a kata is
graded and recorded, backups, the running mock, and the clock. The modules that do the rest
of the work (files, mock, hints, quiz, reviewing, report) take a Workspace, so that none of
them imports the facade above them. It returns data and raises
graders.practice.common's errors; it never prints (the CLI's App adds a console, the room
serializes what it returns)."""

from __future__ import annotations

import datetime
import hashlib
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from graders.core import i18n, registry
from graders.core.i18n import _
from graders.core.registry import Kata
from graders.core.results import ALL_PASSED, NOT_STARTED, KataResult
from graders.practice.common import (BACKUP_STAMP, FILE_MISSING, IDLE_GAP_S, STATE_DIR, Refused,
                                     graders_fingerprint, iso, last_attempt, normalised)
from graders.practice import review
from graders.practice.state import StateStore, write_atomically

# A kata's backups are bounded: its newest MAX_BACKUPS, MAX_BACKUP_BYTES in all; older ones
# are removed as a new one is made (and the learner told).
MAX_BACKUPS = 50
MAX_BACKUP_BYTES = 20 << 20


@dataclass
class Workspace:
    root: Path  # the repository copy whose katas/ and .kata/ are the learner's
    clock: Callable[[], float] = time.time
    rng: random.Random = field(default_factory=random.Random)
    # How a file is graded: (kata, path) -> KataResult. None: in this process
    # (graders.core.session.grade); `kata serve` grades in a subprocess with a time limit.
    grader: Callable[[Kata, Path], KataResult] | None = None
    # Who shows what is returned: "cli", or "room" (`kata serve`: advice names its buttons).
    front_end: str = "cli"

    def __post_init__(self) -> None:
        self.warnings: list[str] = []
        self.dropped_backups = 0  # how many old backups the last backup() removed
        self.store = StateStore(self.root / STATE_DIR, self.warn)

    def warn(self, text: str) -> None:
        """A warning for the learner (a state file set aside): kept in ``warnings``; a front
        end that shows them overrides this."""
        self.warnings.append(text)

    def show_path(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    # -- files --
    def learner_file(self, kata: Kata) -> Path:
        return self.root / "katas" / kata.name / kata.file

    def readme(self, kata: Kata) -> Path:
        """The kata's README in the learner's copy (the installed one if it has none), in
        the learner's language where it has that edition (README.zh-CN.md)."""
        mine = self.root / "katas" / kata.name / "README.md"
        english = mine if mine.is_file() else kata.readme_path
        language = i18n.current()
        edition = english.with_name(i18n.readme_name(language))
        return edition if language != i18n.ENGLISH and edition.is_file() else english

    def is_untouched(self, kata: Kata) -> bool:
        path = self.learner_file(kata)
        return path.is_file() and (normalised(path.read_bytes())
                                   == normalised(kata.pristine_skeleton_path.read_bytes()))

    def content_key(self, path: Path) -> str:
        """Names one version of a file as graded by one version of the graders."""
        return hashlib.sha256(graders_fingerprint().encode() + path.read_bytes()).hexdigest()

    def backup(self, kata: Kata, data: bytes | None = None) -> Path:
        """Copy the learner's file to .kata/backups/NN_name/, stamped with the time (or
        ``data`` instead of the file: `kata serve` keeps an editor's text so)."""
        source = self.learner_file(kata)
        stamp = datetime.datetime.fromtimestamp(self.clock()).strftime("%Y%m%d-%H%M%S")
        folder = self.root / STATE_DIR / "backups" / kata.name
        folder.mkdir(parents=True, exist_ok=True)
        content = source.read_bytes() if data is None else data
        # after every backup of this second (a removed oldest one's name is never reused:
        # the order of backups is the order of their names)
        numbers = [int(found.group(2) or 1) for path in folder.iterdir()
                   if path.name.startswith(f"{source.stem}-{stamp}")
                   and (found := BACKUP_STAMP.search(path.stem)) and found.group(1) == stamp]
        number = max(numbers, default=0) + 1
        target = folder / (f"{source.stem}-{stamp}{source.suffix}" if number == 1
                           else f"{source.stem}-{stamp}-{number}{source.suffix}")
        while True:
            try:  # a new file, never one already there (nor through a symlink left there)
                descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                break
            except FileExistsError:
                number += 1
                target = folder / f"{source.stem}-{stamp}-{number}{source.suffix}"
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(content)
        self.dropped_backups = self.drop_old_backups(kata, target)
        return target

    def drop_old_backups(self, kata: Kata, newest: Path) -> int:
        """Keep the kata's MAX_BACKUPS newest backups, MAX_BACKUP_BYTES in all at most (never
        ``newest``, the one just made): the older ones are removed; how many were."""
        kept = size = dropped = 0
        for path in self.backups(kata):  # newest first
            try:
                length = path.stat().st_size
                if path != newest and (kept >= MAX_BACKUPS or size + length > MAX_BACKUP_BYTES):
                    path.unlink()
                    dropped += 1
                    continue
            except OSError:
                continue
            kept, size = kept + 1, size + length
        return dropped

    def backups(self, kata: Kata) -> list[Path]:
        """The kata's backups in .kata/backups/NN_name/, newest first (by the time stamped
        in their names, then their number within that second)."""
        folder = self.root / STATE_DIR / "backups" / kata.name
        if not folder.is_dir():
            return []

        def when(path: Path) -> tuple:
            stamp = BACKUP_STAMP.search(path.stem)
            return (stamp.group(1), int(stamp.group(2) or 1)) if stamp else ("", 0)

        return sorted((p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")),
                      key=lambda p: (when(p), p.stat().st_mtime_ns, p.name), reverse=True)

    def restore_skeleton(self, kata: Kata) -> None:
        write_atomically(self.learner_file(kata), kata.pristine_skeleton_path.read_bytes())

    # -- statuses --
    def cached_result(self, state: dict, kata: Kata, language: str | None = None
                      ) -> KataResult | None:
        """The stored result for the file as it is now, if it was graded by these graders
        (and, when ``language`` is given, its verdicts written in that language)."""
        path = self.learner_file(kata)
        entry = state["cache"].get(kata.name)
        if not path.is_file() or not isinstance(entry, dict) or entry.get("key") != self.content_key(path):
            return None
        if language is not None and entry.get("language", i18n.ENGLISH) != language:
            return None
        try:
            return KataResult.from_dict(entry["result"])
        except (KeyError, TypeError):
            return None

    def known_status(self, state: dict, kata: Kata) -> str | None:
        """The kata's status without grading it, or None when it would take grading."""
        if self.is_untouched(kata):
            return NOT_STARTED
        cached = self.cached_result(state, kata)
        return cached.status if cached else None

    def status_now(self, state: dict, kata: Kata, source: str,
                   announce: Callable[[str], None]) -> tuple[str, KataResult | None]:
        """``kata``'s status as its file stands now, with the result it comes from (None for
        a missing file or an untouched skeleton). A file changed since it was last graded is
        graded (and recorded, as from command ``source``), ``announce`` saying so first.
        `kata list` and `kata report` both count progress from this."""
        if not self.learner_file(kata).is_file():
            return FILE_MISSING, None
        if self.is_untouched(kata):
            return NOT_STARTED, None
        result = self.cached_result(state, kata)
        if result is None:
            announce(_("grading {kata}: changed since it was last graded", kata=kata.name))
            result = self.grade(kata, source)
        return result.status, result

    def first_unfinished(self, state: dict, after: Kata | None = None) -> Kata | None:
        """The first kata (after ``after``, wrapping round) not known to pass completely."""
        order = list(registry.KATAS)
        if after is not None:
            start = order.index(after) + 1
            order = order[start:] + order[:start - 1]
        return next((k for k in order if self.known_status(state, k) != ALL_PASSED), None)

    # -- time --
    def touch(self, state: dict, kata: Kata, cap: float = IDLE_GAP_S) -> None:
        """Count the time since the last action on ``kata`` as work (up to ``cap``)."""
        now = self.clock()
        record = state["time"].setdefault(kata.name, {})
        last = record.get("last")
        gap = min(max(0.0, now - last), cap) if isinstance(last, (int, float)) else 0.0
        record["total_s"] = float(record.get("total_s", 0)) + gap
        record["since_attempt_s"] = float(record.get("since_attempt_s", 0)) + gap
        record["last"] = now

    # -- grading --
    def grade(self, kata: Kata, source: str, *, use_cache: bool = False,
              time_cap: float = IDLE_GAP_S) -> KataResult:
        """Grade the learner's file of ``kata`` and record it: the cache, and an attempt when
        this version of the file was not graded before. ``source`` names the command."""
        path = self.learner_file(kata)
        key = self.content_key(path)
        language = i18n.current()  # the verdicts' language: a cached result must share it
        cached = self.cached_result(self.store.read(), kata, language) if use_cache else None
        if cached is not None:
            result = cached
        elif self.grader is not None:
            result = self.grader(kata, path)
        else:
            from graders.core import descendants, session  # imports pytest; torch follows

            # in this process: what the learner's code starts ends with the grading
            result = descendants.graded_here(lambda: session.grade(kata.id, path))

        def record(state: dict) -> None:
            state["cache"][kata.name] = {"key": key, "result": result.to_dict(),
                                         "language": language}
            self.touch(state, kata, cap=time_cap)
            previous = last_attempt(state, kata)
            if result.status == NOT_STARTED or (previous is not None and previous.get("key") == key):
                return  # an untouched skeleton, or the same file graded again: no new attempt
            now = self.clock()
            spent = state["time"][kata.name]
            state["attempts"].append({
                "kata": kata.name, "at": iso(now), "t": now, "source": source,
                "status": result.status, "slugs": result.slugs, "key": key,
                "duration_s": round(spent.get("since_attempt_s", 0.0), 1),
            })
            spent["since_attempt_s"] = 0.0
            review.after_grade(state, kata, result.status, now)  # a review under way ends?

        self.store.update(record)
        return result

    def running_mock(self) -> dict | None:
        return self.store.read()["mock"]

    def refuse_during_mock(self, key: str) -> None:
        """A mock interview is an interview: no hints, no solution, no quiz until it is
        handed in (one past its deadline was handed in before any command). ``key``: the
        refusal's (graders.practice.messages), with the mock's kata as its field."""
        mock = self.running_mock()
        if mock is not None:
            raise Refused(key=key, kata=mock["kata"])
