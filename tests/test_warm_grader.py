"""The warm grader (graders.frontends.serve.warm) that `kata serve` and `kata watch` grade
with: the same verdicts as the cold path, and every isolation guarantee of it — a crash,
``os._exit``, an endless loop, a fork, a syntax error end the forked check, never the zygote
or the caller, and a zygote that is gone is replaced."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from graders.core import registry, session
from graders.frontends.serve.grading import grade_in_subprocess
from graders.frontends.serve.warm import WarmGrader, alive
from tests.mutation import mutants

ATTENTION = registry.get("01")
SOLUTION = ATTENTION.solution_path.read_text()


@pytest.fixture(scope="module")
def warm():
    os.environ["KATA_TIME_LIMIT"] = "2"  # read by each check: endless loops end soon
    grader = WarmGrader()
    grader.start()
    yield grader
    grader.close()
    os.environ.pop("KATA_TIME_LIMIT", None)


def learner(tmp_path: Path, text: str, name: str = "attention.py") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("key", ["01", "05", "07", "17", "20"])
def test_the_same_verdicts_as_the_cold_path(warm, tmp_path, key):
    """Kata 01 against the cold path itself (a fresh Python, its result sent as JSON); the
    others against that path's grading run here (session.grade, what the fresh Python runs),
    which spares an import of torch per file."""
    kata = registry.get(key)
    cold = grade_in_subprocess if key == "01" else (lambda kata, path: session.grade(kata.id, path))
    files = [kata.solution_path, kata.pristine_skeleton_path,
             mutants(kata)[0].materialise(kata, tmp_path)]
    for path in files:
        warm_result, cold_result = warm(kata, path), cold(kata, path)
        # The judgement, check by check (a verdict's numbers may differ where a mutant draws
        # dropout from a process's own random state: the cold path differs from itself there).
        assert judgement(warm_result) == judgement(cold_result), path
        assert (warm_result.error is None) == (cold_result.error is None), path


def judgement(result) -> list[tuple]:
    return [(c.name, c.tier, c.outcome, c.slug) for c in result.checks]


def test_every_katas_reference_passes_and_its_skeleton_is_not_started(warm):
    for kata in registry.KATAS:
        assert warm(kata, kata.solution_path).passed, kata.name
        assert warm(kata, kata.pristine_skeleton_path).status == "not started", kata.name


def test_a_verdict_takes_the_grading_not_an_import_of_torch(warm):
    warm(ATTENTION, ATTENTION.solution_path)
    begun = time.monotonic()
    assert warm(ATTENTION, ATTENTION.solution_path).passed
    assert time.monotonic() - begun < 5  # about 0.4 s on a quiet 2-core machine (benchmark)


@pytest.mark.parametrize("sabotage, said", [
    ("import os\nos._exit(3)\n", "stopped without a result"),
    ("import ctypes\nctypes.string_at(0)\n", "stopped without a result"),  # a segfault
    ("def broken(:\n", "syntax"),
])
def test_a_check_that_dies_ends_alone_and_the_next_one_works(warm, tmp_path, sabotage, said):
    result = warm(ATTENTION, learner(tmp_path, SOLUTION + "\n" + sabotage))
    assert not result.passed and said in ((result.error or "") + str(result.to_dict())).lower(), result
    assert warm(ATTENTION, ATTENTION.solution_path).passed


def test_an_endless_loop_at_import_is_stopped_at_the_run_limit(warm, tmp_path):
    begun = time.monotonic()
    # (the guard's own per-call limit, 2 s here, would stop it later with a verdict)
    result = warm(ATTENTION, learner(tmp_path, "while True:\n    pass\n"), time_limit=1)
    assert time.monotonic() - begun < 10
    assert "longer than 1 s" in (result.error or ""), result
    assert warm(ATTENTION, ATTENTION.solution_path).passed


def test_code_that_forks_is_stopped_with_its_process_group(warm, tmp_path, monkeypatch):
    pids = tmp_path / "pids"
    monkeypatch.setenv("KATA_PID_FILE", str(pids))  # the caller's environment reaches the check
    forks = ("import os, time\nif os.fork() == 0:\n"
             "    open(os.environ['KATA_PID_FILE'], 'a').write(f'{os.getpid()}\\n')\n"
             "    time.sleep(400)\n")
    result = warm(ATTENTION, learner(tmp_path, SOLUTION + forks))
    assert result.passed and "child process" in result.note
    forked = [int(line) for line in pids.read_text().split()]
    time.sleep(0.5)
    assert forked and not any(alive(pid) and Path(f"/proc/{pid}").exists()
                              and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]
                              for pid in forked)


# The room trial's probe (2026-12-01): a double fork with os.setsid() in between leaves a
# grandchild in a session of its own, reparented away from the check: no killpg reaches it.
DOUBLE_FORK = ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
               "        open(os.environ['KATA_PID_FILE'], 'a').write(f'{os.getpid()}\\n')\n"
               "        for i in range(600):\n            time.sleep(1)\n    os._exit(0)\n")


def running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, IndexError):
        return False


def test_a_double_fork_with_setsid_is_stopped_with_the_check(warm, tmp_path, monkeypatch):
    pids = tmp_path / "pids"
    monkeypatch.setenv("KATA_PID_FILE", str(pids))
    result = warm(ATTENTION, learner(tmp_path, SOLUTION + DOUBLE_FORK))
    assert result.passed and "child process" in (result.note or ""), result
    forked = [int(line) for line in pids.read_text().split()]
    time.sleep(0.5)
    assert forked and not any(running(pid) for pid in forked), "the grandchild outlived its check"


def test_a_double_fork_is_stopped_on_the_cold_path_too(tmp_path, monkeypatch):
    pids = tmp_path / "pids"
    monkeypatch.setenv("KATA_PID_FILE", str(pids))
    result = grade_in_subprocess(ATTENTION, learner(tmp_path, SOLUTION + DOUBLE_FORK))
    assert result.passed and "child process" in (result.note or ""), result
    forked = [int(line) for line in pids.read_text().split()]
    time.sleep(0.5)
    assert forked and not any(running(pid) for pid in forked), "the grandchild outlived its check"


def test_each_check_imports_the_file_afresh(warm, tmp_path):
    path = learner(tmp_path, SOLUTION.replace("math.sqrt(", "(", 1))
    first = warm(ATTENTION, path)
    path.write_text(SOLUTION)
    assert not first.passed and warm(ATTENTION, path).passed


def test_a_zygote_that_is_gone_is_replaced(tmp_path):
    grader = WarmGrader()
    try:
        grader.start()
        grader._zygote.kill()
        grader._zygote.wait()
        assert grader(ATTENTION, ATTENTION.solution_path).passed  # the cold way, this once
        assert grader(ATTENTION, ATTENTION.solution_path).passed  # warm again
        assert grader._zygote is not None and grader._zygote.poll() is None
    finally:
        grader.close()


def test_a_check_stopped_by_ctrl_c_ends_a_double_fork_too(warm, tmp_path, monkeypatch):
    """kata watch: Ctrl-C during a check ends the check and the grandchild it left."""
    import graders.frontends.serve.warm as module

    pids = tmp_path / "pids"
    monkeypatch.setenv("KATA_PID_FILE", str(pids))
    real_sleep, pressed = time.sleep, []

    def interrupted(seconds):  # Ctrl-C, once, when the grandchild runs
        if not pressed and pids.exists() and pids.read_text().strip():
            pressed.append(True)
            raise KeyboardInterrupt
        real_sleep(seconds)

    path = learner(tmp_path, SOLUTION + DOUBLE_FORK + "time.sleep(1.5)\n")
    monkeypatch.setattr(module.time, "sleep", interrupted)
    with pytest.raises(KeyboardInterrupt):
        warm(ATTENTION, path)
    monkeypatch.setattr(module.time, "sleep", real_sleep)
    forked = [int(line) for line in pids.read_text().split()]
    real_sleep(0.5)
    assert forked and not any(running(pid) for pid in forked), "the grandchild outlived Ctrl-C"
    assert warm(ATTENTION, ATTENTION.solution_path).passed
