"""Build every kata's notebook from the kata's own sources, so the two cannot drift apart
(``notebooks/build.py`` runs :func:`main`).

    python notebooks/build.py           # (re)write every kata's notebook, in every language
    python notebooks/build.py --check   # exit 1, listing the notebooks that differ
    python notebooks/build.py 03        # only kata 03's notebooks

Each kata has one notebook per language: notebooks/NN_name.ipynb in English and
notebooks/<lang>/NN_name.ipynb (e.g. notebooks/zh-CN/) in the others, built from the same
sources with the prose looked up in that language's catalogs (graders.core.i18n); code is
the same in every language, its print labels, plot titles and comments translated
(graders.tools.lesson_code).

A notebook is, in order:
  1. a title cell from the registry (title, difficulty, prerequisites);
  2. the kata's README (README.md, or README.<lang>.md), the problem statement;
  3. a setup cell (``from graders.frontends.notebook import check, quiz``, seeds);
  4. the cells of ``notebooks/lessons/NN_name.py`` (jupytext "percent" format), in which
     two marker cells are replaced:
       ``# kata: exercise`` -> a markdown cell pointing to the problem, the skeleton file's
                              source as a plain code cell (its docstrings and messages in
                              the notebook's language), and the grading cell
                              ``result = check("NN_name", <the skeleton's public names>)``;
       ``# kata: quiz``     -> the kata's questions (``QUESTIONS`` in graders/<module>/meta.py)
                              and the ``answers`` cell.
The skeleton is read from its pristine copy, graders/<module>/skeleton.py, so a learner's edits to
katas/NN_name/<file> never change a build. The output is deterministic (cell ids are the
kata's name and the cell's index) and carries no outputs or execution counts.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from pathlib import Path

import jupytext
import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from graders.core import i18n, registry
from graders.core.i18n import N_, _
from graders.core.registry import KATAS, NOTEBOOKS_DIR, REPO_ROOT, Kata
from graders.tools import lesson_code

LESSONS_DIR = NOTEBOOKS_DIR / "lessons"
EXERCISE_MARKER = "# kata: exercise"
QUIZ_MARKER = "# kata: quiz"
# Tags on the generated cells: the self-tests find them by tag, and so can a reader.
SKELETON_TAG, GRADING_TAG, QUIZ_ANSWERS_TAG = "kata-skeleton", "kata-grading", "kata-quiz-answers"

KERNEL_METADATA = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
}

SETUP_COMMENT = N_("Setup: the grading helpers, and a fixed seed so the examples print the "
                   "same numbers each run.")
SETUP_SOURCE = f"""\
# {SETUP_COMMENT}
import torch

from graders.frontends.notebook import check, quiz

torch.manual_seed(0)
torch.set_printoptions(precision=4, sci_mode=False)"""


def setup_source(language: str) -> str:
    """The setup cell; a notebook in another language also chooses it for check() and quiz()."""
    if language == i18n.ENGLISH:
        return SETUP_SOURCE
    return SETUP_SOURCE.replace(SETUP_COMMENT, _(SETUP_COMMENT)).replace(
        "from graders.frontends.notebook import check, quiz\n",
        "from graders.frontends.notebook import check, quiz, use_language\n\n"
        f'use_language("{language}")\n')


def notebook_path(kata: Kata, language: str = i18n.ENGLISH) -> Path:
    """notebooks/NN_name.ipynb in English, notebooks/<lang>/NN_name.ipynb otherwise."""
    if language == i18n.ENGLISH:
        return kata.notebook_path
    return NOTEBOOKS_DIR / language / kata.notebook_path.name


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
    for number, question in enumerate(registry.questions(kata.id), start=1):
        lines.append(f"    {number}: {answers.get(number)!r},  # {question.answer_format_in_code}")
    lines += ["}", f'quiz_result = quiz("{kata.name}", answers)']
    return "\n".join(lines)


def title_markdown(kata: Kata) -> str:
    prerequisites = (i18n.listing(f"`{registry.get(p).name}`" for p in kata.prerequisites)
                     or _("none"))
    skeleton = kata.skeleton_path.relative_to(REPO_ROOT).as_posix()
    return (
        f"# Kata {kata.id} — {i18n.translate(kata.title)}\n\n"
        + _("**Difficulty:** {difficulty} · **Mock target:** {minutes} min · "
            "**Prerequisites:** {prerequisites}", difficulty=_(kata.difficulty),
            minutes=kata.target_minutes, prerequisites=prerequisites)
        + "\n\n"
        + _("Run the cells from the top. First the problem, then a lesson that derives the idea "
            "step by step with the shape of every tensor, then the exercise: you write the code "
            "in the notebook and a grading cell checks it with the same grader as "
            "`pytest katas/{kata}`. Plots come once your code passes, and a short quiz ends "
            "the notebook. Your file `{skeleton}` is neither read nor changed here.",
            kata=kata.name, skeleton=skeleton)
    )



# A README speaks of the kata's folder: "Edit `mha.py` in this folder", and a fenced block
# of `pytest katas/...` commands under "Check your work". In a notebook the code is written
# in the exercise cell and graded by the grading cell, so both are reworded there.
EDIT_SENTENCE = N_("Edit `{file}` in this folder")  # as every README says it, in its language
NOTEBOOK_EDIT = N_("Write your code in this notebook's exercise cell, after the lesson")
NOTEBOOK_GRADING = N_("In this notebook, run the grading cell that follows the exercise cell: "
                      "it runs these checks on the code your exercise cell defines.")


def edit_sentence(kata: Kata) -> re.Pattern:
    """The README's "Edit `file` in this folder" in the current language, wherever its
    lines are wrapped."""
    sentence = _(EDIT_SENTENCE, file=kata.file)
    return re.compile(r"\s*".join(re.escape(char) for char in sentence if not char.isspace()))


def _notebook_wording(text: str, kata: Kata) -> str:
    """The README's folder-and-terminal instructions, reworded for the notebook."""
    text = edit_sentence(kata).sub(lambda _match: _(NOTEBOOK_EDIT), text)
    out, block = [], None
    for line in text.splitlines():
        if block is None and line.startswith("```"):
            block = [line]
        elif block is not None:
            block.append(line)
            if line.startswith("```"):
                commands = [b.strip() for b in block[1:-1] if b.strip()]
                grading = commands and all(c.startswith(("pytest ", "kata ", "KATA_IMPL=")) for c in commands)
                out += [_(NOTEBOOK_GRADING)] if grading else block
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
    readme = kata.folder / i18n.readme_name(i18n.current())
    lines = readme.read_text().strip().splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    lines = [line for line in lines if not LANGUAGE_LINKS.match(line.strip())]
    return _("## The problem") + "\n\n" + _notebook_wording("\n".join(lines).strip(), kata)


def exercise_markdown(kata: Kata) -> str:
    return _("## Exercise") + "\n\n" + _(
        "The cell below is the skeleton of `katas/{kata}/{file}`: fill it in as "
        "the problem at the top of this notebook asks, run it, then run the grading cell "
        "after it. Grading runs the checks of `pytest katas/{kata}` on the functions "
        "and classes defined in this notebook and shows a table: each check, its tier "
        "(**core**: the kata itself; **follow-up**: what an interviewer asks next), its "
        "result, the mistake it recognised and a hint; then the first failure in full. "
        "Stuck? `kata hint {id}` in a terminal gives one hint at a time.",
        kata=kata.name, file=kata.file, id=kata.id)


def quiz_markdown(kata: Kata) -> str:
    questions = [dataclasses.replace(q, prompt=i18n.translate(q.prompt),
                                     choices=tuple(map(i18n.translate, q.choices)))
                 for q in registry.questions(kata.id)]
    body = "\n\n".join(q.markdown(number) for number, q in enumerate(questions, start=1))
    return _("## Quiz") + "\n\n" + _(
        "What an interviewer asks next. Put your answers in `answers` below and run the cell: "
        "each answer is marked, and its reasoning shown once you have answered.") + "\n\n" + body


def skeleton_source(kata: Kata) -> str:
    """The exercise cell: the pristine skeleton, its docstrings and NotImplementedError
    messages in the current language (its code as it is)."""
    skeleton = kata.pristine_skeleton_path.read_text().rstrip("\n")
    return lesson_code.translate(skeleton, i18n.translate, find=lesson_code.skeleton_pieces)


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


def build(kata: Kata, language: str = i18n.ENGLISH) -> nbformat.NotebookNode:
    """Kata ``kata``'s notebook in ``language``, in memory."""
    with i18n.speaking(language):
        return _build(kata, language)


def _build(kata: Kata, language: str) -> nbformat.NotebookNode:
    cells = [new_markdown_cell(title_markdown(kata)), new_markdown_cell(readme_markdown(kata)),
             new_code_cell(setup_source(language))]
    for cell_type, source in _lesson_cells(kata):
        if cell_type == "code" and source == EXERCISE_MARKER:
            skeleton = skeleton_source(kata)
            cells += [new_markdown_cell(exercise_markdown(kata)),
                      new_code_cell(skeleton, metadata={"tags": [SKELETON_TAG]}),
                      new_code_cell(grading_source(kata), metadata={"tags": [GRADING_TAG]})]
        elif cell_type == "code" and source == QUIZ_MARKER:
            cells += [new_markdown_cell(quiz_markdown(kata)),
                      new_code_cell(quiz_answers_source(kata), metadata={"tags": [QUIZ_ANSWERS_TAG]})]
        elif cell_type == "code":
            cells.append(new_code_cell(lesson_code.translate(source, i18n.translate)))
        else:
            cells.append(new_markdown_cell(i18n.translate(source)))
    for index, cell in enumerate(cells):
        cell.id = f"{kata.name}-{index:02d}"  # stable ids: a rebuild is byte-identical
    notebook = new_notebook(cells=cells, metadata=KERNEL_METADATA)
    nbformat.validate(notebook)
    return notebook


def render(kata: Kata, language: str = i18n.ENGLISH) -> str:
    """The notebook file's exact text."""
    return nbformat.writes(build(kata, language)).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("katas", nargs="*", metavar="KATA", help="only these katas (default: all)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 listing the notebooks that differ from a build")
    args = parser.parse_args(argv)
    stale = []
    for kata in [registry.get(key) for key in args.katas] or KATAS:
        for language in i18n.languages():
            text = render(kata, language)
            path = notebook_path(kata, language)
            if path.exists() and path.read_text() == text:
                continue
            stale.append(path)
            if not args.check:
                path.parent.mkdir(exist_ok=True)
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
