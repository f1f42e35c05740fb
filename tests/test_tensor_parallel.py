"""Kata 31's own hostile cases: what only a layer on several processes can do wrong.

A rank that raises, a rank that exits, a collective no other rank joins: each ends in a
verdict naming the rank, within a bounded time, and no process of the grading outlives it.
The generic cases (every kata's: raises, loops, prints...) are in tests/test_hostile.py.
"""

from __future__ import annotations

import os

import pytest

from graders.core import descendants, guard, registry
from graders.core.learner_clock import CallClock
from graders.tensor_parallel import ranks
from tests.grading_session import run_session

KATA = registry.get("31")
SESSION_BOUND_S = 30.0  # a hang is waited out once (the collective timeout), then fails at once

# Sabotage of the reference's forward on one rank only: (source added, what the first failure says).
ON_RANK_1 = {
    "raises": ("raise RuntimeError('boom on rank 1')", "boom on rank 1"),
    "exits": ("__import__('os')._exit(3)", "rank 1 of 2 ended (exit status 3)"),
    "waits-for-a-message-never-sent": (
        "dist.recv(torch.zeros(1, dtype=x.dtype), src=0)",
        "every rank must call the same collectives"),
}


def sabotaged(tmp_path, case: str):
    source = KATA.solution_path.read_text()
    body, _expected = ON_RANK_1[case]
    old = "        b, n, _ = x.shape\n"
    assert source.count(old) == 1
    source = source.replace(old, old + f"        if dist.get_rank() == 1:\n            {body}\n")
    path = tmp_path / "learner" / "tensor_parallel.py"
    path.parent.mkdir()
    path.write_text(source)
    return path


@pytest.fixture(autouse=True)
def short_time_limit(monkeypatch):
    monkeypatch.setattr(guard, "CALL_TIME_LIMIT_S", 0.5)


@pytest.mark.parametrize("case", list(ON_RANK_1))
def test_one_rank_goes_wrong(tmp_path, case):
    path = sabotaged(tmp_path, case)
    before = set(descendants.children(os.getpid()))
    clock = CallClock()
    session = run_session(KATA, "--impl", str(path))
    elapsed = clock.elapsed()
    assert session.exit_code == 1, session.output[-3000:]
    reports = session.failure_reports()
    first = "\n".join(reports[0])
    assert ON_RANK_1[case][1] in first, first
    if case == "raises":
        assert "rank 1" in first, first
    assert session.passed >= 2, session.output[-3000:]  # the two linears are untouched
    assert "Traceback" not in session.output
    assert elapsed < SESSION_BOUND_S
    # Nothing of the ranks is left: no child of this process, no zombie either.
    assert set(descendants.children(os.getpid())) <= before


def test_a_hang_is_waited_out_once(tmp_path):
    """After one run waited out a collective, later runs fail at once with 'not run'."""
    path = sabotaged(tmp_path, "waits-for-a-message-never-sent")
    session = run_session(KATA, "--impl", str(path))
    verdicts = ["\n".join(r) for r in session.failure_reports()]
    waited = [v for v in verdicts if "every rank must call the same collectives" in v]
    assert len(waited) == 1, verdicts
    assert all("in an earlier check" in v for v in verdicts if v not in waited), verdicts


def test_collectives_imported_by_name_are_recorded(tmp_path):
    """`from torch.distributed import all_gather` is recorded like dist.all_gather."""
    source = KATA.solution_path.read_text().replace(
        "        partial = F.linear(x_local, self.weight)\n",
        "        from_all = [torch.empty_like(x_local) for _ in range(world(self.group)[1])]\n"
        "        all_gather(from_all, x_local.contiguous())\n"
        "        partial = F.linear(x_local, self.weight)\n")
    source = "from torch.distributed import all_gather\n" + source
    path = tmp_path / "tensor_parallel.py"
    path.write_text(source)
    session = run_session(KATA, "--impl", str(path))
    assert session.slugs == {"all-gather-instead-of-reduce"}, session.output[-3000:]


def test_timeouts_follow_the_guard(monkeypatch):
    monkeypatch.setattr(guard, "CALL_TIME_LIMIT_S", 10.0)
    assert ranks.collective_timeout_s() == 10.0
    monkeypatch.setattr(guard, "CALL_TIME_LIMIT_S", 0.5)
    assert ranks.collective_timeout_s() == 5.0
    assert ranks.silence_limit_s() > ranks.collective_timeout_s()
