"""Self-tests: every kata's grader against its reference, its skeleton, mutants and styles.

- the reference solution passes every check, with no mistake reported;
- the untouched skeleton fails every check with "not implemented yet";
- each mutant of tests/mutants/NN_name.py (an edit of a correct file, see tests/mutation.py)
  fails, its first failure names ``[slug]`` within its first lines, and no other slug is
  reported;
- each correct implementation in tests/styles/NN_name/ passes with no slug reported;
- every catalogued slug of a kata (and forbidden-builtin, where the kata forbids any) has
  at least one mutant.

The reference and the mutants are graded in Chinese (``KATA_LANG=zh-CN``: a slug is named
whatever the language), so that the same sessions also prove every verdict a zh-CN learner
reads holds no English word outside code (:func:`tests.zh_text.english_in`); the skeleton
and the styles are graded in English.
"""

from __future__ import annotations

import pytest

from graders.core.catalogue import MISTAKES
from graders.core.registry import KATAS, Kata
from tests.grading_session import run_session
from tests.mutation import Mutant, mutants, styles
from tests.zh_text import english_in

BUILT = [k for k in KATAS if k.solution_path.exists() and k.skeleton_path.exists()]


def kata_params(name, items):
    return pytest.mark.parametrize(
        f"kata, {name}", [(k, item) for k in BUILT for item in items(k)],
        ids=lambda v: (v.name if isinstance(v, Kata) else v.id if isinstance(v, Mutant)
                       else getattr(v, "stem", str(v))),
    )


def test_every_kata_is_built():
    assert [k.name for k in BUILT] == [k.name for k in KATAS]


def assert_chinese(kata: Kata, output: str) -> None:
    english = english_in(kata, output)
    assert not english, "English in a zh-CN verdict (see tests/zh_text.py):\n" + "\n".join(english[:12])


@pytest.mark.parametrize("kata", BUILT, ids=lambda k: k.name)
def test_reference_solution_passes(kata, monkeypatch):
    monkeypatch.setenv("KATA_LANG", "zh-CN")
    session = run_session(kata, "--solutions")
    assert session.exit_code == 0, session.output
    assert session.failed == 0 and session.passed > 0
    assert session.slugs == set(), session.output
    assert_chinese(kata, session.output)


@pytest.mark.parametrize("kata", BUILT, ids=lambda k: k.name)
def test_untouched_skeleton_fails_friendly(kata):
    session = run_session(kata)
    assert session.exit_code == 1, session.output
    assert session.passed == 0, session.output
    reports = session.failure_reports()
    assert len(reports) == session.failed > 0
    for report in reports:
        assert report and report[0].startswith("not implemented yet"), "\n".join(report)
    assert session.slugs == set(), session.output


@pytest.mark.parametrize("kata", BUILT, ids=lambda k: k.name)
def test_every_catalogued_mistake_has_a_mutant(kata):
    expected = set(kata.mistakes) | ({"forbidden-builtin"} if kata.forbidden else set())
    assert expected <= set(MISTAKES), "slugs missing from graders/core/catalogue.py"
    covered = {m.slug for m in mutants(kata)}
    assert expected - covered == set(), f"no mutant for {sorted(expected - covered)}"
    assert covered <= set(MISTAKES), f"mutants named after unknown slugs: {covered - set(MISTAKES)}"


@kata_params("mutant", mutants)
def test_mutant_applies_and_changes_the_code(kata, mutant):
    assert mutant.why.strip(), f"{mutant.id}: say what the learner wrote"
    assert mutant.file or mutant.edits, f"{mutant.id}: neither edits nor a whole file"
    source = mutant.source(kata)  # raises MutantDoesNotApply when an edit has gone stale
    compile(source, mutant.id, "exec")
    if not mutant.file:
        assert all(old != new for old, new in mutant.edits)


@kata_params("mutant", mutants)
def test_mutant_fails_and_is_named(tmp_path, kata, mutant, monkeypatch):
    slug = mutant.slug
    impl = mutant.materialise(kata, tmp_path)
    monkeypatch.setenv("KATA_LANG", "zh-CN")
    session = run_session(kata, "--impl", str(impl))
    assert session.exit_code == 1, session.output
    first = session.failure_reports()[0]
    assert f"[{slug}]" in "\n".join(first[:3]), session.output
    assert session.slugs == {slug}, session.output
    assert_chinese(kata, session.output)


@kata_params("path", styles)
def test_correct_style_passes(kata, path):
    session = run_session(kata, "--impl", str(path))
    assert session.exit_code == 0, session.output
    assert session.failed == 0 and session.passed > 0
    assert session.slugs == set(), session.output
