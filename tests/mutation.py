"""Mutants as edits: each catalogued mistake stated as a small edit of a correct file.

A kata's mutants live in ``tests/mutants/NN_name.py`` as a list ``MUTANTS``. Each names
the slug it must be reported with, says in one sentence what a learner wrote, and gives
the edit — ``(old, new)`` pairs applied in order to a correct file (the kata's reference
solution, or a correct style from ``tests/styles/NN_name/``), each ``old`` found exactly
once — so a reader sees the mistake as its diff, as mutation-testing tools show it. A
mistake no small edit can state stays a whole file in ``tests/mutants/NN_name/``.

The self-tests materialise every mutant into a file and grade it with ``--impl``
(tests/test_katas.py).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path

from graders.core.registry import Kata

TESTS_DIR = Path(__file__).resolve().parent
MUTANTS_DIR = TESTS_DIR / "mutants"
STYLES_DIR = TESTS_DIR / "styles"


class MutantDoesNotApply(ValueError):
    """An edit's ``old`` text is not found exactly once in its base file."""


@dataclass(frozen=True)
class Mutant:
    slug: str  # the mistake the grader must name, e.g. "mask-inverted"
    why: str  # what the learner wrote: one sentence
    edits: list[tuple[str, str]] = field(default_factory=list)  # (old, new), in order
    base: str = "solution"  # "solution", or the stem of a file in tests/styles/NN_name/
    variant: str = ""  # tells apart several mutants of one slug
    file: str = ""  # a whole-file mutant in tests/mutants/NN_name/, instead of edits

    @property
    def id(self) -> str:
        """``mask_inverted__where``: the test id, and the materialised file's stem."""
        stem = self.slug.replace("-", "_")
        return f"{stem}__{self.variant}" if self.variant else stem

    def base_path(self, kata: Kata) -> Path:
        if self.base == "solution":
            return kata.solution_path
        return STYLES_DIR / kata.name / f"{self.base}.py"

    def source(self, kata: Kata) -> str:
        """The mutant's full text: the base with every edit applied, or the whole file."""
        if self.file:
            return (MUTANTS_DIR / kata.name / self.file).read_text()
        text = self.base_path(kata).read_text()
        for old, new in self.edits:
            if text.count(old) != 1:
                raise MutantDoesNotApply(
                    f"{kata.name} mutant {self.id}: {old!r} occurs {text.count(old)} times in "
                    f"{self.base_path(kata).relative_to(TESTS_DIR.parent)}, not once")
            text = text.replace(old, new)
        return f"# Mutant [{self.slug}]: {self.why}\n" + text

    def materialise(self, kata: Kata, folder: Path) -> Path:
        """Write the mutant as ``folder/<id>.py`` and return its path."""
        path = folder / f"{self.id}.py"
        path.write_text(self.source(kata))
        return path


def mutants(kata: Kata) -> list[Mutant]:
    """The kata's mutants, in the order ``tests/mutants/NN_name.py`` lists them."""
    spec = MUTANTS_DIR / f"{kata.name}.py"
    if not spec.exists():
        return []
    module_spec = importlib.util.spec_from_file_location(f"mutants_{kata.name}", spec)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return list(module.MUTANTS)


def styles(kata: Kata) -> list[Path]:
    """Correct implementations in other styles: each must pass with no slug."""
    return sorted((STYLES_DIR / kata.name).glob("*.py"))
