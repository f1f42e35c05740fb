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


def test_readme_quiz_and_follow_up_numbers_by_running_them():
    """The numbers the README's follow-ups and the quiz state, computed."""
    import torch

    from graders.core import loader
    from graders.core.implementation import Implementation
    from graders.tensor_parallel import checks, twin
    from graders.tensor_parallel.meta import QUESTIONS

    hidden, layers, tp = 8192, 80, 8  # Llama-3-70B, bfloat16
    per_token = hidden * torch.empty(0, dtype=torch.bfloat16).element_size()
    numbers = {per_token: "16,384", 2 * per_token: "32,768", 4 * per_token: "65,536",
               2 * (tp - 1) * per_token // tp: "28,672", layers * 2 * per_token: "2,621,440"}
    for value, text in numbers.items():
        assert f"{value:,}" == text
        for edition in ("README.md", "README.zh-CN.md"):
            assert text in (KATA.folder / edition).read_text(), (edition, text)
    # Quiz 2: the rows of in_proj_weight that rank 1 of 2 keeps for W_k (E = 16, h = 4).
    E = 16
    sd = {"in_proj_weight": torch.arange(3.0 * E)[:, None].expand(3 * E, E).clone(),
          "out_proj.weight": torch.zeros(E, E)}
    rows = twin.attention_shards(sd, E, 4, 2, 1)["k_proj.weight"][:, 0].long().tolist()
    quiz = QUESTIONS[1]
    assert quiz.choices["ABC".index(quiz.answer)] == f"rows {rows[0]} ... {rows[-1]}"
    assert rows == list(range(rows[0], rows[-1] + 1))
    # Quiz 1: the reference's all-reduces in one forward and backward, as the ranks record them.
    impl = Implementation.of(KATA, KATA.solution_path, loader.load(KATA.solution_path, KATA))
    case = checks.attention_case(0, torch.float64)
    run = ranks.run(impl, 2, [case], checks.grade_case)
    assert run.failure is None, run.failure
    for rank in range(2):
        calls = run.reports[rank][0]["calls"]
        assert len(calls["forward"]) + len(calls["backward"]) == QUESTIONS[0].answer
