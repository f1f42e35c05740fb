"""What every ``kata`` command shares: the service's words and errors
(graders.practice.common, re-exported here), the terminal's console and the status colours."""

from __future__ import annotations

import os

from rich.console import Console
from rich.markup import escape

from graders.practice.common import *  # noqa: F401,F403 (the names the commands use)
from graders.practice.common import (ALL_PASSED, CORE_PASSED, FAILING, NOT_STARTED,
                                     progress_words)
from graders.practice.common import _normalised  # noqa: F401

WIDE_ENOUGH_FOR_TITLES = 110  # `kata list` leaves the titles out of narrower terminals
STATUS_STYLE = {NOT_STARTED: "dim", FAILING: "red", CORE_PASSED: "yellow", ALL_PASSED: "green"}


def make_console() -> Console:
    """A console for the terminal: colours when it is one, plain text when it is not or when
    NO_COLOR is set (no escape codes at all, not even bold)."""
    no_color = bool(os.environ.get("NO_COLOR"))
    return Console(highlight=False, no_color=no_color, color_system=None if no_color else "auto")


def styled(status: str) -> str:
    """A status for a table cell: coloured, in the learner's language."""
    return f"[{STATUS_STYLE.get(status, 'bold red')}]{escape(progress_words(status))}[/]"
