"""The ``kata`` command, run on a temporary copy of katas/ (KATA_ROOT) with an injected
clock, console and file watcher. The real katas/ files and the real .kata/ folder are
checked to be untouched after every test.

Grading is real (graders.core.session) but kept to kata 02, the fastest to grade.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from graders.frontends import cli
from graders.frontends.cli.common import FOLLOW_UPS_HEADINGS
from graders.core import registry
from graders.core.catalogue import MISTAKES
from graders.core.registry import REPO_ROOT
from graders.core.results import CheckResult
from tests.mutation import mutants

HEADS = registry.get("02")
HEADS_SOLUTION = HEADS.solution_path.read_text()
HEADS_INTERLEAVED = next(m for m in mutants(HEADS) if m.id == "heads_interleaved").source(HEADS)
START = 1_750_000_000.0  # the injected clock's first reading
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
BOX_DRAWING = re.compile("[\u2500-\u259f]")  # box drawing and block elements
N = len(registry.KATAS)


def _real_tree_fingerprint() -> str:
    digest = hashlib.sha256()
    for path in sorted((REPO_ROOT / "katas").rglob("*.py")):
        digest.update(str(path).encode() + path.read_bytes())
    state = REPO_ROOT / cli.STATE_DIR
    listing = sorted(str(p) + str(p.stat().st_mtime_ns) for p in state.rglob("*")) if state.exists() else []
    digest.update(repr(listing).encode())
    return digest.hexdigest()


@pytest.fixture(autouse=True)
def real_tree_untouched():
    before = _real_tree_fingerprint()
    yield
    assert _real_tree_fingerprint() == before, "a kata command touched the real katas/ or .kata/"


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now

    def advance(self, minutes: float) -> None:
        self.now += minutes * 60


class Sandbox:
    """A copy of katas/ under a temporary root, and a way to run ``kata`` on it."""

    def __init__(self, root: Path):
        self.root = root
        self.clock = Clock()
        shutil.copytree(REPO_ROOT / "katas", root / "katas",
                        ignore=shutil.ignore_patterns("__pycache__"))

    def file(self, key: str) -> Path:
        kata = registry.get(key)
        return self.root / "katas" / kata.name / kata.file

    @property
    def state_path(self) -> Path:
        return self.root / ".kata" / "state.json"

    def state(self) -> dict:
        return json.loads(self.state_path.read_text())

    def write_state(self, **sections) -> None:
        state = cli.fresh_state()
        state.update(sections)
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        self.state_path.write_text(json.dumps(state))

    def run(self, *argv: str, width: int = 120, terminal: bool = False, **options) -> tuple[int, str]:
        """``kata *argv`` with output captured as text, as if to a terminal ``width`` columns
        wide when ``terminal`` (escape codes removed); returns (exit status, output)."""
        output = io.StringIO()
        console = Console(file=output, width=width, color_system=None, force_terminal=terminal)
        options.setdefault("rng", random.Random(0))
        options.setdefault("interactive", False)
        status = cli.main(list(argv), root=self.root, console=console, clock=self.clock, **options)
        return status, ANSI_ESCAPE.sub("", output.getvalue())


@pytest.fixture
def sandbox(tmp_path, monkeypatch) -> Sandbox:
    monkeypatch.setenv(cli.ROOT_ENV_VAR, str(tmp_path))  # also for anything not given root=
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # questions read end of input: "no"
    return Sandbox(tmp_path)


def answer(monkeypatch, text: str) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(text))


def forbid_grading(monkeypatch) -> None:
    from graders.core import session

    def refuse(*args, **kwargs):
        raise AssertionError("graded a kata that needed no grading")

    monkeypatch.setattr(session, "grade", refuse)


# --- the repository's own files ----------------------------------------------------------

@pytest.mark.parametrize("kata", registry.KATAS, ids=lambda k: k.name)
def test_pristine_skeletons_are_the_shipped_skeletons(kata):
    assert kata.pristine_skeleton_path.read_bytes() == kata.skeleton_path.read_bytes(), (
        f"graders/{kata.module}/skeleton.py differs from katas/{kata.name}/{kata.file}: copy the "
        "skeleton over")


@pytest.mark.parametrize("kata", registry.KATAS, ids=lambda k: k.name)
def test_every_kata_has_a_three_rung_hint_ladder(kata):
    assert len(kata.hints) == len(registry.HINT_LEVELS) == 3
    assert all(hint.strip() for hint in kata.hints)
    assert "\n" in kata.hints[2], "the third rung is near-code"


@pytest.mark.parametrize("key", ["3", "03", "03_mha", "mha", " 3 "])
def test_katas_are_named_by_id_number_or_short_name(key):
    assert registry.get(key).name == "03_mha"
    assert registry.get("positional_encoding").name == "05_positional_encoding"


# --- usage and help ---------------------------------------------------------------------

def test_unknown_kata_is_a_usage_error_listing_the_katas(sandbox):
    status, out = sandbox.run("hint", "99")
    assert status == 2
    assert "no kata called '99'" in out and "03_mha (3, mha)" in out


@pytest.mark.parametrize("command", [None, *cli.COMMANDS])
def test_every_command_has_help(command, capsys):
    assert cli.main([command, "--help"] if command else ["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: kata")
    if command is None:
        assert all(name in out for name in cli.COMMANDS)


def test_a_bad_option_is_a_usage_error(sandbox, capsys):
    assert sandbox.run("check", "--no-such-option")[0] == 2
    assert "unrecognized arguments" in capsys.readouterr().err


# --- list -------------------------------------------------------------------------------

def test_list_of_untouched_skeletons_grades_nothing(sandbox, monkeypatch):
    forbid_grading(monkeypatch)
    status, out = sandbox.run("list")
    assert status == 0
    assert sum(" not started " in line for line in out.splitlines()) == N
    assert f"{N} katas: 0 all passed, {N} not started; next: 01_attention" in out


def test_list_grades_changed_files_once_then_uses_the_cache(sandbox, monkeypatch):
    sandbox.file("02").write_text(HEADS_INTERLEAVED)
    status, out = sandbox.run("list")
    assert status == 0
    assert "grading 02_heads: changed since it was last graded" in out
    assert "[heads-interleaved]" in out and "failing" in out

    forbid_grading(monkeypatch)  # unchanged since: the cached result is enough
    status, again = sandbox.run("list")
    assert "grading" not in again and "[heads-interleaved]" in again
    assert len(sandbox.state()["attempts"]) == 1


def test_list_and_check_of_a_missing_file_point_at_reset(sandbox, monkeypatch):
    forbid_grading(monkeypatch)
    sandbox.file("04").unlink()
    assert "kata reset 04" in sandbox.run("list")[1]
    status, out = sandbox.run("check", "masks")
    assert status == 1 and "kata reset 04" in out


# --- check ------------------------------------------------------------------------------

def test_check_a_failing_kata_names_the_mistake_and_records_the_attempt(sandbox):
    sandbox.file("02").write_text(HEADS_INTERLEAVED)
    status, out = sandbox.run("check", "heads")
    assert status == 1
    assert "[heads-interleaved]" in out and MISTAKES["heads-interleaved"].hint[:30] in out
    assert "kata hint 02 (0/3 hints used)" in out
    (attempt,) = sandbox.state()["attempts"]
    assert attempt["kata"] == "02_heads" and attempt["status"] == "failing"
    assert attempt["slugs"][0] == "heads-interleaved" and attempt["source"] == "check"

    sandbox.run("check", "2")  # the same file again is not another attempt
    assert len(sandbox.state()["attempts"]) == 1


def test_check_a_passing_kata_exits_0_and_points_to_the_next(sandbox):
    sandbox.file("02").write_text(HEADS_SOLUTION)
    status, out = sandbox.run("check", "02")
    assert status == 0
    assert "all passed" in out and "02_heads passes. Next: kata check 03" in out


def test_check_without_a_kata_takes_the_first_not_passed(sandbox, monkeypatch):
    calls = []
    monkeypatch.setattr(cli.App, "grade", lambda app, kata, source, **kw: calls.append(kata.name)
                        or cli.KataResult(kata.name))
    monkeypatch.setattr(cli.App, "render", lambda app, result, console=None, **kw: None)
    sandbox.run("check")
    assert calls == ["01_attention"]


def test_check_impl_grades_any_file_and_records_nothing(sandbox):
    status, out = sandbox.run("check", "02", "--impl", str(HEADS.solution_path))
    assert status == 0 and "all passed" in out
    assert not sandbox.state_path.exists()
    assert sandbox.run("check", "--impl", str(HEADS.solution_path))[0] == 2  # which kata?


def test_check_in_its_own_process_ends_a_double_fork_with_setsid(sandbox, tmp_path):
    """kata check grades in the CLI's own process: a grandchild the learner's code left in
    a session of its own (the room trial's probe, 2026-12-01) ends with the grading, noted."""
    from tests.test_warm_grader import DOUBLE_FORK, running

    pids, learner = tmp_path / "pids", tmp_path / "attention.py"
    learner.write_text(registry.get("01").solution_path.read_text() + DOUBLE_FORK)
    for argv in (["check", "01", "--impl", str(learner)], ["check", "01"]):
        if argv == ["check", "01"]:
            shutil.copy(learner, sandbox.file("01"))
        done = subprocess.run([sys.executable, "-m", "graders.frontends.cli", *argv], cwd=REPO_ROOT,
                              env={**os.environ, "KATA_ROOT": str(sandbox.root), "KATA_LANG": "en",
                                   "KATA_PID_FILE": str(pids)},
                              capture_output=True, text=True, timeout=300)
        assert "all passed" in done.stdout and "child process" in done.stdout, done.stdout + done.stderr
    forked = [int(line) for line in pids.read_text().split()]
    time.sleep(0.5)
    assert len(forked) == 2 and not any(running(pid) for pid in forked)


# --- hint -------------------------------------------------------------------------------

def test_hints_come_one_rung_per_call_and_all_shows_those_revealed(sandbox):
    kata = registry.get("03")
    status, out = sandbox.run("hint", "03", "--all")
    assert status == 0 and "No hints revealed" in out
    for number, level in enumerate(registry.HINT_LEVELS, start=1):
        status, out = sandbox.run("hint", "mha")
        assert status == 0
        assert f"hint {number}/3 ({level})" in out
        assert kata.hints[number - 1].splitlines()[0][:40] in out
        assert f"hint {number - 1}/3" not in out
    assert "That was the last hint" not in out  # the third one is the last, not past it
    status, out = sandbox.run("hint", "3")
    assert "hint 3/3" in out and "That was the last hint" in out and "kata solution 03" in out
    status, out = sandbox.run("hint", "03", "--all")
    assert [f"hint {n}/3" in out for n in (1, 2, 3)] == [True] * 3
    assert sandbox.state()["hints"] == {"03_mha": 3}


def test_hint_adds_the_catalogue_hint_of_the_last_attempts_mistake(sandbox):
    sandbox.write_state(attempts=[{"kata": "02_heads", "at": "2025-06-15T10:00:00", "t": START,
                                   "status": "failing", "slugs": ["batch-head-order"]}])
    status, out = sandbox.run("hint", "02")
    assert "[batch-head-order]" in out and MISTAKES["batch-head-order"].hint[:30] in out


# --- reset ------------------------------------------------------------------------------

def test_reset_backs_up_the_learners_file_then_restores_the_skeleton(sandbox, monkeypatch):
    path = sandbox.file("02")
    path.write_text("my work\n")
    answer(monkeypatch, "n\n")
    status, out = sandbox.run("reset", "02")
    assert status == 1 and path.read_text() == "my work\n"  # declined: nothing touched

    answer(monkeypatch, "y\n")
    status, out = sandbox.run("reset", "02")
    assert status == 0
    assert path.read_bytes() == HEADS.pristine_skeleton_path.read_bytes()
    (backup,) = (sandbox.root / ".kata" / "backups" / "02_heads").iterdir()
    assert backup.read_text() == "my work\n" and backup.name.startswith("heads-")
    assert f".kata/backups/02_heads/{backup.name}" in out.replace("\n", "")

    status, out = sandbox.run("reset", "02", "--yes")  # already pristine: no second backup
    assert "already the untouched skeleton" in out
    assert len(list(backup.parent.iterdir())) == 1


def test_reset_with_yes_does_not_ask_and_backups_do_not_collide(sandbox):
    for text in ("first\n", "second\n"):  # same clock reading: same timestamp
        sandbox.file("04").write_text(text)
        assert sandbox.run("reset", "04", "-y")[0] == 0
    backups = sorted(p.read_text() for p in (sandbox.root / ".kata/backups/04_masks").iterdir())
    assert backups == ["first\n", "second\n"]


# --- solution ---------------------------------------------------------------------------

def test_solution_asks_first_and_is_recorded(sandbox, monkeypatch):
    status, out = sandbox.run("solution", "02")  # end of input: no
    assert status == 1 and "def split_heads" not in out
    answer(monkeypatch, "y\n")
    status, out = sandbox.run("solution", "02")
    assert status == 0 and "def split_heads" in out
    assert sandbox.state()["revealed"]["02_heads"]["t"] == START


# --- watch ------------------------------------------------------------------------------

def test_watch_regrades_on_each_save_and_offers_the_next_kata(sandbox, monkeypatch):
    heads, mha = sandbox.file("02"), sandbox.file("03")
    heads.write_text(HEADS_INTERLEAVED)
    watched = []

    def file_changes(path):
        watched.append(path)
        if path == heads:  # the learner fixes the file and saves it
            path.write_text(HEADS_SOLUTION)
            yield {("modified", str(path))}

    answer(monkeypatch, "y\n")
    status, out = sandbox.run("watch", "02", file_changes=file_changes, interactive=True)
    assert status == 0
    assert watched == [heads, mha]
    assert out.count("02_heads — ") == 2  # graded before the save and after it
    assert out.index("[heads-interleaved]") < out.index("02_heads passes: move on to 03_mha?")
    assert "03_mha — " in out
    # 03's untouched skeleton was graded too, but is no attempt
    assert [a["status"] for a in sandbox.state()["attempts"]] == ["failing", "all passed"]


def test_watch_without_a_terminal_does_not_ask_and_ctrl_c_leaves_cleanly(sandbox, monkeypatch):
    sandbox.file("02").write_text(HEADS_SOLUTION)

    def file_changes(path):
        raise KeyboardInterrupt
        yield

    monkeypatch.setattr("sys.stdin", None)  # reading it would fail the test
    status, out = sandbox.run("watch", "heads", file_changes=file_changes)
    assert status == 0
    assert "02_heads passes. Next: kata watch 03" in out and "move on" not in out
    assert out.rstrip().endswith("stopped watching.")


# --- mock -------------------------------------------------------------------------------

def test_mock_picks_a_kata_not_passed_and_shows_the_time_left(sandbox, monkeypatch):
    forbid_grading(monkeypatch)
    passed = {"at": "x", "t": START, "status": "all passed", "slugs": []}
    sandbox.write_state(attempts=[{**passed, "kata": k.name} for k in registry.KATAS
                                  if k.id != "05"])
    status, out = sandbox.run("mock", "--random", "--minutes", "30")
    assert status == 0
    assert "mock interview: 05_positional_encoding" in out and "You have 30:00" in out
    mock = sandbox.state()["mock"]
    assert mock["kata"] == "05_positional_encoding" and mock["deadline"] == START + 30 * 60

    sandbox.clock.advance(12.5)
    status, out = sandbox.run("mock")
    assert status == 0 and "17:30 left" in out
    assert "17:30 left" in sandbox.run("list")[1]
    assert sandbox.run("mock", "02")[0] == 2  # one mock at a time


def test_mock_resets_a_file_with_work_only_after_confirmation(sandbox, monkeypatch):
    forbid_grading(monkeypatch)
    sandbox.file("02").write_text("my work\n")
    assert sandbox.run("mock", "02")[0] == 1  # end of input: no
    assert sandbox.file("02").read_text() == "my work\n" and not sandbox.state_path.exists()
    status, out = sandbox.run("mock", "02", "--yes")
    assert status == 0 and "backed up as .kata/backups/02_heads/" in out
    assert sandbox.file("02").read_bytes() == HEADS.pristine_skeleton_path.read_bytes()


def test_mock_submit_grades_and_records_the_time_taken(sandbox):
    assert sandbox.run("mock", "02", "--minutes", "20")[0] == 0
    sandbox.clock.advance(7.25)
    sandbox.file("02").write_text(HEADS_SOLUTION)
    status, out = sandbox.run("mock", "--submit")
    assert status == 0
    assert "mock interview of 02_heads: all passed in 7:15 of 20" in out
    state = sandbox.state()
    assert state["mock"] is None
    (mock,) = state["mocks"]
    assert mock["outcome"] == "all passed" and mock["taken_s"] == 7.25 * 60
    assert state["attempts"][-1]["source"] == "mock"
    assert state["time"]["02_heads"]["total_s"] == 7.25 * 60  # the whole mock counts as work
    assert sandbox.run("mock", "--submit")[0] == 2  # nothing left to hand in


def test_a_mock_past_its_deadline_is_handed_in_by_any_command(sandbox):
    sandbox.run("mock", "02", "--minutes", "5")
    sandbox.file("02").write_text(HEADS_INTERLEAVED)
    sandbox.clock.advance(6)
    status, out = sandbox.run("hint", "01")
    assert status == 0
    assert "Time ran out for the mock interview of 02_heads" in out
    assert "time ran out after 5 min (graded as it stood: failing)" in out
    assert "hint 1/3" in out  # and the command itself still runs
    (mock,) = sandbox.state()["mocks"]
    assert mock["outcome"] == cli.TIME_RAN_OUT and mock["taken_s"] == 5 * 60
    assert mock["slugs"][0] == "heads-interleaved"


def test_kata_mock_after_the_deadline_hands_it_in_and_starts_no_other(sandbox, monkeypatch):
    sandbox.run("mock", "02", "--minutes", "5")
    sandbox.clock.advance(6)
    status, out = sandbox.run("mock")
    assert status == 0 and "Time ran out" in out and "Start another with kata mock" in out
    state = sandbox.state()
    assert state["mock"] is None and state["mocks"][0]["outcome"] == cli.TIME_RAN_OUT


def test_a_late_submit_is_recorded_as_time_ran_out(sandbox):
    sandbox.run("mock", "02", "--minutes", "5")
    sandbox.file("02").write_text(HEADS_SOLUTION)
    sandbox.clock.advance(9)
    status, out = sandbox.run("mock", "--submit")
    assert status == 1 and "time ran out" in out
    assert sandbox.state()["mocks"][0]["outcome"] == cli.TIME_RAN_OUT


# --- report -----------------------------------------------------------------------------

def _attempt(kata: str, status: str, slugs: list[str], minutes: float) -> dict:
    return {"kata": kata, "at": "2025-06-15T10:00:00", "t": START, "status": status,
            "slugs": slugs, "duration_s": minutes * 60}


@pytest.fixture
def practised(sandbox) -> Sandbox:
    sandbox.write_state(
        attempts=[_attempt("01_attention", "failing", ["missing-scale"], 5),
                  _attempt("01_attention", "all passed", [], 3),
                  _attempt("03_mha", "failing", ["scale-by-embed-dim", "missing-bias"], 10),
                  _attempt("03_mha", "failing", ["scale-by-embed-dim"], 4),
                  _attempt("04_masks", "core passed", [], 8),
                  _attempt("02_heads", "all passed", [], 6)],
        hints={"03_mha": 2}, revealed={"02_heads": {"at": "2025-06-15T11:00:00", "t": START}},
        time={"01_attention": {"total_s": 480.0}, "03_mha": {"total_s": 3900.0}},
        mocks=[{"kata": "02_heads", "started": "2025-06-16T09:00:00", "minutes": 20,
                "taken_s": 1200.0, "status": "failing", "outcome": "time ran out", "slugs": []}])
    return sandbox


def test_report_markdown(practised, monkeypatch):
    forbid_grading(monkeypatch)
    status, out = practised.run("report")
    assert status == 0
    assert out.startswith("# Attention katas: self-assessment")
    # progress counts the files as they stand (all skeletons here), as kata list does
    assert f"{N} katas: 0 all passed, {N} not started; next: 01_attention." in out
    assert "| 01_attention | not started | all passed | 2 | 8 min | 0/3 | no | - |" in out
    assert "| 03_mha | not started | failing | 2 | 1 h 05 min | 2/3 | no | `scale-by-embed-dim` ×2 |" in out
    assert "| 02_heads | not started | all passed | 1 | - | 0/3 | yes | - |" in out
    # where time ran out, the state the kata was in at the deadline
    assert ("| 02_heads | 2025-06-16 09:00:00 | 20:00 of 20:00 | time ran out (failing at the "
            "deadline) |") in out
    practise = out.split("## What to practise next")[1]
    order = [line.split("**")[1] for line in practise.splitlines() if line[:1].isdigit()]
    assert order == ["03_mha", "02_heads", "04_masks",
                     *(k.name for k in registry.KATAS if int(k.id) >= 5)]  # then the new ones
    assert "[scale-by-embed-dim] keeps coming back (2 attempts)" in practise


def test_report_json(practised):
    status, out = practised.run("report", "--json")
    assert status == 0
    report = json.loads(out)
    mha = report["katas"][2]
    assert mha["kata"] == "03_mha" and mha["best_status"] == "failing" and mha["attempts"] == 2
    assert mha["status"] == "not started" and mha["track"] == "foundations"
    assert mha["recurring_mistakes"] == ["scale-by-embed-dim"]
    assert mha["mistakes"] == {"scale-by-embed-dim": 2, "missing-bias": 1}
    assert mha["hints_used"] == 2 and mha["time_s"] == 3900.0
    assert report["katas"][1]["solution_revealed"] == "2025-06-15T11:00:00"
    assert report["practise_next"][0]["kata"] == "03_mha"
    assert report["mocks"][0]["outcome"] == "time ran out"


def test_report_json_stays_pure_when_a_mock_expires(practised, capsys):
    state = practised.state()
    state["mock"] = {"kata": "02_heads", "started": START - 3600, "deadline": START - 60,
                     "minutes": 59}
    practised.state_path.write_text(json.dumps(state))
    status, out = practised.run("report", "--json")
    assert json.loads(out)["mocks"][-1]["outcome"] == "time ran out"
    assert "Time ran out" in capsys.readouterr().err  # the notice went to stderr


# --- state ------------------------------------------------------------------------------

@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"attempts": "many"}', "\x00\xff"])
def test_a_corrupt_state_file_is_set_aside_with_a_warning(sandbox, content):
    sandbox.state_path.parent.mkdir()
    sandbox.state_path.write_text(content)
    status, out = sandbox.run("hint", "01")
    assert status == 0 and "hint 1/3" in out
    warnings = [line for line in out.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "state.json.corrupt" in warnings[0]
    assert (sandbox.state_path.parent / "state.json.corrupt").read_text() == content
    assert sandbox.state()["hints"] == {"01_attention": 1}
    assert "warning" not in sandbox.run("hint", "01")[1]  # rebuilt: no second warning


def test_malformed_entries_are_dropped_not_fatal(sandbox):
    sandbox.write_state(attempts=[{"kata": "02_heads"}, "junk", _attempt("02_heads", "failing", [], 1)],
                        hints={"02_heads": "two"}, mock={"kata": "02_heads"})
    status, out = sandbox.run("report", "--json")
    assert status == 0 and "warning" not in out
    assert json.loads(out)["katas"][1]["attempts"] == 1


def test_state_is_written_atomically(sandbox, monkeypatch):
    sandbox.run("hint", "01")

    def crash(*args):
        raise OSError("disk full")

    monkeypatch.setattr(cli.os, "replace", crash)
    with pytest.raises(OSError):
        sandbox.run("hint", "01")
    assert sandbox.state()["hints"] == {"01_attention": 1}  # the old file, whole
    assert [p.name for p in sandbox.state_path.parent.iterdir()] == ["state.json"]  # no temp left


# --- terminal output --------------------------------------------------------------------

@pytest.mark.parametrize("no_color", [False, True])
def test_no_color_means_no_escape_codes(sandbox, monkeypatch, capsys, no_color):
    monkeypatch.setenv("FORCE_COLOR", "1")  # as if on a terminal
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    else:
        monkeypatch.delenv("NO_COLOR", raising=False)
    assert cli.main(["list"], clock=sandbox.clock) == 0
    out = capsys.readouterr().out
    assert "not started" in out
    assert ("\x1b[" in out) is not no_color


def test_the_installed_command_runs_on_kata_root(sandbox):
    """End to end, as a learner runs it: a subprocess finding the repository by KATA_ROOT."""
    env = {"KATA_ROOT": str(sandbox.root), "NO_COLOR": "1", "PATH": "", "COLUMNS": "100",
           "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-m", "graders.frontends.cli", "hint", "flops"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "hint 1/3 (nudge) - 07_flops" in done.stdout
    assert sandbox.state()["hints"] == {"07_flops": 1}


# --- which copy of the repository (issue 10, item 11) ------------------------------------

def _copy_of_the_project(folder: Path) -> Path:
    """A second checkout: its own katas/ and graders/ (never imported: the installed
    graders grade it)."""
    for part in ("katas", "graders"):
        shutil.copytree(REPO_ROOT / part, folder / part, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def test_kata_grades_the_checkout_it_runs_in(tmp_path):
    """End to end: the installed command, run inside another copy of the repository (in a
    kata's folder, so the copy is found upwards), grades that copy's file and keeps its
    progress in that copy's .kata/ - not the installed copy's."""
    copy = _copy_of_the_project(tmp_path / "second")
    kata = registry.get("02")
    (copy / "katas" / kata.name / kata.file).write_text(HEADS_SOLUTION)
    env = {"NO_COLOR": "1", "PATH": "", "COLUMNS": "100", "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-m", "graders.frontends.cli", "check", "2"], env=env,
                          cwd=copy / "katas" / kata.name, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all passed" in done.stdout and "not implemented" not in done.stdout
    assert "working on" not in done.stderr  # the current directory's copy: nothing to say
    state = json.loads((copy / cli.STATE_DIR / "state.json").read_text())
    assert state["attempts"][0]["status"] == "all passed"


def test_outside_any_checkout_kata_says_it_works_on_the_installed_copy(sandbox, tmp_path,
                                                                        monkeypatch, capsys):
    monkeypatch.delenv(cli.ROOT_ENV_VAR)
    monkeypatch.setattr(cli, "INSTALLED_ROOT", sandbox.root)  # the sandbox plays the installed copy
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    console = Console(file=io.StringIO(), width=120, color_system=None)
    assert cli.main(["hint", "01"], console=console, clock=sandbox.clock) == 0
    assert sandbox.state()["hints"] == {"01_attention": 1}
    note = capsys.readouterr().err
    assert "no copy of attention-katas" in note and str(sandbox.root) in note


def test_the_nearest_checkout_upwards_wins_and_kata_root_is_named(tmp_path):
    copy = _copy_of_the_project(tmp_path / "second")
    inside = copy / "katas" / "03_mha"
    assert cli.locate_repository(inside, {}) == (copy, None)
    other = tmp_path / "third"
    root, note = cli.locate_repository(inside, {cli.ROOT_ENV_VAR: str(other)})
    assert root == other and cli.ROOT_ENV_VAR in note and str(other) in note
    assert cli.locate_repository(inside, {cli.ROOT_ENV_VAR: str(copy)}) == (copy, None)
    assert cli.locate_repository(tmp_path, {})[0] == cli.INSTALLED_ROOT


# --- code is printed whole, output off a terminal is plain (items 12, 13) -----------------

def _lines(text: str) -> set[str]:
    return {line.rstrip() for line in text.splitlines()}


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "pipe"])
def test_the_solution_is_printed_whole_at_80_columns(sandbox, terminal):
    kata = registry.get("03")
    status, out = sandbox.run("solution", "03", "--yes", width=80, terminal=terminal)
    assert status == 0
    code = [line.rstrip() for line in kata.solution_path.read_text().splitlines() if line.strip()]
    assert any(len(line) > 80 for line in code)  # or the test proves nothing
    assert [line for line in code if line not in _lines(out)] == []


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "pipe"])
@pytest.mark.parametrize("kata", registry.KATAS, ids=lambda k: k.name)
def test_the_near_code_hint_is_printed_as_code_never_broken(sandbox, kata, terminal):
    sandbox.write_state(hints={kata.name: 2})
    status, out = sandbox.run("hint", kata.id, width=80, terminal=terminal)
    assert status == 0 and "hint 3/3 (near-code)" in out
    missing = [line for line in kata.hints[2].splitlines()
               if line.strip() and "    " + line.rstrip() not in _lines(out)]
    assert missing == []


def test_prose_hints_are_wrapped_to_the_terminal(sandbox):
    status, out = sandbox.run("hint", "03", width=60, terminal=True)
    assert status == 0 and max(len(line) for line in out.splitlines()) <= 60


def test_output_that_is_not_a_terminal_has_no_box_drawing(sandbox, monkeypatch):
    sandbox.file("02").write_text(HEADS_INTERLEAVED)
    sandbox.file("03").write_text("# my attempt\n")
    outputs = [sandbox.run(*argv)[1] for argv in
               [("list",), ("check", "02"), ("hint", "02"), ("hint", "02", "--all"),
                ("solution", "02", "--yes"), ("report",), ("mock", "03", "--yes"), ("check", "03")]]
    outputs.append(sandbox.run("watch", "02", file_changes=lambda path: iter(()))[1])
    outputs.append(sandbox.run("restore", "03", "--list")[1])  # the mock backed 03 up
    boxed = [out for out in outputs if BOX_DRAWING.search(out)]
    assert boxed == []
    # ... while a terminal still gets its tables and rules
    assert BOX_DRAWING.search(sandbox.run("list", terminal=True)[1])


def test_kata_piped_to_another_command_prints_plain_text(sandbox):
    env = {"KATA_ROOT": str(sandbox.root), "PATH": "", "PYTHONPATH": str(REPO_ROOT)}
    for argv in (["list"], ["hint", "02"]):
        done = subprocess.run([sys.executable, "-m", "graders.frontends.cli", *argv], env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert not BOX_DRAWING.search(done.stdout) and "\x1b[" not in done.stdout


# --- a mock interview is an interview (item 14) -------------------------------------------

def test_a_mock_refuses_hints_the_solution_and_backups_until_handed_in(sandbox):
    sandbox.file("02").write_text("my earlier work\n")
    sandbox.write_state(hints={"01_attention": 1})
    assert sandbox.run("mock", "02", "--yes")[0] == 0
    for argv in (("hint", "02"), ("hint", "01", "--all"), ("solution", "02", "--yes"),
                 ("restore", "02")):
        status, out = sandbox.run(*argv)
        assert status == 1 and "mock interview of 02_heads is running" in out, argv
        assert "kata mock --submit" in out
    assert HEADS.hints[0][:30] not in out and "def split_heads" not in out
    state = sandbox.state()
    assert state["hints"] == {"01_attention": 1} and state["revealed"] == {}
    assert sandbox.file("02").read_bytes() == HEADS.pristine_skeleton_path.read_bytes()

    sandbox.clock.advance(HEADS.target_minutes + 1)  # handed in by the next command...
    status, out = sandbox.run("hint", "02")
    assert "Time ran out" in out and status == 0 and "hint 1/3" in out  # ... then hints are back


def test_the_report_during_a_mock_names_no_mistake_of_its_kata(practised, monkeypatch):
    hint = MISTAKES["scale-by-embed-dim"].hint
    assert hint in practised.run("report")[1]  # 03_mha: a recurring mistake, with its hint
    forbid_grading(monkeypatch)
    practised.run("mock", "03")
    status, out = practised.run("report")
    assert status == 0 and "scale-by-embed-dim" not in out and hint not in out
    assert "hidden while its mock interview runs" in out and "(hidden during the mock)" in out


def test_check_during_a_mock_gives_the_verdict_without_hints(sandbox):
    hint = MISTAKES["heads-interleaved"].hint
    sandbox.run("mock", "02")
    sandbox.file("02").write_text(HEADS_INTERLEAVED)
    outputs = [sandbox.run(*argv) for argv in
               (("check", "02"), ("check", "02", "--impl", str(sandbox.file("02"))))]
    explanation = MISTAKES["heads-interleaved"].explanation
    for status, out in outputs:
        flat = " ".join(out.split())
        assert status == 1 and "checked" in out and "expected" in out  # what failed, on what...
        assert "heads-interleaved" not in out and explanation[:30] not in flat  # ... no name,
        assert hint[:30] not in flat and "kata hint" not in out  # ... no hint
        assert "mistake names and hints are hidden" in flat
    assert "kata mock --submit" in outputs[0][1]
    status, out = sandbox.run("mock", "--submit")  # handed in: the full verdict, hints included
    assert hint[:30] in " ".join(out.split()) and "[heads-interleaved]" in out


FOLLOW_UPS_README = """# Heads

Split the heads.

```python
x = split_heads(torch.randn(2, 5, 12), num_heads=3)   # a code line long enough to be wrapped at 80 columns
```

## Interviewer follow-ups

- Why `view(b, n, h, d)` and not `view(b, h, n, d)`? (The ANSWER-ONE is the memory
  order: the heads are blocks of the last axis.)
- What does `.contiguous()` cost? (ANSWER-TWO: a copy.) And `(b*h, n, m)`?
- Does splitting change the FLOPs?
  <details><summary>answer</summary>ANSWER-THREE: no.</details>

To answer out loud:

1. Why batch-major? (ANSWER-FOUR.)

## Further reading

A paper (with a parenthesis that is kept).
"""


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "pipe"])
def test_a_mock_shows_the_follow_ups_without_their_answers(sandbox, monkeypatch, terminal):
    forbid_grading(monkeypatch)
    (sandbox.root / "katas" / "02_heads" / "README.md").write_text(FOLLOW_UPS_README)
    status, out = sandbox.run("mock", "02", width=80, terminal=terminal)
    assert status == 0
    flat = " ".join(out.split())
    assert "Why view(b, n, h, d) and not view(b, h, n, d)?" in flat.replace("`", "")
    assert "What does .contiguous() cost? And (b*h, n, m)?" in flat.replace("`", "")
    assert "To answer out loud:" in {line.strip() for line in out.splitlines()}  # its own paragraph
    assert "Does splitting change the FLOPs?" in flat and "Why batch-major?" in flat
    assert "ANSWER" not in out
    assert "(with a parenthesis that is kept)" in flat  # other sections are left alone
    assert ("x = split_heads(torch.randn(2, 5, 12), num_heads=3)   # a code line long enough "
            "to be wrapped at 80 columns") in _lines(out) | {line.strip() for line in out.splitlines()}


@pytest.mark.parametrize("edition", ["README.md", "README.zh-CN.md"])
def test_the_shipped_follow_ups_keep_their_questions_only(edition):
    """Every kata's README in both languages: the follow-ups' heading is recognised (the
    Chinese editions' too, the older title 面试官的追问 included) and no answer survives,
    in ASCII or full-width parentheses."""
    for kata in registry.KATAS:
        readme = kata.readme_path.with_name(edition)
        original = readme.read_text(encoding="utf-8")
        heading = next((h for h in FOLLOW_UPS_HEADINGS if f"\n{h}\n" in f"\n{original}"), None)
        assert heading, f"{readme}: no follow-ups heading"
        text = cli.questions_only(original)
        section = text.split(heading)[1].split("\n## ")[0]
        lines = [line for line in section.splitlines()[1:] if line.strip()]
        assert any(mark in line for line in lines for mark in "?？"), (readme, section)  # the questions are kept...
        for line in lines:  # ... alone
            assert not re.search(r"[()（）]", re.sub(r"`[^`]*`", "", line)), (readme, line)
        assert "<details" not in section.lower(), readme


@pytest.mark.parametrize("edition", ["README.md", "README.zh-CN.md"])
def test_a_mock_readme_names_no_mistake(edition):
    """Every kata's README in both languages, as a mock shows it (``kata mock`` and the
    room's mock alike: :func:`graders.practice.mock.mock_readme`): no mistake the grader
    names is listed, and only the sentences that listed them are gone."""
    from graders.core.catalogue import MISTAKES
    from graders.practice.mock import mock_readme, questions_only

    named = 0
    for kata in registry.KATAS:
        original = kata.readme_path.with_name(edition).read_text(encoding="utf-8")
        shown = mock_readme(original)
        slugs = [slug for slug in MISTAKES if re.search(rf"(?<![\w-]){re.escape(slug)}(?![\w-])", shown)]
        assert not slugs, (kata.name, edition, slugs)
        named += shown != questions_only(original)
        before, after = questions_only(original).splitlines(), set(shown.splitlines())
        for i, line in enumerate(before):  # a line gone names a mistake, or opens a sentence that does
            if line.strip() and line not in after:
                assert "`[" in line or "`[" in before[i + 1], (kata.name, edition, line)
        assert shown.count("```") == original.count("```"), (kata.name, edition)
    assert named >= 20  # the katas whose README lists the mistakes it names


def test_kata_mock_shows_the_readme_without_the_mistake_names(sandbox, monkeypatch):
    """``kata mock 02``, in English and in Chinese: the README's list of the mistakes the
    grader names (``[heads-interleaved]``, ...) is not shown; the rest of the section is."""
    forbid_grading(monkeypatch)
    for language, kept in (("en", "The follow-ups: non-contiguous inputs"), ("zh-CN", "追问检查：非连续输入")):
        monkeypatch.setenv("KATA_LANG", language)
        status, out = sandbox.run("mock", "02", "--yes")
        assert status == 0, out
        assert "heads-interleaved" not in out and "reshape-without-transpose" not in out, out
        assert kept in " ".join(out.split()).replace("*", ""), out
        assert sandbox.run("mock", "--abort")[0] == 0


def test_a_chinese_mock_shows_no_answers(sandbox, monkeypatch):
    """KATA_LANG=zh-CN kata mock 16: the README's follow-ups (titled 面试官的追问, answers in
    full-width parentheses) are shown as questions alone."""
    forbid_grading(monkeypatch)
    readme = (registry.get("16").readme_path.with_name("README.zh-CN.md")).read_text(encoding="utf-8")
    answer = re.search(r"（([^（）]{6,})）", readme.split("## 面试官")[1]).group(1)
    monkeypatch.setenv("KATA_LANG", "zh-CN")
    status, out = sandbox.run("mock", "16", "--yes")
    assert status == 0 and "面试官" in out
    assert answer[:6] not in out and "（" not in out.split("面试官")[-1]


# --- progress: list and report agree (item 15) --------------------------------------------

def _progress(out: str) -> str:
    return next(line.rstrip(".") for line in out.splitlines() if line.startswith(f"{N} katas: "))


def test_list_and_report_agree_on_progress(sandbox, monkeypatch):
    sandbox.file("02").write_text(HEADS_SOLUTION)
    listed = _progress(sandbox.run("list")[1])
    assert listed == f"{N} katas: 1 all passed, {N - 1} not started; next: 01_attention"
    forbid_grading(monkeypatch)  # graded by list: the report reuses it
    assert _progress(sandbox.run("report")[1]) == listed
    assert json.loads(sandbox.run("report", "--json")[1])["progress"] == listed

    sandbox.run("reset", "02", "--yes")  # passed once, a skeleton now: both say so
    listed = _progress(sandbox.run("list")[1])
    status, report = sandbox.run("report")
    assert listed == _progress(report) == f"{N} katas: 0 all passed, {N} not started; next: 01_attention"
    assert "| 02_heads | not started | all passed |" in report


def test_a_changed_file_is_graded_by_the_report_too(sandbox, capsys):
    sandbox.file("02").write_text(HEADS_INTERLEAVED)
    status, out = sandbox.run("report")
    assert "1 failing" in _progress(out) and "| 02_heads | failing | failing |" in out
    assert "grading 02_heads" in capsys.readouterr().err  # the notice is not in the report


def test_progress_counts_each_kata_once_in_words_that_add_up():
    statuses = dict(zip([k.name for k in registry.KATAS],
                        ["all passed", "core passed", "failing", "file missing"]
                        + ["not started"] * (N - 4)))
    line = cli.progress_line(statuses)
    assert line == (f"{N} katas: 1 all passed, 1 core passed (follow-ups left), 1 failing, "
                    f"{N - 4} not started, 1 file missing; next: 02_heads")
    assert sum(int(n) for n in re.findall(r"(\d+) [a-z]", line.split(": ", 1)[1])) == N


# --- restore (item 16) --------------------------------------------------------------------

def test_restore_brings_back_the_latest_backup_and_backs_up_what_it_replaces(sandbox):
    path = sandbox.file("02")
    assert sandbox.run("restore", "02")[0] == 1  # no backups yet
    for text in ("first\n", "second\n"):
        path.write_text(text)
        sandbox.run("reset", "02", "--yes")
        sandbox.clock.advance(1)
    path.write_text("third\n")

    status, out = sandbox.run("restore", "02", "--list")
    assert status == 0 and path.read_text() == "third\n"
    rows = [line for line in out.splitlines() if re.match(r"\s+\d+\s", line)]
    assert len(rows) == 2 and "(latest)" in rows[0]

    status, out = sandbox.run("restore", "02")
    assert status == 0 and path.read_text() == "second\n"
    assert "your file is backed up as .kata/backups/02_heads/" in out
    backups = sorted((sandbox.root / ".kata/backups/02_heads").iterdir())
    assert sorted(p.read_text() for p in backups) == ["first\n", "second\n", "third\n"]

    status, out = sandbox.run("restore", "02", "--list")  # third is the latest backup now
    rows = [line for line in out.splitlines() if re.match(r"\s+\d+\s", line)]
    assert len(rows) == 3 and "same as your file" in rows[1]
    status, out = sandbox.run("restore", "02", "3")  # the oldest: first
    assert status == 0 and path.read_text() == "first\n"
    assert sandbox.run("restore", "02", "9")[0] == 2


def test_restore_over_the_untouched_skeleton_makes_no_backup(sandbox):
    sandbox.file("04").write_text("mine\n")
    sandbox.run("reset", "04", "--yes")
    assert sandbox.run("restore", "masks")[0] == 0
    assert sandbox.file("04").read_text() == "mine\n"
    assert len(list((sandbox.root / ".kata/backups/04_masks").iterdir())) == 1
    status, out = sandbox.run("restore", "04")
    assert status == 0 and "already the same" in out


# --- tracks and target times --------------------------------------------------------------

def test_every_kata_is_in_a_track_with_a_target_time():
    assert list(registry.TRACKS)[0] == "foundations"
    for kata in registry.KATAS:
        assert kata.track in registry.TRACKS and kata.target_minutes > 0


@pytest.fixture
def two_tracks(monkeypatch) -> list[str]:
    """The registry with its last two katas in the second track and the others in the
    first (whether or not the real second track's katas are there yet)."""
    katas = [dataclasses.replace(k, track="foundations" if n < N - 2 else "models")
             for n, k in enumerate(registry.KATAS)]
    monkeypatch.setattr(registry, "KATAS", tuple(katas))
    return [k.name for k in katas]


def test_list_and_report_group_katas_by_track(sandbox, monkeypatch, two_tracks):
    forbid_grading(monkeypatch)
    ids = [k.id for k in registry.KATAS]  # not always 01..N: katas are numbered by plan
    first, second = (f"Foundations ({ids[0]}-{ids[-3]})",
                     f"{registry.TRACKS['models']} ({ids[-2]}-{ids[-1]})")
    for out in (sandbox.run("list")[1], sandbox.run("list", terminal=True)[1]):
        order = [out.index(first), *(out.index(name) for name in two_tracks[:-2]), out.index(second),
                 *(out.index(name) for name in two_tracks[-2:])]
        assert order == sorted(order)
        assert out.count(f"{N} katas: ") == 1  # one progress line for both tracks
    report = sandbox.run("report")[1]
    assert report.index(f"## {first}") < report.index(f"| {two_tracks[0]} |") < report.index(
        f"## {second}") < report.index(f"| {two_tracks[-1]} |")
    tracks = json.loads(sandbox.run("report", "--json")[1])["tracks"]
    assert [t["katas"] for t in tracks if t["katas"]] == [two_tracks[:-2], two_tracks[-2:]]


def test_list_shows_each_katas_difficulty_and_target_time(sandbox, monkeypatch):
    forbid_grading(monkeypatch)
    out = sandbox.run("list", width=80)[1]
    for kata in registry.KATAS:
        row = next(line for line in out.splitlines() if line.strip().startswith(kata.name))
        assert f"{kata.difficulty}, {kata.target_minutes} min" in row


def test_a_mock_lasts_the_katas_target_time_by_default(sandbox, monkeypatch):
    forbid_grading(monkeypatch)
    kata = registry.get("06")
    status, out = sandbox.run("mock", "06")
    assert status == 0 and f"You have {kata.target_minutes}:00" in out
    mock = sandbox.state()["mock"]
    assert mock["minutes"] == kata.target_minutes
    assert mock["deadline"] == START + kata.target_minutes * 60
