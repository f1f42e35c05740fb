"""The room's Run: the kata README's example, typed at a Python prompt, run against the
learner's code, apart from the full Check.

The example is every ``>>>`` statement (with its ``...`` continuation lines) of the README's
python code blocks, in order: what the README shows a reader typing. They run in a fresh
Python (``python -m graders.frontends.serve.running KATA PATH``) that has ``torch``,
``math``, ``F``, ``nn`` and the learner's public names, as the README's prompt has, under a
time limit, its process group ended afterwards as a grading's is
(graders.frontends.serve.grading). Each statement gives what it printed, its value's repr
when it is an expression, and the shapes of the tensors in that value; the first exception
ends the run and is shown as its last line.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import re
import sys
from pathlib import Path

from graders.core import registry
from graders.core.registry import Kata
from graders.frontends.serve.grading import run_isolated

RUN_TIME_LIMIT_S = 20.0  # a fresh Python imports torch first: seconds, not a grading's minutes
MARKER = "KATA-RUN-JSON:"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)


def example(readme: str) -> list[str]:
    """The ``>>>`` statements of ``readme``'s python code blocks, each with its ``...``
    continuation lines, in order (a README with none: an empty list)."""
    statements: list[str] = []
    for block in _BLOCK.findall(readme):
        for line in block.splitlines():
            if line.startswith(">>> "):
                statements.append(line[4:])
            elif (line.startswith("... ") or line == "...") and statements:
                statements[-1] += "\n" + line[4:]
    return statements


def shapes(value) -> list[str]:
    """The shapes (and dtypes) of the tensors in ``value``, a tensor or a tuple/list of them."""
    import torch

    items = value if isinstance(value, (tuple, list)) else [value]
    return [f"{tuple(item.shape)} {str(item.dtype).removeprefix('torch.')}" for item in items
            if isinstance(item, torch.Tensor)]


def run_statements(kata: Kata, path: str, statements: list[str]) -> list[dict]:
    """Each statement run at a prompt holding the learner's names: {source, printed, value,
    shapes} or, for the one that raised, {source, printed, error}."""
    import math

    import torch
    import torch.nn.functional as F
    from torch import nn

    spec = importlib.util.spec_from_file_location("learner_run", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    names = {"torch": torch, "math": math, "F": F, "nn": nn,
             **{name: getattr(module, name) for name in kata.public_names if hasattr(module, name)}}
    lines = []
    for source in statements:
        printed = io.StringIO()
        entry: dict = {"source": source}
        try:
            with contextlib.redirect_stdout(printed):
                try:
                    code = compile(source, "<README>", "eval")
                except SyntaxError:
                    exec(compile(source, "<README>", "exec"), names)
                else:
                    value = eval(code, names)
                    if value is not None:
                        entry["value"], entry["shapes"] = repr(value), shapes(value)
        except Exception as error:  # the learner's code raised: shown, and the run ends
            entry["error"] = f"{type(error).__name__}: {error}"
        entry["printed"] = printed.getvalue()[-4000:]
        lines.append(entry)
        if "error" in entry:
            break
    return lines


def run_example(kata: Kata, path: Path, readme: str) -> dict:
    """The README's example run against the file at ``path`` in a fresh Python:
    ``{"lines": [...]}``, or ``{"error": ...}`` when it could not run (no example, a file
    that does not import, past the time limit)."""
    from graders.core.i18n import _

    if not example(readme):
        return {"error": _("this kata's README has no example to run (>>> lines); Check grades "
                           "your code")}
    finished = run_isolated(["-m", "graders.frontends.serve.running", kata.id, str(path)],
                            RUN_TIME_LIMIT_S)
    stdout, stderr = finished.stdout, finished.stderr
    if finished.timed_out:
        return {"error": _("the example took longer than {seconds} s and was stopped: is there "
                           "an endless loop in your code?", seconds=f"{RUN_TIME_LIMIT_S:g}")}
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARKER):
            return json.loads(line[len(MARKER):])
    last = (stderr or stdout).strip().splitlines()[-1:] or [""]
    return {"error": _("your file did not run: {error}", error=last[0])}


def main(argv: list[str]) -> int:
    kata_key, path = argv
    kata = registry.get(kata_key)
    readme = (registry.KATAS_DIR / kata.name / "README.md").read_text(encoding="utf-8")  # the
    # repository's: the example is the same in every language, and not the learner's to edit
    result = {"lines": run_statements(kata, path, example(readme))}
    sys.stdout.write("\n" + MARKER + json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
