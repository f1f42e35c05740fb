"""Grader for kata 22: ``PagedKVCache`` (a block table, lazy allocation, fork with
copy-on-write, OutOfBlocksError) and ``paged_attention`` (decode attention through the
tables).

The allocator is graded by scripts (graders.paged_kv_cache.scenarios) read back from the
pools, policy-free; a wrong step is named by running each mistake's twin through the same
script. ``paged_attention`` is graded on inputs the grader builds (random pools, tables out
of physical order, ``-1`` padding) against a float64 reference, mistakes named by
recomputing them; its memory is recorded as in katas 14 and 18 (views are not new memory).
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
from torch import Tensor

from graders.core.compare import expect_close
from graders.core.i18n import N_, _
from graders.core.implementation import Implementation
from graders.core.inputs import randn
from graders.core.memory import CreatedTensors, kept_storages
from graders.core.mistakes import Suspect
from graders.core.report import describe_inputs, title, verdict
from graders.paged_kv_cache.scenarios import (
    SKIPPED,
    Scenario,
    describe_op,
    first_difference,
    name_mistake,
    new_rows,
    run,
    twin_trace,
)
from graders.paged_kv_cache.twin import (ATTENTION_MISTAKES, paged_reference, sequence_attention,
                                         slug_of)

__all__ = [
    "test_placement_and_lazy_allocation",
    "test_fork_and_copy_on_write",
    "test_out_of_blocks_changes_nothing",
    "test_paged_attention_matches_reference",
    "test_paged_attention_float64_and_int32_tables",
    "test_paged_attention_memory",
    "test_keys_and_values_live_in_the_pools",
    "test_decode_loop_equals_dense_attention",
    "test_block_size_one_and_long_prefills",
    "test_beam_search_forks_and_frees",
    "test_pools_are_never_replaced",
    "test_paged_attention_edge_lengths",
]

# Several sequences interleaved, one freed, so that later tables are out of physical order
# under FIFO, LIFO and lowest-id-first free lists alike.
INTERLEAVED = Scenario(16, 4, 2, 3, [
    ("new", "a"), ("append", "a", 6), ("new", "b"), ("append", "b", 3), ("new", "c"),
    ("append", "c", 4), ("append", "a", 1), ("append", "a", 1), ("append", "b", 2),
    ("free", "c"), ("new", "d"), ("append", "d", 5), ("append", "a", 5), ("append", "b", 7),
    ("free", "a"), ("new", "e"), ("append", "e", 9), ("append", "d", 4), ("append", "e", 1),
    ("free", "b"), ("free", "d"), ("free", "e"),
])
FORKS = Scenario(24, 4, 1, 2, [
    ("new", "x"), ("append", "x", 2), ("new", "p"), ("append", "p", 6), ("free", "x"),
    ("fork", "p", "q"), ("fork", "p", "r"), ("fork", "p", "s"), ("append", "q", 1),
    ("append", "r", 3), ("append", "p", 1), ("append", "s", 1), ("append", "p", 2),
    ("fork", "p", "u"), ("append", "u", 1), ("append", "p", 4), ("free", "q"),
    ("fork", "r", "w"), ("free", "r"), ("append", "w", 2), ("free", "p"), ("free", "s"),
    ("free", "u"), ("free", "w"),
])
OUT_OF_BLOCKS = Scenario(5, 4, 2, 2, [
    ("new", "a"), ("append", "a", 6), ("new", "b"), ("append", "b", 4), ("append", "b", 5),
    ("append", "b", 1), ("append", "a", 3), ("fork", "a", "c"), ("append", "c", 1),
    ("free", "b"), ("append", "c", 1), ("append", "a", 1), ("free", "a"), ("free", "c"),
])

# Shortfalls only found mid-way: a two-block append with one block free, then a copy-on-write
# append that needs the copy's block and one more with one free. An allocator that finds out
# inside the allocation (an empty free list) has by then taken a block or made the copy.
MID_WAY = Scenario(6, 4, 1, 2, [
    ("new", "a"), ("append", "a", 6), ("fork", "a", "b"), ("new", "c"), ("append", "c", 8),
    ("new", "d"), ("append", "d", 1), ("append", "c", 5), ("append", "b", 3),
    ("append", "b", 2), ("append", "c", 1), ("free", "a"), ("append", "b", 3), ("free", "b"),
    ("free", "c"), ("free", "d"),
])


def learner_cache(impl: Implementation, scenario: Scenario, on: str) -> tuple[Any, type]:
    cls, error = impl.attr("PagedKVCache"), impl.attr("OutOfBlocksError")
    cache = impl.call(cls, *scenario.args(), dtype=scenario.dtype, what="PagedKVCache(...)",
                      on=on)
    return cache, error


def learner_call(impl: Implementation, on: str):
    def call(fn, out_of_blocks, *args):
        def attempt():
            try:
                return "ok", fn(*args)
            except out_of_blocks:
                return "out-of-blocks", None
            except NotImplementedError:
                raise
            except Exception as error:  # noqa: BLE001 (observed, then compared)
                return f"error: {type(error).__name__}", f"{type(error).__name__}: {error}"
        return impl.call(attempt, what=getattr(fn, "__name__", "call"), on=on)
    return call


def word(code: Any) -> str:
    """A scenario's observation code (graders.paged_kv_cache.scenarios) in the learner's
    language: "ok", "out-of-blocks", "error: IndexError", "wrong at 3", "values", ..."""
    code = str(code)
    if code == "ok":
        return _("ok")
    if code == "out-of-blocks":
        return _("raised OutOfBlocksError")
    if code == SKIPPED:
        return _("not run (the sequence was never made)")
    if code.startswith("error: "):
        return _("raised {error}", error=code[len("error: "):])
    if code.startswith("wrong at "):
        return _("wrong at position {p}", p=code[len("wrong at "):])
    if code == "table too short":
        return _("table too short")
    if code == "values":
        return _("returns other values")
    if code.startswith("shape "):
        return _("shape {shape}", shape=code[len("shape "):])
    return code


def sequence_line(name: str, state: tuple) -> str:
    if len(state) != 4:
        return _("{name}: {error}", name=name, error=word(state[0]))
    return _("{name}: seq_len {length}, {blocks} blocks in its table, pools {placed}, "
             "keys_values {read}", name=name, length=state[0], blocks=state[1],
             placed=word(state[2]), read=word(state[3]))


def state_line(observation) -> str:
    free = (_("free blocks {free}", free=observation.free) if isinstance(observation.free, int)
            else _("num_free_blocks() {error}", error=word(observation.free)))
    parts = [_("outcome {outcome}, {free}", outcome=word(observation.outcome), free=free)]
    parts += [sequence_line(name, state) for name, state in sorted(observation.sequences.items())]
    return _("; ").join(parts)


def later_keys_changed(scenario: Scenario, got: list, want: list, step: int) -> str | None:
    """The first later step where a live sequence's keys or values read back wrong: what a
    mistake whose first sign is a count (a write into a shared block) does to a sibling."""
    for later in range(step + 1, len(got)):
        for name, state in sorted(want[later].sequences.items()):
            mine = got[later].sequences.get(name)
            if mine is None or len(mine) != 4 or mine[2:] == state[2:] or mine[:2] != state[:2]:
                continue
            return _("then after step {step}, {op}: {state}", step=later + 1,
                     op=describe_op(scenario.ops[later]), state=sequence_line(name, mine))
    return None


def check_scenario(impl: Implementation, scenario: Scenario, check: str) -> None:
    script = "; ".join(describe_op(op) for op in scenario.ops)
    on = describe_inputs(cache=scenario.describe()) + f", {script}"
    cache, error = learner_cache(impl, scenario, on)
    got = run(scenario, cache, error, learner_call(impl, on))
    want = twin_trace(scenario, None)
    step = first_difference(got, want)
    if step is None:
        return
    op = scenario.ops[step]
    details = [_("after step {step}, {op}:", step=step + 1, op=describe_op(op)),
               _("expected {state}", state=state_line(want[step])),
               _("got      {state}", state=state_line(got[step]))]
    if got[step].detail:
        details.append(got[step].detail)
    if op[0] == "fork" and got[step].outcome != "ok":
        details.append(_("fork allocates nothing (it shares the parent's blocks): it needs no "
                         "free block and never raises OutOfBlocksError"))
    later = later_keys_changed(scenario, got, want, step)
    if later:
        details.append(later)
    raise verdict(check, on, details, name_mistake(scenario, got, step, want))


@pytest.mark.core
@title(N_("placement and lazy allocation, sequences interleaved"))
def test_placement_and_lazy_allocation(impl: Implementation) -> None:
    check_scenario(impl, INTERLEAVED, _("the cache after every call"))
    check_scenario(impl, Scenario(12, 3, 1, 2, INTERLEAVED.ops, torch.float64),
                   _("the cache after every call"))


@pytest.mark.core
@title(N_("fork shares blocks; copy-on-write on the shared partial block"))
def test_fork_and_copy_on_write(impl: Implementation) -> None:
    check_scenario(impl, FORKS, _("the cache after every call"))
    check_scenario(impl, Scenario(20, 2, 2, 2, FORKS.ops, torch.float64),
                   _("the cache after every call"))


@pytest.mark.core
@title(N_("OutOfBlocksError before anything changes"))
def test_out_of_blocks_changes_nothing(impl: Implementation) -> None:
    check_scenario(impl, MID_WAY, _("the cache after every call"))
    check_scenario(impl, OUT_OF_BLOCKS, _("the cache after every call"))


# ------------------------------------------------------------------------- attention


# A softmax taken in float32 and cast back (Hugging Face's eager attention, Llama's) is
# correct, and in float64 precise to float32's digits only: the float64 check allows for it
# as katas 13, 15, 18, 20 and 23 do (their FLOAT64_SLACK); it grades float64 in, float64 out.
FLOAT64_SLACK = 100.0


def attention_inputs(b: int, h: int, kvh: int, d: int, size: int, lens: list[int], seed: int,
                     dtype=torch.float32, num_blocks: int | None = None,
                     index_dtype=torch.int64) -> dict[str, Tensor]:
    """Random pools, tables out of physical order (a random permutation of the blocks),
    padding -1, and the queries."""
    need = [math.ceil(n / size) for n in lens]
    num_blocks = num_blocks or 3 * sum(need) + 2
    g = torch.Generator().manual_seed(seed)
    order = torch.randperm(num_blocks, generator=g).tolist()
    tables = torch.full((b, max(need)), -1, dtype=index_dtype)
    for i, count in enumerate(need):
        tables[i, :count] = torch.tensor(order[:count], dtype=index_dtype)
        order = order[count:]
    return {
        "q": randn(b, h, d, seed=seed, dtype=dtype),
        "k_cache": randn(num_blocks, size, kvh, d, seed=seed + 1, dtype=dtype),
        "v_cache": randn(num_blocks, size, kvh, d, seed=seed + 2, dtype=dtype),
        "block_tables": tables,
        "seq_lens": torch.tensor(lens, dtype=index_dtype),
    }


def attention_suspects(inputs: dict[str, Tensor]) -> list[Suspect]:
    return [Suspect(slug_of(switch), lambda switch=switch: paged_reference(**inputs, mistake=switch))
            for switch in ATTENTION_MISTAKES]


def check_attention(impl: Implementation, inputs: dict[str, Tensor],
                    recorder: CreatedTensors | None = None) -> Any:
    on = describe_inputs(**inputs)
    fn = impl.attr("paged_attention")
    copies = {name: t.clone() for name, t in inputs.items()}

    def called():
        if recorder is None:
            return fn(**copies)
        with recorder:
            return fn(**copies)

    got = impl.call(called, what="paged_attention", on=on)
    slack = FLOAT64_SLACK if inputs["q"].dtype == torch.float64 else 1.0
    expect_close(got, paged_reference(**inputs), _("the output (b, num_heads, head_dim)"), on,
                 attention_suspects(inputs), slack=slack)
    changed = [name for name in inputs if not torch.equal(copies[name], inputs[name])]
    if changed:
        raise verdict(_("that paged_attention only reads"), on, [
            _("your code changed {names}", names=", ".join(changed))])
    return on


@pytest.mark.core
@title(N_("paged_attention against a float64 reference (tables out of order, GQA)"))
def test_paged_attention_matches_reference(impl: Implementation) -> None:
    for seed, (b, h, kvh, d, size, lens) in enumerate([
            (3, 4, 2, 8, 4, [5, 9, 4]), (2, 2, 2, 4, 3, [7, 1]), (4, 6, 2, 4, 2, [3, 8, 2, 5]),
            (2, 4, 1, 8, 5, [12, 6])]):
        check_attention(impl, attention_inputs(b, h, kvh, d, size, lens, seed=10 * seed + 3))


@pytest.mark.core
@title(N_("paged_attention in float64, int32 tables"))
def test_paged_attention_float64_and_int32_tables(impl: Implementation) -> None:
    check_attention(impl, attention_inputs(3, 4, 2, 8, 4, [6, 11, 3], seed=51,
                                           dtype=torch.float64))
    check_attention(impl, attention_inputs(2, 4, 4, 4, 4, [9, 5], seed=57,
                                           index_dtype=torch.int32))


@pytest.mark.core
@title(N_("paged_attention within its memory rule"))
def test_paged_attention_memory(impl: Implementation) -> None:
    b, h, kvh, d, size, lens = 6, 4, 2, 8, 4, [13, 5, 9, 16, 3, 7]
    inputs = attention_inputs(b, h, kvh, d, size, lens, seed=77, num_blocks=64)
    recorder = CreatedTensors()
    on = check_attention(impl, inputs, recorder)
    limit = h * d * size * math.ceil(max(lens) / size)
    numel, shape, op = recorder.largest or (0, (), "")
    if numel <= limit:
        return
    raise verdict(_("the size of every tensor paged_attention creates"), on, [
        _("your code created a tensor of shape {shape} ({count} elements, by {op})",
          shape=shape, count=f"{numel:,}", op=op),
        _("the limit is num_heads · head_dim · block_size · ceil(L_max / block_size) = "
          "{limit} elements: one sequence's keys, in whole blocks, for every query head",
          limit=f"{limit:,}"),
        _("gather one sequence's blocks at a time (k_cache[table]); never all sequences into "
          "one padded batch, nor a copy or cast of the whole pool"),
    ], "dense-batch-gather")


@pytest.mark.core
@title(N_("keys and values live in the pools only"))
def test_keys_and_values_live_in_the_pools(impl: Implementation) -> None:
    scenario = INTERLEAVED
    on = describe_inputs(cache=scenario.describe())
    cache, error = learner_cache(impl, scenario, on)
    ops = [op for op in scenario.ops if op[0] != "free"]
    run(Scenario(*scenario.args(), ops, scenario.dtype), cache, error, learner_call(impl, on))
    pools = {pool.untyped_storage().data_ptr() for pool in (getattr(cache, "k_cache", None),
                                                            getattr(cache, "v_cache", None))
             if isinstance(pool, Tensor)}
    # A view of a pool is the pool (same storage); any other floating-point storage is a copy.
    extra = [kept for kept in kept_storages(cache, "cache")
             if kept.floating and kept.data_ptr not in pools]
    if extra:
        raise verdict(_("the tensors the cache keeps"), on, [
            _("floating-point tensors other than k_cache and v_cache: {paths}",
              paths=", ".join(f"{kept.path} {kept.shape}" for kept in extra[:4]))],
            "kv-stored-outside-pool")


@pytest.mark.core
@title(N_("a decode loop with forks and frees equals dense attention"))
def test_decode_loop_equals_dense_attention(impl: Implementation) -> None:
    num_blocks, size, kvh, h, d = 32, 4, 2, 4, 8
    on = describe_inputs(cache=f"PagedKVCache({num_blocks}, {size}, {kvh}, {d})", num_heads=h)
    cache = impl.call(impl.attr("PagedKVCache"), num_blocks, size, kvh, d,
                      what="PagedKVCache(...)", on=on)
    attend = impl.attr("paged_attention")
    keys: dict[int, tuple[Tensor, Tensor]] = {}
    ids: dict[int, Any] = {}
    for name, prompt in ((0, 5), (1, 3)):
        ids[name] = impl.call(cache.new_sequence, what="new_sequence", on=on)
        k, v = new_rows(Scenario(0, size, kvh, d, []), 50 + name, prompt)
        impl.call(cache.append, ids[name], k.clone(), v.clone(), what="append", on=on)
        keys[name] = (k, v)
    for step in range(7):
        if step == 2:
            ids[2] = impl.call(cache.fork, ids[0], what="fork", on=on)
            keys[2] = keys[0]
        if step == 4:
            impl.call(cache.free, ids[1], what="free", on=on)
            del ids[1], keys[1]
        for name in sorted(ids):
            k, v = new_rows(Scenario(0, size, kvh, d, []), 100 + 10 * step + name, 1)
            impl.call(cache.append, ids[name], k.clone(), v.clone(), what="append", on=on)
            keys[name] = torch.cat([keys[name][0], k]), torch.cat([keys[name][1], v])
        names = sorted(ids)
        tables = [impl.call(cache.block_table, ids[n], what="block_table", on=on) for n in names]
        width = max(len(t) for t in tables)
        block_tables = torch.tensor([list(t) + [-1] * (width - len(t)) for t in tables])
        seq_lens = torch.tensor([len(keys[n][0]) for n in names])
        q = randn(len(names), h, d, seed=300 + step)
        got = impl.call(attend, q, cache.k_cache, cache.v_cache, block_tables, seq_lens,
                        what="paged_attention", on=on)
        want = torch.stack([sequence_attention(q[i], *keys[n])
                            for i, n in enumerate(names)]).to(q.dtype)
        expect_close(got, want, _("decode step {step}: the output against dense attention",
                                  step=step + 1), on)


# ------------------------------------------------------------------------- follow-ups

# Beam search on the cache: each step forks the beams kept and frees the ones dropped, so
# blocks are shared three and four ways, and forks of forks copy the same partial block.
BEAMS = Scenario(20, 4, 1, 2, [
    ("new", "p"), ("append", "p", 5), ("fork", "p", "a"), ("fork", "p", "b"), ("free", "p"),
    ("append", "a", 1), ("append", "b", 1), ("fork", "a", "a2"), ("fork", "a", "a3"),
    ("free", "b"), ("append", "a", 1), ("append", "a2", 1), ("append", "a3", 2),
    ("fork", "a3", "c"), ("free", "a"), ("append", "c", 1), ("append", "a3", 1),
    ("append", "a2", 3), ("free", "a3"), ("fork", "c", "d"), ("append", "d", 4), ("free", "c"),
    ("free", "a2"), ("free", "d"),
])


@pytest.mark.followup
@title(N_("block_size 1 and prefills of many blocks in one append"))
def test_block_size_one_and_long_prefills(impl: Implementation) -> None:
    check_scenario(impl, Scenario(12, 1, 1, 2, [
        ("new", "a"), ("append", "a", 3), ("fork", "a", "b"), ("append", "b", 2),
        ("append", "a", 1), ("free", "a"), ("append", "b", 7), ("append", "b", 1), ("free", "b"),
    ]), _("the cache after every call"))
    check_scenario(impl, Scenario(8, 8, 2, 2, [
        ("new", "a"), ("append", "a", 21), ("fork", "a", "b"), ("append", "b", 19),
        ("append", "a", 3), ("new", "c"), ("append", "c", 17), ("append", "a", 1), ("free", "b"),
        ("append", "c", 9), ("free", "a"), ("free", "c"),
    ]), _("the cache after every call"))


@pytest.mark.followup
@title(N_("beam search: forks of forks, beams freed as they drop out"))
def test_beam_search_forks_and_frees(impl: Implementation) -> None:
    check_scenario(impl, BEAMS, _("the cache after every call"))


@pytest.mark.followup
@title(N_("the pools are allocated once, never replaced"))
def test_pools_are_never_replaced(impl: Implementation) -> None:
    scenario = INTERLEAVED
    on = describe_inputs(cache=scenario.describe())
    cache, error = learner_cache(impl, scenario, on)
    before = {name: getattr(cache, name, None) for name in ("k_cache", "v_cache")}
    run(scenario, cache, error, learner_call(impl, on))
    replaced = [name for name, pool in before.items()
                if not isinstance(pool, Tensor) or getattr(cache, name, None) is not pool]
    if replaced:
        raise verdict(_("that k_cache and v_cache stay the tensors made in __init__"), on, [
            _("after the script, {names} is another object than the one __init__ made",
              names=", ".join(replaced)),
            _("write into the pools in place (k_cache[block, slot] = ...); never assign a new "
              "tensor to them: an engine hands their addresses to its kernels once")])


@pytest.mark.followup
@title(N_("paged_attention: lengths of 1 and of whole blocks, one sequence"))
def test_paged_attention_edge_lengths(impl: Implementation) -> None:
    check_attention(impl, attention_inputs(3, 4, 2, 4, 4, [4, 1, 8], seed=91))
    check_attention(impl, attention_inputs(1, 2, 1, 4, 3, [9], seed=93))
    check_attention(impl, attention_inputs(2, 8, 2, 4, 1, [3, 6], seed=95, dtype=torch.float64))
