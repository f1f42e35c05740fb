"""Grade a kata in this process and return the result as data.

``pytest katas/NN_name`` is the plain way to grade. ``kata check`` and the notebooks'
grading cell run the very same checks through :func:`grade` (pytest in process, its own
output silenced) and get a :class:`~graders.core.results.KataResult`; the front ends lay it
out (graders.frontends.rendering prints it for a terminal, the room makes HTML of it).
"""

from __future__ import annotations

import contextlib
import inspect
import io
import types
from pathlib import Path
from typing import Any

from graders.core import registry
from graders.core.i18n import _
from graders.core.registry import REPO_ROOT, Kata
from graders.core.results import KataResult


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
