"""Grade a kata in this process and show the result compactly.

``pytest katas/NN_name`` is the plain way to grade. ``kata check`` and the notebooks'
grading cell run the very same checks through :func:`grade` (pytest in process, its own
output silenced) and print :func:`render`'s table: check, tier, result, slug and hint,
then the first failure's verdict.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import types
from pathlib import Path
from typing import Any

from graders.core import i18n, registry
from graders.core.catalogue import MISTAKES, mistake
from graders.core.i18n import _, translate
from graders.core.registry import REPO_ROOT, Kata
from graders.core.report import start_with
from graders.core.results import (ALL_PASSED, CORE_PASSED, FAILED, NOT_IMPLEMENTED, NOT_STARTED,
                             PASSED, SKIPPED, KataResult, shown, shown_tally, skipped_words)


class _Inject:
    """A pytest plugin that hands the ``impl`` fixture an implementation that is not a file."""

    def __init__(self, implementation: Any):
        self.implementation = implementation

    def pytest_configure(self, config) -> None:
        from graders.core import plugin

        config.stash[plugin.INJECTED_KEY] = self.implementation


def _namespace_implementation(kata: Kata, objects: dict[str, Any]):
    from graders.core.implementation import Implementation

    module = types.ModuleType(f"_kata_objects_{kata.id}")
    module.__dict__.update(objects)
    # Where the learner's code lives (a notebook cell's file), so errors point into it.
    source = next(filter(None, map(_source_file, objects.values())), "notebook")
    return Implementation.of(kata, Path(source), module, label=_("your notebook"))


def _source_file(obj: Any) -> str | None:
    """The file a learner's function or class was written in (a notebook cell has one too).

    Read from the functions' code objects: ``inspect`` cannot locate a class defined in a
    notebook cell.
    """
    candidates = vars(obj).values() if inspect.isclass(obj) else [obj]
    for candidate in candidates:
        code = getattr(candidate, "__code__", None)
        if code is not None:
            return code.co_filename
    return None


def grade(kata_key: str, path: str | Path | None = None, *, solutions: bool = False,
          objects: dict[str, Any] | None = None) -> KataResult:
    """Run kata ``kata_key``'s grader on a file (``path``; default the kata's own file, or the
    reference with ``solutions``) or on ``objects`` (public name -> function or class)."""
    from graders.core import plugin  # imports torch: only once grading is really wanted

    kata = registry.get(kata_key)
    args = [str(kata.folder), "-c", str(REPO_ROOT / "pyproject.toml"), "--rootdir", str(REPO_ROOT),
            "-q", "-p", "no:cacheprovider"]
    if path is not None:
        args += ["--impl", str(Path(path).resolve())]
    elif solutions:
        args.append("--solutions")
    plugins: list[Any] = []
    if objects is not None:
        plugins.append(_Inject(_namespace_implementation(kata, objects)))
    found: dict[str, KataResult] = {}

    class Collect:
        @staticmethod
        def pytest_unconfigure(config) -> None:
            found.update(plugin.results_of(config))

    import pytest

    pytest_output = io.StringIO()  # the report is ours to render; keep pytest's for errors
    with contextlib.redirect_stdout(pytest_output), contextlib.redirect_stderr(pytest_output):
        exit_code = pytest.main(args, plugins=[Collect, *plugins])
    if exit_code == pytest.ExitCode.INTERRUPTED:
        raise KeyboardInterrupt  # pytest caught the learner's Ctrl-C: pass it on (kata watch)
    result = found.get(kata.name) or KataResult(kata.name)
    if not result.checks:
        tail = "\n".join(pytest_output.getvalue().strip().splitlines()[-15:])
        result.error = (_("the grader did not run (pytest exit status {status}):",
                          status=int(exit_code)) + f"\n{tail}")
    return result


def render(result: KataResult, console=None, *, plain: bool = False) -> None:
    """Print the compact report: one row per check, then the first failure in full, laid out
    by :mod:`graders.core.layout` to the console's width (a table, or one block per check
    where the table cannot fit). ``plain``: output that is not a terminal: one line per
    check, nothing wrapped."""
    from rich.console import Console
    from rich.markup import escape
    from rich.text import Text

    from graders.core import layout

    console = console or Console()
    kata = registry.get(result.kata)
    if result.error:
        layout.print_prose(console, Text.assemble((kata.name, "bold red"), ": ", result.error),
                           plain=plain)
        return
    styles = {PASSED: "green", FAILED: "red", NOT_IMPLEMENTED: "yellow", SKIPPED: "dim"}
    rows, hinted = [], set()
    for check in result.core + result.follow_ups:
        hint = ""
        if check.slug in MISTAKES:
            hint = translate(mistake(check.slug, kata.id).hint) if check.slug not in hinted else _("(as above)")
            hinted.add(check.slug)
        rows.append([check.label, shown(check.tier),
                     Text(shown(check.outcome), style=styles[check.outcome]),
                     f"[{check.slug}]" if check.slug else "", hint])
    layout.print_table(console, [_("check"), _("tier"), _("result"), _("mistake"), _("hint")],
                       rows, title=f"{kata.name} — {translate(kata.title)}", plain=plain)
    counts = _(", ").join(shown_tally(label, passed, total, short=True)
                          for label, passed, total in result.tally
                          if total or label == "core")  # no follow-ups: no "0/0"
    if result.skipped:  # not run here, e.g. no CUDA: said, never counted as passed
        counts += _(", ") + skipped_words(result)
    layout.print_prose(console, _("{counts}: {status}", counts=escape(counts),
                                  status=f"[bold]{escape(shown(result.status))}[/]"),
                       markup=True, plain=plain)
    if result.skipped and result.status == ALL_PASSED:
        layout.print_prose(console, Text(_("(a check skipped here did not run, so it cannot fail: "
                                           "run it where it can, e.g. on a CUDA GPU)"), style="dim"),
                           plain=plain)
    if result.note:
        layout.print_prose(console, result.note, markup=False, plain=plain)
    if result.status == NOT_STARTED:
        layout.print_prose(console, start_with(kata), markup=False, plain=plain)
    elif result.status != ALL_PASSED:
        first = result.failures[0]
        if result.status != CORE_PASSED:
            label = _("first failure: {title} ({check})", title=first.label, check=first.name)
        else:
            label = _("first follow-up to fix: {title} ({check})", title=first.label,
                      check=first.name)
        console.print()
        layout.print_prose(console, Text(label, style="bold"), plain=plain)
        layout.print_prose(console, first.verdict, markup=False, plain=plain)
