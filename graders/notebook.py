"""Grading from a Jupyter notebook: the ``%%kata`` cell magic.

In a kata's notebook::

    %load_ext graders.notebook

    %%kata 01
    def scaled_dot_product_attention(query, key, value, attn_mask=None):
        ...

runs the cell (so its names are usable in the notebook), saves its source to
``notebooks/work/<file>`` (the notebook's own copy, never the file in katas/), and grades
that file with the kata's grader, printing the verdicts and the scoreboard. A failing
grade never raises: the notebook keeps running.
"""

from __future__ import annotations

import os
from pathlib import Path

from graders import registry
from graders.cli import run_pytest
from graders.registry import NOTEBOOKS_DIR

WORK_DIR_VAR = "KATA_NOTEBOOK_WORK"  # where %%kata saves cells (the self-tests use a temp dir)


def work_dir() -> Path:
    return Path(os.environ.get(WORK_DIR_VAR) or NOTEBOOKS_DIR / "work")


def grade(kata_key: str, path: Path) -> int:
    """Grade ``path`` as kata ``kata_key`` in a fresh process; print the result, return pytest's status."""
    kata = registry.get(kata_key)
    result = run_pytest(str(kata.folder), "--impl", str(path), "-q", "--no-header",
                        "-p", "no:cacheprovider", capture=True)
    print(result.stdout.strip())
    if result.returncode not in (0, 1):
        print(result.stderr.strip())
    return result.returncode


def kata_cell(line: str, cell: str) -> None:
    """The ``%%kata NN`` cell magic (see the module docstring)."""
    from IPython import get_ipython

    kata = registry.get(line.strip())
    path = work_dir() / kata.file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(cell)
    outcome = get_ipython().run_cell(cell)
    if not outcome.success:
        return  # IPython has shown the error; grading it would only repeat it
    status = grade(kata.id, path)
    print("\nall checks pass" if status == 0 else f"\n(graded {path})")


def load_ipython_extension(ipython) -> None:
    ipython.register_magic_function(kata_cell, magic_kind="cell", magic_name="kata")
