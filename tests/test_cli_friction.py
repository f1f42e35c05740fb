"""The learner trial's friction with the ``kata`` command (issue 17, part 5): a bare
``kata mock`` starts nothing, ``--abort``; a mock hides mistake names and hints in every
front end; the learner's prints on request; ``kata quiz``; ``kata hint`` defaulting to the
next kata; skipped follow-ups said, not counted as passed; the report's mock results; a
file that does not import; a unique part of a kata's name.

Same sandbox as tests/test_cli.py (a copy of katas/ under KATA_ROOT, an injected clock);
grading is real and kept to kata 02.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from graders.core import i18n, interview, registry
from graders.core.catalogue import MISTAKES
from graders.core.registry import REPO_ROOT
from graders.core.results import (ALL_PASSED, CORE, FAILED, FOLLOW_UP, PASSED, SKIPPED, CheckResult,
                                  KataResult, skipped_words)
from graders.frontends import cli, quiz
from tests.test_cli import (HEADS, HEADS_INTERLEAVED, HEADS_SOLUTION, START, answer,  # noqa: F401
                            forbid_grading, real_tree_untouched, sandbox)

NO_CUDA = not torch.cuda.is_available()
# The reference, printing a line on every call of split_heads.
HEADS_PRINTING = HEADS_SOLUTION + '''

_split_heads = split_heads


def split_heads(x, num_heads):
    print("DEBUG split_heads", tuple(x.shape), num_heads)
    return _split_heads(x, num_heads)
'''


# --- a bare `kata mock` starts nothing; --random, --abort ------------------------------

def test_a_bare_mock_says_how_to_start_one_and_starts_nothing(sandbox, monkeypatch):
    forbid_grading(monkeypatch)
    status, out = sandbox.run("mock")
    assert status == 0 and "No mock interview is running" in out
    assert "kata mock --random" in " ".join(out.split())
    assert not sandbox.state_path.exists()  # nothing started, nothing recorded
    assert sandbox.file("02").read_bytes() == HEADS.pristine_skeleton_path.read_bytes()


def test_mock_random_starts_one_and_a_bare_mock_then_shows_it(sandbox, monkeypatch):
    forbid_grading(monkeypatch)
    assert sandbox.run("mock", "--random", "--minutes", "10")[0] == 0
    kata = sandbox.state()["mock"]["kata"]
    sandbox.clock.advance(4)
    status, out = sandbox.run("mock")
    assert status == 0 and f"mock interview of {kata}: 6:00 left" in out
    assert sandbox.run("mock", "--random")[0] == 2  # one mock at a time
    assert sandbox.run("mock", "02", "--random")[0] == 2 or kata != "02_heads"


def test_mock_abort_ends_it_recorded_as_aborted(sandbox, monkeypatch):
    forbid_grading(monkeypatch)
    sandbox.file("02").write_text("my work\n")
    assert sandbox.run("mock", "02", "--yes", "--minutes", "20")[0] == 0
    sandbox.clock.advance(3)
    status, out = sandbox.run("mock", "--abort")
    assert status == 0 and "aborted after 3:00" in out
    assert "kata restore 02 --list" in " ".join(out.split())  # the work from before the mock
    state = sandbox.state()
    assert state["mock"] is None
    (mock,) = state["mocks"]
    assert mock["outcome"] == cli.ABORTED and mock["taken_s"] == 180
    assert mock["status"] == "not started"  # the skeleton, known without grading
    assert state["attempts"] == []  # not graded
    assert sandbox.run("hint", "02")[0] == 0  # hints are back
    assert sandbox.run("mock", "--abort")[0] == 2  # nothing left to abort
    report = sandbox.run("report")[1]
    assert "| 02_heads |" in report and "| aborted |" in report


def test_the_report_says_the_state_at_the_deadline(sandbox):
    sandbox.run("mock", "02", "--minutes", "5")
    sandbox.file("02").write_text(HEADS_SOLUTION)
    sandbox.clock.advance(6)
    status, out = sandbox.run("report")
    assert "| time ran out (all passed at the deadline) |" in out
    assert sandbox.state()["mocks"][0]["status"] == ALL_PASSED


# --- a mock hides mistake names and hints everywhere alike --------------------------------

def test_hidden_verdict_drops_the_mistakes_lines_only():
    from graders.core.report import verdict

    text = str(verdict("the output", "x (2, 3)", ["expected 1", "got 2"], slug="heads-interleaved"))
    hidden = interview.hidden_verdict(text, "heads-interleaved")
    assert "heads-interleaved" not in hidden and MISTAKES["heads-interleaved"].hint not in hidden
    assert hidden.splitlines() == ["checked the output on x (2, 3)", "  expected 1", "  got 2"]
    result = KataResult("02_heads", [CheckResult("test_x", CORE, FAILED, text, "heads-interleaved")])
    stripped = interview.without_mistakes(result)
    assert stripped.slugs == [] and stripped.checks[0].verdict == hidden
    assert result.slugs == ["heads-interleaved"]  # the result itself keeps them


def test_the_first_failure_block_hides_the_mistake_during_a_mock(sandbox):
    sandbox.run("mock", "02")
    sandbox.file("02").write_text(HEADS_INTERLEAVED)
    status, out = sandbox.run("check", "02")
    first = out.split("first failure")[1]
    assert "checked" in first and "heads-interleaved" not in first
    assert MISTAKES["heads-interleaved"].explanation[:25] not in " ".join(first.split())


def test_list_names_no_mistake_of_the_mocks_kata(sandbox):
    sandbox.file("02").write_text(HEADS_INTERLEAVED)
    assert "[heads-interleaved]" in sandbox.run("list")[1]
    sandbox.run("mock", "02", "--yes")
    sandbox.file("02").write_text(HEADS_INTERLEAVED)
    sandbox.run("check", "02")
    status, out = sandbox.run("list")
    assert status == 0 and "heads-interleaved" not in out


def _project_copy(folder: Path) -> Path:
    """A checkout of its own, whose graders read its own .kata/ (pytest runs in it)."""
    for part in ("katas", "graders"):
        shutil.copytree(REPO_ROOT / part, folder / part, ignore=shutil.ignore_patterns("__pycache__"))
    for part in ("conftest.py", "pyproject.toml"):
        shutil.copy(REPO_ROOT / part, folder / part)
    return folder


def _pytest(copy: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "pytest", "katas/02_heads", "-p", "no:xdist",
                           *args], cwd=copy, capture_output=True, text=True, timeout=300,
                          env={"PATH": "", "PYTHONPATH": str(copy), "COLUMNS": "120",
                               "KATA_LANG": "en"})
    return done.stdout + done.stderr


def test_pytest_hides_the_mistake_during_a_mock_and_shows_prints_with_s(tmp_path):
    """End to end, `pytest katas/02_heads` in a checkout: during a mock of 02 the verdicts
    name no mistake and give no hint; `pytest -s` shows what the code printed."""
    copy = _project_copy(tmp_path / "copy")
    learner_file = copy / "katas" / HEADS.name / HEADS.file
    learner_file.write_text(HEADS_INTERLEAVED)
    hint = MISTAKES["heads-interleaved"].hint
    assert "[heads-interleaved]" in _pytest(copy)  # no mock: named, with its hint
    (copy / ".kata").mkdir()
    (copy / ".kata" / "state.json").write_text(json.dumps({"mock": {
        "kata": HEADS.name, "started": START, "deadline": START + 600, "minutes": 10}}))
    out = _pytest(copy)
    assert "checked" in out and "heads-interleaved" not in out
    assert hint[:25] not in " ".join(out.split()) and "hint:" not in out
    assert "mistake names and hints are hidden" in " ".join(out.split())

    (copy / ".kata" / "state.json").unlink()
    learner_file.write_text(HEADS_PRINTING)
    out = _pytest(copy)
    assert "not shown; its first line: 'DEBUG split_heads" in out
    out = _pytest(copy, "-s")
    assert "your code printed" in out and "    | DEBUG split_heads (" in out


# --- the learner's prints, on request -------------------------------------------------------

def test_check_show_prints_shows_the_first_lines_and_never_fails(sandbox):
    sandbox.file("02").write_text(HEADS_PRINTING)
    status, out = sandbox.run("check", "02")
    assert status == 0 and "not shown; its first line: 'DEBUG split_heads" in out
    status, out = sandbox.run("check", "02", "--show-prints")
    assert status == 0 and "all passed" in out
    shown = [line for line in out.splitlines() if line.startswith("| DEBUG split_heads")]
    assert shown and "not shown" not in out.split("all passed")[1].split("your code printed")[0]
    assert "your code printed" in out


def test_shown_prints_are_bounded():
    from graders.core import guard

    printed = guard.PrintedOutput()
    for number in range(1000):
        print(f"line {number}", file=printed)
    text = printed.shown()
    lines = text.splitlines()
    assert lines[1] == "| line 0" and f"| line {guard.SHOWN_PRINT_LINES - 1}" in lines
    assert f"| line {guard.SHOWN_PRINT_LINES}" not in lines
    cut = printed.chars - sum(len(f"line {n}\n") for n in range(guard.SHOWN_PRINT_LINES))
    assert lines[-1] == f"... and {cut:,} more characters, not shown"
    one_huge_line = guard.PrintedOutput()
    one_huge_line.write("x" * 100_000)
    assert len(one_huge_line.shown()) < guard.SHOWN_PRINT_CHARS + 200
    assert guard.PrintedOutput().shown() == ""


# --- skipped follow-ups -------------------------------------------------------------------------

def _with_a_skipped_follow_up() -> KataResult:
    return KataResult("02_heads", [
        CheckResult("test_a", CORE, PASSED), CheckResult("test_b", FOLLOW_UP, PASSED),
        CheckResult("test_cuda", FOLLOW_UP, SKIPPED, "needs a CUDA GPU")])


def test_a_skipped_follow_up_is_said_and_not_counted_as_passed():
    result = _with_a_skipped_follow_up()
    assert result.status == ALL_PASSED and result.passed  # it cannot fail here...
    assert result.tally == [("core", 1, 1), ("follow-ups", 1, 1)]  # ... nor count as passed
    assert result.failures == [] and skipped_words(result) == "1 skipped (needs a CUDA GPU)"
    again = KataResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again == result and again.skipped[0].verdict == "needs a CUDA GPU"
    skeleton = KataResult("02_heads", [
        CheckResult("test_a", CORE, "not implemented"), result.checks[2]])
    assert skeleton.status == "not started"


def test_the_report_table_says_a_follow_up_was_skipped():
    from io import StringIO

    from rich.console import Console

    from graders.frontends import rendering

    output = StringIO()
    rendering.render(_with_a_skipped_follow_up(), Console(file=output, width=200, color_system=None))
    out = output.getvalue()
    assert "follow-ups 1/1, 1 skipped (needs a CUDA GPU): all passed" in out
    assert "did not run" in out


@pytest.mark.skipif(not NO_CUDA, reason="the CUDA follow-up runs here")
def test_check_says_the_cuda_follow_up_was_skipped(sandbox):
    sandbox.file("02").write_text(HEADS_SOLUTION)
    status, out = sandbox.run("check", "02")
    assert status == 0 and "1 skipped (needs a CUDA GPU): all passed" in out
    cached = sandbox.state()["cache"]["02_heads"]["result"]
    assert [c["outcome"] for c in cached["checks"]].count(SKIPPED) == 1
    assert sandbox.state()["attempts"][-1]["status"] == ALL_PASSED  # the stored word stays


# --- kata hint without a kata; a unique part of a name; a file that does not import ---------

def test_hint_without_a_kata_takes_the_first_not_passed(sandbox, monkeypatch):
    forbid_grading(monkeypatch)
    status, out = sandbox.run("hint")
    assert status == 0 and "hint 1/3 (nudge) - 01_attention" in out
    assert "hints for 01_attention, the first kata not passed yet" in out
    assert sandbox.state()["hints"] == {"01_attention": 1}


@pytest.mark.parametrize("word, kata", [("flash", "14_flash_attention"), ("sliding", "18_sliding_window"),
                                        ("FLASH", "14_flash_attention"), ("ope", "12_rope"),
                                        ("lor", "28_lora")])
def test_a_unique_part_of_a_name_names_the_kata(word, kata):
    assert cli.resolve(word).name == kata


def test_an_ambiguous_part_of_a_name_is_a_usage_error(sandbox):
    status, out = sandbox.run("hint", "layer")
    assert status == 2 and "06_encoder_layer" in out and "08_decoder_layer" in out
    assert "attention" in cli.resolve("attention").name  # a whole name wins: 01_attention
    assert cli.resolve("attention").name == "01_attention"


def test_a_file_that_does_not_import_says_what_to_fix_not_to_take_a_hint(sandbox):
    sandbox.file("02").write_text("def split_heads(x, num_heads)\n    return x\n")
    status, out = sandbox.run("check", "02")
    assert status == 1 and "syntax error on line 1" in " ".join(out.split())
    assert "kata hint" not in out and "must import before any check can run" in " ".join(out.split())
    assert sandbox.state()["cache"]["02_heads"]["result"]["import_failed"] is True


# --- kata quiz ------------------------------------------------------------------------------

def test_quiz_marks_answers_from_a_pipe_as_the_notebook_does(sandbox, monkeypatch, capsys):
    forbid_grading(monkeypatch)
    questions = quiz.questions("07")
    right = [str(q.answer) for q in questions]
    answer(monkeypatch, "\n".join([right[0], "12345", ""]) + "\n")
    status, out = sandbox.run("quiz", "07")
    assert status == 1  # not all right
    assert "1. correct" in out and "2. wrong: you said 12345," in out
    assert "3. unanswered" in out and f"1/{len(questions)} correct" in out
    assert not sandbox.state_path.exists()  # nothing recorded
    notebook = quiz.quiz("07", {1: right[0], 2: "12345"})  # the notebook's marking agrees
    assert notebook.score == 1 and capsys.readouterr()

    answer(monkeypatch, "\n".join(right) + "\n")
    status, out = sandbox.run("quiz", "07")
    assert status == 0 and f"{len(questions)}/{len(questions)} correct: well done" in out


def test_quiz_in_chinese_and_refused_during_a_mock(sandbox, monkeypatch):
    forbid_grading(monkeypatch)
    monkeypatch.setenv(i18n.LANGUAGE_ENV, "en")  # restored after the test (--lang sets it)
    status, out = sandbox.run("--lang", "zh-CN", "quiz", "01")
    assert "1. " + i18n.translate(quiz.questions("01")[0].prompt)[:10] in out
    i18n.use("en")
    sandbox.run("mock", "02")
    status, out = sandbox.run("quiz", "01")
    assert status == 1 and "mock interview of 02_heads is running" in out


@pytest.mark.parametrize("language", ["en", "zh-CN"])
def test_quiz_tolerances_under_one_percent_and_answers_with_the_asked_decimals(sandbox, monkeypatch, language):
    """Kata 16's question 0.5 %, kata 01's 0.2 %: never "within 0%"; a wrong answer is shown
    with the question's 3 decimals, not a float's 16 digits."""
    forbid_grading(monkeypatch)
    monkeypatch.setenv(i18n.LANGUAGE_ENV, language)
    questions = quiz.questions("16")
    asked = next(n for n, q in enumerate(questions, start=1) if "(3 decimals)" in q.prompt)
    answer(monkeypatch, "\n" * (asked - 1) + "0.8\n" + "\n" * len(questions))
    status, out = sandbox.run("quiz", "16")
    assert "0.5%" in out and "0%)" not in out.replace("0.5%)", "")
    assert "0.865" in out and "0.8649548767993754" not in out
    formats = [q.answer_format for q in quiz.questions("01") + questions]
    assert all("0%" not in f.replace("0.2%", "").replace("0.5%", "") for f in formats)


@pytest.mark.parametrize("minutes", ["inf", "nan", "-5", "0", "1e9", "601"])
def test_mock_minutes_must_be_finite_and_sane(sandbox, monkeypatch, minutes):
    forbid_grading(monkeypatch)
    status, out = sandbox.run("mock", "05", "--minutes", minutes)
    assert status == 2 and "from 1 to 600" in out
    assert sandbox.run("report")[0] == 0


def test_a_state_file_with_infinite_minutes_is_repaired_not_a_crash(sandbox, monkeypatch):
    forbid_grading(monkeypatch)
    sandbox.state_path.parent.mkdir(parents=True, exist_ok=True)
    sandbox.state_path.write_text(
        '{"version": 1, "mock": {"kata": "05_positional_encoding", "started": 1750000000, '
        '"deadline": Infinity, "minutes": Infinity}, "mocks": [{"kata": "05_positional_encoding", '
        '"started": "2025-06-16T09:00:00", "minutes": NaN, "taken_s": Infinity, "outcome": "aborted", '
        '"status": "not started", "slugs": []}], "time": {"05_positional_encoding": {"total_s": Infinity}}}')
    status, out = sandbox.run("report")
    assert status == 0 and "Traceback" not in out
    assert sandbox.run("mock", "05", "--minutes", "5")[0] == 0  # the bad mock is gone


# --- argparse's headings in Chinese ------------------------------------------------------------

def test_chinese_help_headings_end_with_a_full_width_colon(capsys, monkeypatch):
    monkeypatch.setenv(i18n.LANGUAGE_ENV, "en")  # restored after the test (--lang sets it)
    assert cli.main(["--lang", "zh-CN", "check", "--help"]) == 0
    out = capsys.readouterr().out
    assert "位置参数：" in out and "选项：" in out and "选项:" not in out


def test_show_prints_says_when_nothing_was_printed(sandbox):
    sandbox.file("02").write_text(HEADS_SOLUTION)
    status, out = sandbox.run("check", "02", "--show-prints")
    assert status == 0 and "printed nothing" in out


def test_restore_list_keeps_each_backup_on_one_line_off_a_terminal(sandbox, monkeypatch):
    forbid_grading(monkeypatch)
    sandbox.file("02").write_text("my work\n")
    sandbox.run("reset", "02", "--yes")
    sandbox.file("02").write_text("my work\n")
    status, out = sandbox.run("restore", "02", "--list", width=60)
    (line,) = [line for line in out.splitlines() if line.strip().startswith("1 ")]
    assert line.endswith("(latest, same as your file)")
