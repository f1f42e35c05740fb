"""Find and load the implementation under test.

Which file: ``--impl PATH`` (or ``KATA_IMPL=PATH``), ``--solutions`` for the hidden
reference, otherwise the kata's own skeleton. The file is executed as a fresh module
under a private name, from its source text: nothing is written next to it (no
``__pycache__``), and a file that does not import gives one short paragraph.
"""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

from graders.core import guard
from graders.core.registry import Kata
from graders.core.i18n import _
from graders.core.report import GradingFailure

ENV_VAR = "KATA_IMPL"


class ImplementationLoadError(GradingFailure):
    """The implementation file is missing or does not import."""


def choose_path(kata: Kata, impl: str | None, solutions: bool) -> Path:
    """The file to grade: ``--impl``/``KATA_IMPL`` first, then ``--solutions``, then the skeleton."""
    impl = impl or os.environ.get(ENV_VAR) or None
    if impl:
        return Path(impl).expanduser().resolve()
    if solutions:
        return kata.solution_path
    return kata.skeleton_path


_counter = 0


def shown_path(path: Path) -> str:
    """``path`` as a verdict names it: a kata's file as ``katas/NN_name/file`` (wherever the
    learner's copy is), another file relative to the working folder, else as given."""
    path = Path(path)
    if len(path.parts) >= 3 and path.parts[-3] == "katas":
        return "/".join(path.parts[-3:])
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return str(path)


def load(path: Path, kata: Kata) -> types.ModuleType:
    """Execute ``path`` as a new module, under the kata's guard."""
    global _counter
    if not path.is_file():
        raise ImplementationLoadError(
            _("could not grade {kata}: there is no file {path}", kata=kata.name, path=path)
        )
    source = path.read_text(encoding="utf-8", errors="replace")
    _counter += 1
    name = f"_kata_impl_{kata.id}_{_counter}"
    module = types.ModuleType(name)
    module.__file__ = str(path)
    # Registered so that dataclasses, pickling and `typing` lookups inside it work.
    sys.modules[name] = module
    try:
        code = compile(source, str(path), "exec")
        # Import-time code runs under the same guard as every graded call.
        guard.call(exec, code, module.__dict__, what=_("importing {file}", file=path.name), on=_("import"),
                   forbidden=kata.forbidden, learner_file=path)
    except SyntaxError as exc:
        del sys.modules[name]
        raise ImplementationLoadError(
            _("{path} does not import: syntax error on line {line}: {error}", path=shown_path(path),
              line=exc.lineno, error=exc.msg)
            + f"\n  {(exc.text or '').rstrip()}"
        ) from None
    except GradingFailure as exc:
        del sys.modules[name]
        details = str(exc).splitlines()[1:]  # drop the "checked importing ..." header
        raise ImplementationLoadError(_("{path} does not import:", path=shown_path(path)) + "\n"
                                      + "\n".join(details)) from None
    return module
