"""Build every kata's notebook from the kata's own sources, so the two cannot drift apart.

    python notebooks/build.py           # (re)write notebooks/NN_name.ipynb for every kata
    python notebooks/build.py --check   # exit 1, listing the notebooks that differ
    python notebooks/build.py 03        # only kata 03's notebook

A notebook is, in order:
  1. a title cell from the registry (title, difficulty, prerequisites);
  2. the kata's README.md, the problem statement;
  3. a setup cell (``from graders.frontends.notebook import check, quiz``, seeds);
  4. the cells of ``notebooks/lessons/NN_name.py`` (jupytext "percent" format), in which
     two marker cells are replaced:
       ``# kata: exercise`` -> a markdown cell pointing to the problem, the skeleton file's
                              source as a plain code cell, and the grading cell
                              ``result = check("NN_name", <the skeleton's public names>)``;
       ``# kata: quiz``     -> the questions of graders/frontends/quiz.py and the ``answers`` cell.
The skeleton is read from its pristine copy in graders/skeletons/, so a learner's edits to
katas/NN_name/<file> never change a build. The output is deterministic (cell ids are the
kata's name and the cell's index) and carries no outputs or execution counts.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import jupytext
import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from graders.frontends import quiz
from graders.core import registry
from graders.core.registry import KATAS, NOTEBOOKS_DIR, REPO_ROOT, Kata

LESSONS_DIR = NOTEBOOKS_DIR / "lessons"
EXERCISE_MARKER = "# kata: exercise"
QUIZ_MARKER = "# kata: quiz"
# Tags on the generated cells: the self-tests find them by tag, and so can a reader.
SKELETON_TAG, GRADING_TAG, QUIZ_ANSWERS_TAG = "kata-skeleton", "kata-grading", "kata-quiz-answers"

KERNEL_METADATA = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
}

SETUP_SOURCE = """\
# Setup: the grading helpers, and a fixed seed so the examples print the same numbers each run.
import torch

from graders.frontends.notebook import check, quiz

torch.manual_seed(0)
torch.set_printoptions(precision=4, sci_mode=False)"""


def lesson_path(kata: Kata) -> Path:
    return LESSONS_DIR / f"{kata.name}.py"


def grading_source(kata: Kata) -> str:
    names = ", ".join(kata.public_names)
    return f'result = check("{kata.name}", {names})'


def quiz_answers_source(kata: Kata, answers: dict[int, object] | None = None) -> str:
    """The quiz's code cell: an ``answers`` dict (None = unanswered) and the ``quiz`` call.
    The self-tests build it with the answer key to play a learner who knows the answers."""
    answers = answers or {}
    lines = ["answers = {"]
    for number, question in enumerate(quiz.questions(kata.id), start=1):
        lines.append(f"    {number}: {answers.get(number)!r},  # {question.answer_format}")
    lines += ["}", f'quiz_result = quiz("{kata.name}", answers)']
    return "\n".join(lines)


def title_markdown(kata: Kata) -> str:
    prerequisites = ", ".join(f"`{registry.get(p).name}`" for p in kata.prerequisites) or "none"
    skeleton = kata.skeleton_path.relative_to(REPO_ROOT).as_posix()
    return (
        f"# Kata {kata.id} — {kata.title}\n\n"
        f"**Difficulty:** {kata.difficulty} · **Mock target:** {kata.target_minutes} min · "
        f"**Prerequisites:** {prerequisites}\n\n"
        "Run the cells from the top. First the problem, then a lesson that derives the idea "
        "step by step with the shape of every tensor, then the exercise: you write the code "
        "in the notebook and a grading cell checks it with the same grader as "
        f"`pytest katas/{kata.name}`. Plots come once your code passes, and a short quiz ends "
        f"the notebook. Your file `{skeleton}` is neither read nor changed here."
    )


# A README speaks of the kata's folder: "Edit `mha.py` in this folder", and a fenced block
# of `pytest katas/...` commands under "Check your work". In a notebook the code is written
# in the exercise cell and graded by the grading cell, so both are reworded there.
EDIT_SENTENCE = re.compile(r"Edit\s+`[^`]+`(?:\s+in\s+this\s+folder)?")
NOTEBOOK_EDIT = "Write your code in this notebook's exercise cell, after the lesson"
NOTEBOOK_GRADING = ("In this notebook, run the grading cell that follows the exercise cell: "
                    "it runs these checks on the code your exercise cell defines.")


def _notebook_wording(text: str) -> str:
    """The README's folder-and-terminal instructions, reworded for the notebook."""
    text = EDIT_SENTENCE.sub(NOTEBOOK_EDIT, text)
    out, block = [], None
    for line in text.splitlines():
        if block is None and line.startswith("```"):
            block = [line]
        elif block is not None:
            block.append(line)
            if line.startswith("```"):
                commands = [b.strip() for b in block[1:-1] if b.strip()]
                grading = commands and all(c.startswith(("pytest ", "kata ", "KATA_IMPL=")) for c in commands)
                out += [NOTEBOOK_GRADING] if grading else block
                block = None
        else:
            out.append(line)
    return "\n".join(out + (block or []))


# A README's link to its other language editions, e.g. "[简体中文](README.zh-CN.md)" on a
# line of its own: the notebooks come in every language already, so it is left out there.
LANGUAGE_LINKS = re.compile(r"^(\[[^\]]+\]\(README(\.[A-Za-z-]+)?\.md\)\s*(·\s*)?)+$")


def readme_markdown(kata: Kata) -> str:
    """The README without its own title (the title cell has it) and its language links,
    worded for the notebook."""
    lines = kata.readme_path.read_text().strip().splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    lines = [line for line in lines if not LANGUAGE_LINKS.match(line.strip())]
    return "## The problem\n\n" + _notebook_wording("\n".join(lines).strip())


def exercise_markdown(kata: Kata) -> str:
    return (
        "## Exercise\n\n"
        f"The cell below is the skeleton of `katas/{kata.name}/{kata.file}`: fill it in as "
        "the problem at the top of this notebook asks, run it, then run the grading cell "
        f"after it. Grading runs the checks of `pytest katas/{kata.name}` on the functions "
        "and classes defined in this notebook and shows a table: each check, its tier "
        "(**core**: the kata itself; **follow-up**: what an interviewer asks next), its "
        "result, the mistake it recognised and a hint; then the first failure in full. "
        f"Stuck? `kata hint {kata.id}` in a terminal gives one hint at a time."
    )


def quiz_markdown(kata: Kata) -> str:
    questions = quiz.questions(kata.id)
    body = "\n\n".join(q.markdown(number) for number, q in enumerate(questions, start=1))
    return (
        "## Quiz\n\n"
        "What an interviewer asks next. Put your answers in `answers` below and run the cell: "
        "each answer is marked, and its reasoning shown once you have answered.\n\n" + body
    )


def _lesson_cells(kata: Kata) -> list[tuple[str, str]]:
    """The lesson's cells as (cell_type, source), checked for exactly one of each marker."""
    lesson = jupytext.reads(lesson_path(kata).read_text(), fmt="py:percent")
    cells = [(cell.cell_type, cell.source.strip()) for cell in lesson.cells if cell.source.strip()]
    sources = [source for cell_type, source in cells if cell_type == "code"]
    for marker in (EXERCISE_MARKER, QUIZ_MARKER):
        if sources.count(marker) != 1:
            raise ValueError(f"{lesson_path(kata)}: needs exactly one code cell '{marker}'")
    if sources.index(EXERCISE_MARKER) > sources.index(QUIZ_MARKER):
        raise ValueError(f"{lesson_path(kata)}: the exercise comes before the quiz")
    return cells


def build(kata: Kata) -> nbformat.NotebookNode:
    """Kata ``kata``'s notebook, in memory."""
    cells = [new_markdown_cell(title_markdown(kata)), new_markdown_cell(readme_markdown(kata)),
             new_code_cell(SETUP_SOURCE)]
    for cell_type, source in _lesson_cells(kata):
        if cell_type == "code" and source == EXERCISE_MARKER:
            skeleton = kata.pristine_skeleton_path.read_text().rstrip("\n")
            cells += [new_markdown_cell(exercise_markdown(kata)),
                      new_code_cell(skeleton, metadata={"tags": [SKELETON_TAG]}),
                      new_code_cell(grading_source(kata), metadata={"tags": [GRADING_TAG]})]
        elif cell_type == "code" and source == QUIZ_MARKER:
            cells += [new_markdown_cell(quiz_markdown(kata)),
                      new_code_cell(quiz_answers_source(kata), metadata={"tags": [QUIZ_ANSWERS_TAG]})]
        elif cell_type == "code":
            cells.append(new_code_cell(source))
        else:
            cells.append(new_markdown_cell(source))
    for index, cell in enumerate(cells):
        cell.id = f"{kata.name}-{index:02d}"  # stable ids: a rebuild is byte-identical
    notebook = new_notebook(cells=cells, metadata=KERNEL_METADATA)
    nbformat.validate(notebook)
    return notebook


def render(kata: Kata) -> str:
    """The notebook file's exact text."""
    return nbformat.writes(build(kata)).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("katas", nargs="*", metavar="KATA", help="only these katas (default: all)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 listing the notebooks that differ from a build")
    args = parser.parse_args(argv)
    stale = []
    for kata in [registry.get(key) for key in args.katas] or KATAS:
        text = render(kata)
        path = kata.notebook_path
        if path.exists() and path.read_text() == text:
            continue
        stale.append(path)
        if not args.check:
            path.write_text(text)
    relative = [path.relative_to(REPO_ROOT).as_posix() for path in stale]
    if args.check:
        for name in relative:
            print(f"out of date: {name}")
        if stale:
            print("rebuild with: python notebooks/build.py")
        return 1 if stale else 0
    print(f"wrote {len(stale)} notebook(s)" + (": " + ", ".join(relative) if relative else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
