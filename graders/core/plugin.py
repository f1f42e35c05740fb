"""The pytest side of grading: options, the ``impl`` fixture, short verdicts, the scoreboard.

Loaded by the repository's root ``conftest.py``. A kata's thin ``test_<file>.py`` imports
its grader's tests; the ``impl`` fixture loads the file chosen by ``--impl PATH`` /
``KATA_IMPL`` / ``--solutions`` (default: the kata's own file).
"""

from __future__ import annotations

import sys
import textwrap

import pytest

from graders.core import fast_start

fast_start.import_torch()  # first: torch is imported below and by every graders.core module

import torch  # noqa: E402

from graders.core import catalogue, interview, loader, registry, torch_shortcuts  # noqa: E402
from graders.core.i18n import _  # noqa: E402
from graders.core.implementation import Implementation  # noqa: E402
from graders.core.loader import ImplementationLoadError  # noqa: E402
from graders.core.report import GradingFailure, NotImplementedYet, start_with  # noqa: E402
from graders.core.results import (CORE, FAILED, FOLLOW_UP, NOT_IMPLEMENTED, PASSED,  # noqa: E402
                                  SKIPPED, CheckResult, KataResult, shown, shown_tally,
                                  skipped_words)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("attention-katas")
    group.addoption(
        "--impl", metavar="PATH", default=None,
        help=_("grade the file at PATH instead of the kata's own file (also: {variable}=PATH)",
               variable=loader.ENV_VAR),
    )
    group.addoption(
        "--solutions", action="store_true", default=False,
        help=_("grade the hidden reference solution in solutions/"),
    )


_LOADED_KEY = pytest.StashKey[dict]()
# graders.core.session may put an Implementation here: objects defined in a notebook rather
# than a file, graded instead of the file.
INJECTED_KEY = pytest.StashKey[Implementation]()


@pytest.fixture
def impl(request: pytest.FixtureRequest) -> Implementation:
    """The implementation under test for the kata whose folder holds the requesting test file.

    Loaded once per file per session; a load failure surfaces inside the first check that
    uses it (as a failed check, not a setup error). The grader hands over its map from
    characteristic exceptions to slugs as ``slug_for_exception`` in the module that defines
    the requesting test (none: no exception names a mistake beyond the shared ones; a
    grader whose map depends on the input passes ``exception_slugs=`` to ``impl.call``).
    """
    kata = registry.get(request.path)
    grader = sys.modules[request.function.__module__]
    exception_slugs = getattr(grader, "slug_for_exception", None)
    injected = request.config.stash.get(INJECTED_KEY, None)
    if injected is not None and injected.kata == kata:
        injected.exception_slugs = exception_slugs
        return injected
    path = loader.choose_path(
        kata, request.config.getoption("impl"), request.config.getoption("solutions")
    )
    loaded = request.config.stash.setdefault(_LOADED_KEY, {})
    if (kata.name, path) not in loaded:
        try:
            module, error = loader.load(path, kata), None
        except ImplementationLoadError as exc:
            module, error = None, exc
        loaded[kata.name, path] = Implementation.of(kata, path, module, load_error=error,
                                                    exception_slugs=exception_slugs)
    return loaded[kata.name, path]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """Run a check with its kata's words for the mistakes it names (catalogue.mistake)."""
    try:
        kata_id = registry.get(item.path).id
    except KeyError:
        kata_id = None
    with catalogue.grading(kata_id):
        return (yield)


class VerdictWithoutTraceback:
    """Makes a grading failure's report without formatting its traceback: the verdict
    replaces it (:func:`pytest_runtest_makereport`), and pytest's formatting (which reads
    and parses every file the traceback passes through) was about 40% of the time of a
    session whose checks fail. Registered in :func:`pytest_configure`: it must run before
    pytest's own report maker, beside this module's wrapper of the same hook."""

    @staticmethod
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> pytest.TestReport | None:
        if call.excinfo is None or not isinstance(call.excinfo.value, GradingFailure):
            return None
        sections = [(f"Captured {key} {when}", content) for when, key, content in item._report_sections]
        return pytest.TestReport(item.nodeid, item.location, dict.fromkeys(item.keywords, 1), "failed",
                                 str(call.excinfo.value), call.when, sections, call.duration,
                                 call.start, call.stop, user_properties=item.user_properties)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Print a grading failure as its verdict alone, not as a traceback."""
    report = yield
    if call.excinfo is not None and isinstance(call.excinfo.value, GradingFailure):
        report.verdict = str(call.excinfo.value)
        report.not_implemented = isinstance(call.excinfo.value, NotImplementedYet)
        report.slug = call.excinfo.value.slug
        report.pictures = call.excinfo.value.pictures
        report.longrepr = report.verdict
        if _in_mock(item):  # shown without the mistake's name and hint; recorded whole
            report.longrepr = interview.hidden_verdict(report.verdict, report.slug)
        elif report.slug:  # explained once a run; recorded whole
            report.longrepr = _explained_once(item, report.verdict, report.slug)
    # The call phase, or the setup phase when setup failed (e.g. the file does not import).
    if report.when == "call" or (report.when == "setup" and not report.passed):
        record(item, report)
    return report


_RESULTS_KEY = pytest.StashKey[dict]()
_EXPLAINED_KEY = pytest.StashKey[set]()


def _explained_once(item: pytest.Item, verdict: str, slug: str) -> str:
    """``verdict`` as the terminal shows it: a mistake already explained by an earlier
    failure of this run keeps its ``[slug]`` line, which points there, without its
    explanation and hint (one mistake failing six checks reads once, not six times)."""
    from graders.core.report import mistake_lines

    explained = item.config.stash.setdefault(_EXPLAINED_KEY, set())
    lines = verdict.splitlines()
    full = mistake_lines(slug)
    if slug not in explained or not all(line in lines for line in full):
        explained.add(slug)
        return verdict
    pointer = f"[{slug}] " + _("the same mistake as above: its explanation and hint are there")
    lines[lines.index(full[0])] = pointer
    lines.remove(full[1])
    return "\n".join(lines)


def _in_mock(item: pytest.Item) -> bool:
    """Whether a mock interview of this check's kata runs in this copy of the repository."""
    try:
        return interview.hides(registry.get(item.path).name, registry.REPO_ROOT)
    except KeyError:
        return False


def record(item: pytest.Item, report: pytest.TestReport) -> None:
    """Add one graded check to the session's results (see :func:`results_of`)."""
    tier = CORE if item.get_closest_marker("core") else (
        FOLLOW_UP if item.get_closest_marker("followup") else None)
    if tier is None:
        return
    try:
        kata = registry.get(item.path).name
    except KeyError:
        return
    if report.passed:
        outcome, verdict = PASSED, ""
    elif report.skipped:  # e.g. a CUDA follow-up without CUDA: kept, with its reason
        outcome, verdict = SKIPPED, skip_reason(report)
    else:
        outcome = NOT_IMPLEMENTED if getattr(report, "not_implemented", False) else FAILED
        # The whole verdict, even where the terminal shows less (a mock interview's).
        verdict = getattr(report, "verdict", None) or report.longreprtext.strip()
    results = item.config.stash[_RESULTS_KEY]
    result = results.setdefault(kata, KataResult(kata))
    result.checks.append(
        CheckResult(item.name, tier, outcome, verdict, getattr(report, "slug", None),
                    title=getattr(getattr(item, "function", None), "title", ""),
                    pictures=getattr(report, "pictures", None)))
    implementation = getattr(item, "funcargs", {}).get("impl")
    if isinstance(implementation, Implementation):
        result.note = implementation.printed.note() or result.note
        result.printed = implementation.printed.shown() or result.printed
        result.import_failed = result.import_failed or implementation.load_error is not None


def skip_reason(report: pytest.TestReport) -> str:
    """Why pytest skipped a check ("needs a CUDA GPU"), from its report."""
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return reason.removeprefix("Skipped: ").strip()


def results_of(config: pytest.Config) -> dict[str, KataResult]:
    """Every kata graded in this session, by name."""
    return config.stash[_RESULTS_KEY]


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_RESULTS_KEY] = {}
    config.pluginmanager.register(VerdictWithoutTraceback(), "kata-verdict-without-traceback")
    # Graded tensors are tiny: extra threads only contend (a kata ran 5x slower on a busy
    # two-core machine with torch's default thread count).
    torch.set_num_threads(1)
    torch_shortcuts.skip_symbolic_shapes_import()
    _skip_final_gc(config)


def _skip_final_gc(config: pytest.Config) -> None:
    """pytest ends a session with gc.collect() calls looking for unraisable exceptions;
    with torch loaded each costs about 0.1 s, a tenth of a kata's whole grading time."""
    try:
        from _pytest.unraisableexception import gc_collect_iterations_key
    except ImportError:  # a pytest without the knob: pay the collection
        return
    config.stash[gc_collect_iterations_key] = 0


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    graded = results_of(config)
    if not graded:
        return
    terminalreporter.section(_("kata scoreboard"))
    for name, result in sorted(graded.items()):
        parts = [shown_tally(label, passed, total) for label, passed, total in result.tally if total]
        parts += [skipped_words(result)] if result.skipped else []  # not counted as passed
        terminalreporter.write_line(f"{name}  " + _(", ").join(parts))
        if result.failures:
            # Titles may hold commas (and 、): they are listed with semicolons (zh review L1).
            terminalreporter.write_line("    " + _("failing: {checks}", checks=_("; ").join(
                c.label for c in result.failures)))
        if result.printed and config.getoption("capture") == "no":  # pytest -s: show them
            terminalreporter.write_line(textwrap.indent(result.printed, "    "))
        elif result.note:
            terminalreporter.write_line(f"    {result.note}")
        if interview.hides(name, registry.REPO_ROOT):
            terminalreporter.write_line("    " + interview.notice())
        if any(c.outcome == NOT_IMPLEMENTED for c in result.checks):
            terminalreporter.write_line("    " + start_with(registry.get(name)))
