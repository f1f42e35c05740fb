"""Notebooks: one per kata, shipped clean, and run by a real Jupyter kernel.

Each notebook is executed twice with nbclient: untouched (its ``%%kata`` cell still the
skeleton: the grade says "not implemented yet", and nothing raises) and with the
reference solution pasted into that cell (every check passes).
"""

from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient

from graders.notebook import WORK_DIR_VAR
from graders.registry import KATAS, NOTEBOOKS_DIR, Kata

NOTEBOOK_KATAS = [k for k in KATAS if k.notebook_path.exists()]


def kata_cell(notebook, kata: Kata):
    cells = [c for c in notebook.cells if c.cell_type == "code" and c.source.startswith("%%kata")]
    assert len(cells) == 1, f"{kata.notebook_path.name} needs exactly one %%kata cell"
    assert cells[0].source.splitlines()[0].split()[1] in (kata.id, kata.name)
    return cells[0]


def execute(notebook, work_dir) -> str:
    """Run every cell in a fresh kernel; return all the text the cells printed.

    %%kata saves cells under ``work_dir`` (not notebooks/work), so runs never share a file.
    """
    setup = nbformat.v4.new_code_cell(
        f"import os; os.environ[{WORK_DIR_VAR!r}] = {str(work_dir)!r}")
    notebook.cells.insert(0, setup)
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS_DIR)}}).execute()
    texts = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            texts.append(output.get("text", "") or str(output.get("data", {}).get("text/plain", "")))
            assert output.output_type != "error", "".join(output.get("traceback", []))
    return "\n".join(texts)


def test_every_kata_has_a_notebook():
    assert [k.name for k in NOTEBOOK_KATAS] == [k.name for k in KATAS]


@pytest.mark.parametrize("kata", NOTEBOOK_KATAS, ids=lambda k: k.name)
def test_notebook_ships_without_outputs_or_solution(kata):
    notebook = nbformat.read(kata.notebook_path, as_version=4)
    nbformat.validate(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, "clear the outputs"
    source = kata_cell(notebook, kata).source
    assert "NotImplementedError" in source, "the %%kata cell must hold the skeleton"
    skeleton = kata.skeleton_path.read_text()
    assert source.split("\n", 1)[1].strip() in skeleton, "the %%kata cell drifted from the skeleton"


@pytest.mark.parametrize("kata", NOTEBOOK_KATAS, ids=lambda k: k.name)
def test_untouched_notebook_runs_and_says_not_implemented(kata, tmp_path):
    notebook = nbformat.read(kata.notebook_path, as_version=4)
    output = execute(notebook, tmp_path)
    assert "not implemented yet" in output


@pytest.mark.parametrize("kata", NOTEBOOK_KATAS, ids=lambda k: k.name)
def test_notebook_with_reference_solution_passes(kata, tmp_path):
    notebook = nbformat.read(kata.notebook_path, as_version=4)
    cell = kata_cell(notebook, kata)
    cell.source = cell.source.splitlines()[0] + "\n" + kata.solution_path.read_text()
    output = execute(notebook, tmp_path)
    assert "all checks pass" in output, output
