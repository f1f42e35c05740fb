"""What a running mock interview hides, wherever a verdict is shown.

While ``kata mock`` runs for a kata, every front end shows that kata's verdicts without the
mistake's name, its explanation and its hint: ``kata check``, ``kata watch``, a notebook's
grading cell and ``pytest katas/NN_name`` alike. They come back with the verdict of
``kata mock --submit``. :func:`hides` decides, :func:`without_mistakes` and
:func:`hidden_verdict` strip; the recorded results keep everything (the report needs the
slugs).

The running mock is read from the learner's state file of the copy of the repository
(:mod:`graders.core.statefile`; written by :mod:`graders.practice.state`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from graders.core import statefile
from graders.core.results import KataResult


def running_mock_kata(root: Path) -> str | None:
    """The kata of the mock interview running in the copy at ``root``, or None (no state
    file, no mock, or a state file that cannot be read: hiding never breaks grading)."""
    try:
        mock = statefile.read_raw(statefile.state_path(root)).get("mock")
    except (OSError, ValueError, AttributeError):
        return None
    kata = mock.get("kata") if isinstance(mock, dict) else None
    return kata if isinstance(kata, str) else None


def hides(kata: str, root: Path) -> bool:
    """Whether verdicts of ``kata`` (a kata name, "13_gqa") are shown without mistake names
    and hints: a mock interview of it is running in the copy at ``root``."""
    return running_mock_kata(root) == kata


def hidden_verdict(verdict: str, slug: str | None) -> str:
    """``verdict`` less the mistake's lines: ``[slug] explanation`` and ``hint: ...``. What
    was checked, on which input, and the expected and actual values stay."""
    from graders.core.report import is_hint_line, mistake_lines  # imports torch: only now

    named = set(mistake_lines(slug)) if slug else set()
    prefix = f"[{slug}] " if slug else None
    return "\n".join(line for line in verdict.splitlines()
                     if line not in named and not is_hint_line(line)
                     and not (prefix and line.startswith(prefix)))


def without_mistakes(result: KataResult) -> KataResult:
    """``result`` as a running mock interview shows it: no slugs, no explanations of them,
    no hints."""
    checks = [dataclasses.replace(check, slug=None, verdict=hidden_verdict(check.verdict, check.slug))
              for check in result.checks]
    return dataclasses.replace(result, checks=checks)


def notice() -> str:
    """The line said where a verdict is shown without its mistake and hint."""
    from graders.core.i18n import _

    return _("(a mock interview of this kata is running: mistake names and hints are hidden "
             "until you hand it in with kata mock --submit)")
