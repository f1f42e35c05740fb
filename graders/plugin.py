"""The pytest side of grading: options, the ``impl`` fixture, short verdicts, the scoreboard.

Loaded by the repository's root ``conftest.py``. A kata's thin ``test_<file>.py`` imports
its grader's tests; the ``impl`` fixture loads the file chosen by ``--impl PATH`` /
``KATA_IMPL`` / ``--solutions`` (default: the kata's own file).
"""

from __future__ import annotations

import importlib
from collections import defaultdict

import pytest
import torch

from graders import loader, registry
from graders.implementation import Implementation
from graders.loader import ImplementationLoadError
from graders.report import GradingFailure, NotImplementedYet


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("attention-katas")
    group.addoption(
        "--impl", metavar="PATH", default=None,
        help=f"grade the file at PATH instead of the kata's own file (also: {loader.ENV_VAR}=PATH)",
    )
    group.addoption(
        "--solutions", action="store_true", default=False,
        help="grade the hidden reference solution in solutions/",
    )


_LOADED_KEY = pytest.StashKey[dict]()


@pytest.fixture
def impl(request: pytest.FixtureRequest) -> Implementation:
    """The implementation under test for the kata whose folder holds the requesting test file.

    Loaded once per file per session; a load failure surfaces inside the first check that
    uses it (as a failed check, not a setup error).
    """
    kata = registry.get(request.path)
    path = loader.choose_path(
        kata, request.config.getoption("impl"), request.config.getoption("solutions")
    )
    loaded = request.config.stash.setdefault(_LOADED_KEY, {})
    if (kata.name, path) not in loaded:
        grader = importlib.import_module(kata.grader_module)
        try:
            module, error = loader.load(path, kata), None
        except ImplementationLoadError as exc:
            module, error = None, exc
        loaded[kata.name, path] = Implementation(
            kata=kata, path=path, module=module, load_error=error,
            exception_slugs=getattr(grader, "slug_for_exception", None),
        )
    return loaded[kata.name, path]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Print a grading failure as its verdict alone, not as a traceback."""
    report = yield
    if call.excinfo is not None and isinstance(call.excinfo.value, GradingFailure):
        text = str(call.excinfo.value)
        notes = getattr(call.excinfo.value, "__notes__", None) or []
        # Hypothesis adds "Falsifying example: ..." notes; the verdict already names the input.
        report.longrepr = text + "".join(
            f"\n  ({n.strip()})" for n in notes
            if not n.startswith(("Falsifying", "Failing test case"))
        )
        report.not_implemented = isinstance(call.excinfo.value, NotImplementedYet)
    # The call phase, or the setup phase when setup failed (e.g. the file does not import).
    if report.when == "call" or (report.when == "setup" and not report.passed):
        item.config.stash[_SCOREBOARD_KEY].record(item, report)
    return report


class _Scoreboard:
    """Counts core and follow-up checks per kata for the closing summary."""

    def __init__(self) -> None:
        self.outcomes: dict[str, dict[str, list[tuple[str, bool]]]] = defaultdict(
            lambda: defaultdict(list)
        )
        self.not_implemented: set[str] = set()

    def record(self, item: pytest.Item, report: pytest.TestReport) -> None:
        kind = "core" if item.get_closest_marker("core") else (
            "followup" if item.get_closest_marker("followup") else None)
        if kind is None or report.skipped:
            return
        try:
            kata = registry.get(item.path).name
        except KeyError:
            return
        self.outcomes[kata][kind].append((item.name, report.passed))
        if getattr(report, "not_implemented", False):
            self.not_implemented.add(kata)


_SCOREBOARD_KEY = pytest.StashKey[_Scoreboard]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_SCOREBOARD_KEY] = _Scoreboard()
    # Graded tensors are tiny: extra threads only contend (a kata ran 5x slower on a busy
    # two-core machine with torch's default thread count).
    torch.set_num_threads(1)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    board = config.stash[_SCOREBOARD_KEY]
    if not board.outcomes:
        return
    terminalreporter.section("kata scoreboard")
    for kata, kinds in sorted(board.outcomes.items()):
        parts = []
        for kind, label in (("core", "core"), ("followup", "follow-ups")):
            results = kinds.get(kind, [])
            if results:
                passed = sum(ok for _, ok in results)
                parts.append(f"{label}: {passed}/{len(results)} passed")
        terminalreporter.write_line(f"{kata}  " + ", ".join(parts))
        failing = [name for kind in ("core", "followup") for name, ok in kinds.get(kind, []) if not ok]
        if failing:
            terminalreporter.write_line("    failing: " + ", ".join(failing))
        if kata in board.not_implemented:
            readme = registry.get(kata).readme_path.relative_to(registry.REPO_ROOT)
            terminalreporter.write_line(f"    not implemented yet: start with {readme}")
