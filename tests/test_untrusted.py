"""Learner code is untrusted input: the finer points of its verdicts, on kata 01.

tests/test_hostile.py runs every kind of hostile file through every kata and every way of
grading; this file checks details of the wording (one paragraph for a syntax error, the
learner's line for an exception, a forbidden call under another name), and the exit codes
and file selection of real ``pytest`` processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from graders.core import registry
from tests.grading_session import run_session
from tests.mutation import mutants

KATA = registry.get("01_attention")
REFERENCE = KATA.solution_path.read_text()


def write_impl(tmp_path, body: str, name: str = "my_attention.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def with_function(tmp_path, body: str):
    """The reference solution with scaled_dot_product_attention replaced by ``body``."""
    start = REFERENCE.index("def scaled_dot_product_attention")
    end = REFERENCE.index("class SingleHeadAttention")
    return write_impl(tmp_path, REFERENCE[:start] + textwrap.dedent(body) + "\n\n" + REFERENCE[end:])


def test_syntax_error_is_one_short_paragraph(tmp_path):
    path = write_impl(tmp_path, "def scaled_dot_product_attention(query, key\n    return 1\n")
    session = run_session(KATA, "--impl", str(path))
    assert session.exit_code == 1
    first = session.failure_reports()[0]
    assert first[0].startswith(f"{path} does not import: syntax error on line 1")
    assert len(first) <= 4
    assert "Traceback" not in session.output


def test_missing_name_names_file_line_and_name(tmp_path):
    path = write_impl(tmp_path, "import torch\n\nx = undefined_helper(3)\n")
    session = run_session(KATA, "--impl", str(path))
    assert session.exit_code == 1
    report = "\n".join(session.failure_reports()[0])
    assert "does not import" in report and "undefined_helper" in report
    assert "my_attention.py:3" in report
    # Said once in full; the other checks only point at it.
    later = session.failure_reports()[1]
    assert "see the first failure" in later[0]


def test_wrong_shape(tmp_path):
    path = with_function(tmp_path, """
        def scaled_dot_product_attention(query, key, value, attn_mask=None):
            return query, query @ key.transpose(-2, -1)
    """)
    session = run_session(KATA, "--impl", str(path))
    assert "expected shape (2, 5, 6), got shape (2, 5, 8)" in session.output


def test_exception_names_learner_line(tmp_path):
    path = with_function(tmp_path, """
        def scaled_dot_product_attention(query, key, value, attn_mask=None):
            return query @ value
    """)
    session = run_session(KATA, "--impl", str(path))
    assert "your code raised RuntimeError" in session.output
    assert "at my_attention.py:" in session.output and "return query @ value" in session.output
    assert "Traceback" not in session.output


def test_forbidden_call_imported_under_another_name(tmp_path):
    path = with_function(tmp_path, """
        from torch.nn.functional import scaled_dot_product_attention as fast

        def scaled_dot_product_attention(query, key, value, attn_mask=None):
            out = fast(query, key, value)
            return out, None
    """)
    session = run_session(KATA, "--impl", str(path), "-k", "without_mask")
    assert "[forbidden-builtin]" in session.output
    assert "torch.nn.functional.scaled_dot_product_attention" in session.output


def test_forbidden_name_in_text_is_fine(tmp_path):
    docstring = '"""Not nn.MultiheadAttention, nor F.scaled_dot_product_attention."""'
    path = write_impl(tmp_path, docstring + REFERENCE[REFERENCE.index("\n"):])
    session = run_session(KATA, "--impl", str(path))
    assert session.exit_code == 0, session.output


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """A real ``python -m pytest`` process, as a learner runs it, from the repository root."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args], cwd=registry.REPO_ROOT, text=True,
        capture_output=True, env={**os.environ, **(env or {})}, timeout=300,
    )


def test_command_line_exit_codes_and_impl_selection(tmp_path):
    """The contract's three ways to point a grader, in real processes."""
    skeleton = run_cli("katas/01_attention", "-q")
    assert skeleton.returncode == 1
    assert "not implemented yet" in skeleton.stdout
    assert "core: 0/5 passed" in skeleton.stdout

    solutions = run_cli("katas/01_attention", "--solutions", "-q")
    assert solutions.returncode == 0, solutions.stdout

    attention = registry.get("01")
    missing_scale = next(m for m in mutants(attention) if m.id == "missing_scale")
    mutant = missing_scale.materialise(attention, tmp_path)
    via_env = run_cli("katas/01_attention", "-q", env={"KATA_IMPL": str(mutant)})
    assert via_env.returncode == 1 and "[missing-scale]" in via_env.stdout

    copy = write_impl(tmp_path, REFERENCE, name="anything.py")
    via_option = run_cli("katas/01_attention", "--impl", str(copy), "-q")
    assert via_option.returncode == 0, via_option.stdout


@pytest.mark.parametrize("kata", registry.KATAS, ids=lambda k: k.name)
def test_registry_points_at_real_files(kata):
    if not kata.skeleton_path.exists():
        pytest.skip(f"{kata.name} is not built yet")
    assert kata.readme_path.exists()
    assert (kata.folder / f"test_{kata.file}").exists()
    assert kata.hints and kata.title
    assert all(p in {k.id for k in registry.KATAS} for p in kata.prerequisites)


def test_an_input_modified_in_place_is_named_as_the_learner_calls_it():
    """The parameter's name, also through a grader's wrapper made with functools.wraps (kata
    25's no-padding check records the call that way); ``*args`` gives ``args[i]``, ``**kwargs``
    the keyword: never the bare ``args``."""
    import functools

    import torch

    from graders.core import guard
    from graders.core.report import GradingFailure

    def learner(q, k, *rest, **extra):
        (extra["scale"] if "scale" in extra else rest[0] if rest else q).mul_(2.0)
        return q

    @functools.wraps(learner)
    def recorded(*args, **kwargs):
        return learner(*args, **kwargs)

    def bare(*args, **kwargs):
        return learner(*args, **kwargs)

    def said(fn, *args, **kwargs):
        with pytest.raises(GradingFailure) as failure:
            guard.call(fn, *args, what="f", on="x", **kwargs)
        return str(failure.value).split("it modified ", 1)[1].split(" in place")[0]

    q, k = torch.ones(2), torch.ones(2)
    assert said(learner, q.clone(), k) == "`q`"
    assert said(recorded, q.clone(), k) == "`q`"
    assert said(bare, q.clone(), k) == "`args[0]`"
    assert said(learner, q, k, torch.ones(3)) == "`rest[0]`"
    assert said(learner, q, k, scale=torch.ones(3)) == "`scale`"
