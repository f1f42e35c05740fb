"""The implementation under test, as the graders see it."""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from graders.core import guard, i18n
from graders.core.registry import Kata
from graders.core.i18n import _
from graders.core.report import GradingFailure, checked_line


@dataclass(repr=False)
class Implementation:
    """A loaded learner (or reference) file plus the kata it is graded as.

    A file that failed to load is still an Implementation: the first check that asks it
    for a name fails with the full load error, later checks with a one-line pointer, so a
    broken file gives one paragraph, not one per check.
    """

    kata: Kata
    path: Path
    module: types.ModuleType | None
    load_error: GradingFailure | None = None
    # Maps a characteristic exception to a mistake slug: the grader's ``slug_for_exception``,
    # handed over by the impl fixture (graders.core.plugin), or by whoever builds this.
    exception_slugs: Callable[[BaseException], str | None] | None = None
    # How verdicts name the implementation; the file name unless set (e.g. "your notebook").
    label: str = ""
    # Everything the learner's code printed while graded (counted; see guard.PrintedOutput).
    printed: guard.PrintedOutput = field(default_factory=guard.PrintedOutput)
    _load_error_shown: bool = False
    _timed_out: str = ""  # the first call that ran past the time limit

    def __post_init__(self) -> None:
        self.label = self.label or self.path.name

    @classmethod
    def of(cls, kata: Kata, path: Path, module: types.ModuleType | None,
           load_error: GradingFailure | None = None, label: str = "",
           exception_slugs: Callable[[BaseException], str | None] | None = None,
           ) -> "Implementation":
        """The implementation graded as ``kata``; ``exception_slugs`` is its grader's map
        from characteristic exceptions to slugs, where the grader has one (the core never
        imports a grader to look for it)."""
        return cls(kata=kata, path=path, module=module, load_error=load_error, label=label,
                   exception_slugs=exception_slugs)

    def __repr__(self) -> str:
        return f"Implementation({self.label})"

    def attr(self, name: str) -> Any:
        """The public name ``name`` from the file, or a clear failure if it is missing."""
        if self.load_error is not None:
            if self._load_error_shown:
                raise type(self.load_error)(
                    _("{file} does not import (see the first failure)", file=self.label))
            self._load_error_shown = True
            raise self.load_error
        try:
            return getattr(self.module, name)
        except AttributeError:
            raise GradingFailure(
                _("{file} does not define {name} (see {readme} for the names to provide)",
                  file=self.label, name=name,
                  readme=f"{self.kata.name}/{i18n.readme_name(i18n.current())}")
            ) from None

    def call(self, fn: Callable[..., Any], *args: Any, what: str, on: str,
             exception_slugs: Callable[[BaseException], str | None] | None = None,
             **kwargs: Any) -> Any:
        """Run learner code under the kata's guard (see graders.core.guard.call).

        ``exception_slugs``, when given, replaces the grader's map for this call (an
        exception whose meaning depends on the input). After one call runs past the time
        limit, later calls fail at once: waiting out the limit in every check would only
        delay the same verdict.
        """
        if self._timed_out:
            raise GradingFailure(
                checked_line(what, on) + "\n  "
                + _("not run: {call} did not finish within {seconds} s in an earlier check; fix "
                    "that first", call=self._timed_out, seconds=f"{guard.CALL_TIME_LIMIT_S:g}"))
        try:
            return guard.call(
                fn, *args, what=what, on=on, forbidden=self.kata.forbidden,
                learner_file=self.path, exception_slugs=exception_slugs or self.exception_slugs,
                printed=self.printed, **kwargs,
            )
        except guard.TimedOut:
            self._timed_out = what
            raise
