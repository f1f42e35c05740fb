"""Kata 22 beyond its mutants: learner calls that raise in a scenario, and what no slug
names, still end in a verdict (the step, what was expected, what came), never a grader
traceback; the pool check tells views from copies by storage address."""

from __future__ import annotations

import pytest
import torch

from graders.core import registry
from graders.core.memory import kept_storages
from tests.grading_session import run_session

KATA = registry.get("22")
FORK = "        child = self.new_sequence()\n"


def variant(tmp_path, name: str, old: str, new: str):
    text = KATA.solution_path.read_text()
    assert text.count(old) == 1
    path = tmp_path / f"{name}.py"
    path.write_text(text.replace(old, new))
    return path


@pytest.mark.parametrize("name, new, slugs", [
    ("fork_refuses_when_full",  # the learner trial's file: a fork that thinks it needs a block
     "        if not self.free_blocks:\n            raise OutOfBlocksError('pool full')\n" + FORK,
     {"fork-needs-free-block"}),
    ("fork_raises_other", "        if self.next_id > 2:\n            raise ValueError('no')\n" + FORK,
     set()),  # no catalogued mistake: none named
])
def test_a_fork_that_raises_reads_as_a_verdict(tmp_path, name, new, slugs):
    session = run_session(KATA, "--impl", str(variant(tmp_path, name, FORK, new)))
    assert session.failed >= 1, session.output
    assert "Traceback" not in session.output and "KeyError" not in session.output, session.output
    assert "= fork(" in session.output and "expected outcome ok" in session.output, session.output
    assert "fork allocates nothing" in session.output, session.output
    assert session.slugs == slugs, session.output


def test_a_view_of_a_pool_is_not_a_copy():
    class Cache:
        def __init__(self):
            self.k_cache = torch.zeros(3, 2, 1, 2)
            self.v_cache = torch.zeros(3, 2, 1, 2)
            self.views = {object(): self.k_cache[1]}
            self.copies = {object(): self.v_cache[0].clone()}

    cache = Cache()
    pools = {cache.k_cache.untyped_storage().data_ptr(), cache.v_cache.untyped_storage().data_ptr()}
    kept = kept_storages(cache, "cache")
    extra = [k for k in kept if k.data_ptr not in pools]
    assert len(kept) == 3 and len(extra) == 1 and extra[0].path.startswith("cache.copies[")
