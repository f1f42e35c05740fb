"""Kata 22's allocator scenarios: a script of operations run through the learner's cache
and through the twin (graders.paged_kv_cache.twin), and what is observed after each step.

Sequences are named in the script ("a", "b", ...); each implementation's ids are mapped to
the names, so id values are never graded. An observation is what the contract fixes and no
free-list policy changes: the outcome of the call, the free count, and per live sequence its
length, its table's length, whether the pools hold each position where the table says (bit
for bit) and whether keys_values returns its keys and values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from graders.core.inputs import randn
from graders.paged_kv_cache.twin import ALLOCATOR_MISTAKES, TwinCache, slug_of
from graders.paged_kv_cache.twin import OutOfBlocksError as TwinOutOfBlocks

# ("new", name) | ("append", name, t) | ("fork", parent, child) | ("free", name)
Op = tuple

# A step's outcome: "ok", "out-of-blocks", "error: <Type>", or SKIPPED when the sequence it
# names was never made (an earlier new_sequence or fork failed). Codes, compared as they are;
# checks.state_line words them in the learner's language.
SKIPPED = "skipped"


@dataclass
class Scenario:
    num_blocks: int
    block_size: int
    num_kv_heads: int
    head_dim: int
    ops: list[Op]
    dtype: torch.dtype = torch.float32

    def args(self) -> tuple:
        return self.num_blocks, self.block_size, self.num_kv_heads, self.head_dim

    def describe(self) -> str:
        return (f"PagedKVCache(num_blocks={self.num_blocks}, block_size={self.block_size}, "
                f"num_kv_heads={self.num_kv_heads}, head_dim={self.head_dim}, "
                f"dtype={self.dtype})")


def describe_op(op: Op) -> str:
    if op[0] == "new":
        return f"{op[1]} = new_sequence()"
    if op[0] == "append":
        return f"append({op[1]}, k, v) [t = {op[2]}]"  # code only: the same in every language
    if op[0] == "fork":
        return f"{op[2]} = fork({op[1]})"
    return f"free({op[1]})"


def new_rows(scenario: Scenario, step: int, t: int) -> tuple[Tensor, Tensor]:
    shape = (t, scenario.num_kv_heads, scenario.head_dim)
    return (randn(*shape, seed=1000 + 2 * step, dtype=scenario.dtype),
            randn(*shape, seed=1001 + 2 * step, dtype=scenario.dtype))


@dataclass
class Observation:
    outcome: str  # "ok", "out-of-blocks", "error: <Type>" or SKIPPED
    free: Any
    sequences: dict[str, tuple]  # name -> (seq_len, table length, placement, keys_values)
    detail: str = ""

    def key(self) -> tuple:
        return self.outcome, self.free, tuple(sorted(self.sequences.items()))


def _pool_state(cache: Any, ids: dict[str, Any], truth: dict[str, tuple[Tensor, Tensor]]
                ) -> dict[str, tuple]:
    state = {}
    for name, seq_id in ids.items():
        keys, values = truth[name]
        try:
            length, table = int(cache.seq_len(seq_id)), [int(b) for b in cache.block_table(seq_id)]
        except Exception as error:  # noqa: BLE001 (any failure is observed)
            state[name] = (f"error: {type(error).__name__}",)
            continue
        placed = "ok"
        try:
            size = cache.k_cache.size(1)
            for p in range(min(length, len(keys))):
                block, offset = table[p // size], p % size
                if not (torch.equal(cache.k_cache[block, offset], keys[p])
                        and torch.equal(cache.v_cache[block, offset], values[p])):
                    placed = f"wrong at {p}"
                    break
        except IndexError:
            placed = "table too short"
        except Exception as error:  # noqa: BLE001
            placed = f"error: {type(error).__name__}"
        try:
            got_k, got_v = cache.keys_values(seq_id)
            if tuple(got_k.shape) != tuple(keys.shape) or tuple(got_v.shape) != tuple(values.shape):
                read = f"shape {tuple(got_k.shape)}"
            elif torch.equal(got_k, keys) and torch.equal(got_v, values):
                read = "ok"
            else:
                read = "values"
        except Exception as error:  # noqa: BLE001
            read = f"error: {type(error).__name__}"
        state[name] = (length, len(table), placed, read)
    return state


def run(scenario: Scenario, cache: Any, out_of_blocks: type, call=None) -> list[Observation]:
    """Every step's observation of ``cache`` (the learner's or a twin) under the script.
    ``call(fn, *args)`` runs one learner call (the guard); it returns (outcome, result)."""
    call = call or _plain_call
    ids: dict[str, Any] = {}
    truth: dict[str, tuple[Tensor, Tensor]] = {}
    empty = torch.zeros(0, scenario.num_kv_heads, scenario.head_dim, dtype=scenario.dtype)
    trace = []
    for step, op in enumerate(scenario.ops):
        detail = ""
        if op[0] != "new" and op[1] not in ids:
            # An earlier step that should have made this sequence failed (the first
            # difference, reported there): nothing to call.
            outcome, result = SKIPPED, None
        elif op[0] == "new":
            outcome, result = call(cache.new_sequence, out_of_blocks)
            if outcome == "ok":
                ids[op[1]], truth[op[1]] = result, (empty, empty)
        elif op[0] == "append":
            k, v = new_rows(scenario, step, op[2])
            outcome, result = call(cache.append, out_of_blocks, ids[op[1]], k.clone(), v.clone())
            if outcome == "ok":
                old_k, old_v = truth[op[1]]
                truth[op[1]] = torch.cat([old_k, k]), torch.cat([old_v, v])
        elif op[0] == "fork":
            outcome, result = call(cache.fork, out_of_blocks, ids[op[1]])
            if outcome == "ok":
                ids[op[2]], truth[op[2]] = result, truth[op[1]]
        else:
            outcome, result = call(cache.free, out_of_blocks, ids[op[1]])
            if outcome == "ok":
                del ids[op[1]], truth[op[1]]
        if outcome.startswith("error"):
            detail = result
        try:
            free = int(cache.num_free_blocks())
        except Exception as error:  # noqa: BLE001
            free = f"error: {type(error).__name__}"
        trace.append(Observation(outcome, free, _pool_state(cache, ids, truth), detail))
    return trace


def _plain_call(fn, out_of_blocks, *args):
    try:
        return "ok", fn(*args)
    except out_of_blocks:
        return "out-of-blocks", None
    except Exception as error:  # noqa: BLE001
        return f"error: {type(error).__name__}", f"{type(error).__name__}: {error}"


def twin_trace(scenario: Scenario, mistake: str | None) -> list[Observation]:
    cache = TwinCache(*scenario.args(), dtype=scenario.dtype, mistake=mistake)
    return run(scenario, cache, TwinOutOfBlocks)


def first_difference(got: list[Observation], want: list[Observation]) -> int | None:
    for step, (a, b) in enumerate(zip(got, want)):
        if a.key() != b.key():
            return step
    return None


def _fields(observation: Observation, reference: Observation) -> set:
    """Which parts of ``observation`` differ from ``reference``: a coarse picture of a step."""
    diff = set()
    if observation.outcome != reference.outcome:
        diff.add(("outcome", observation.outcome.split(":")[0]))
    if observation.free != reference.free:
        diff.add(("free", "fewer" if isinstance(observation.free, int) and isinstance(
            reference.free, int) and observation.free < reference.free else "other"))
    for name, state in reference.sequences.items():
        mine = observation.sequences.get(name)
        if mine is None or len(mine) != len(state):
            diff.add(("sequence", "missing"))
            continue
        for i, (x, y) in enumerate(zip(mine, state)):
            if x != y:
                diff.add((i, str(x).split(" ")[0]))
    return diff


def name_mistake(scenario: Scenario, got: list[Observation], step: int,
                 want: list[Observation]) -> str | None:
    """The allocator mistake whose twin first differs at ``step`` as the learner does: for the
    most steps if one does, else at that step exactly, else in the same parts of the
    observation there. Switches of one slug (its variants) count as one mistake."""
    whole, exact, alike = [], set(), set()
    target = _fields(got[step], want[step])
    for switch in ALLOCATOR_MISTAKES:
        try:
            trace = twin_trace(scenario, switch)
        except Exception:  # noqa: BLE001 (the mistake cannot run this script)
            continue
        if first_difference(trace, want) != step:
            continue
        agree = first_difference(trace, got)
        whole.append((len(got) if agree is None else agree, slug_of(switch)))
        if trace[step].key() == got[step].key():
            exact.add(slug_of(switch))
        elif _fields(trace[step], want[step]) == target:
            alike.add(slug_of(switch))
    # The twin that follows the learner longest past the step, if only one mistake's does.
    longest = max((steps for steps, _slug in whole), default=0)
    whole = {slug for steps, slug in whole if steps == longest and steps > step + 1}
    for found in (whole, exact, alike):
        if len(found) == 1:
            return next(iter(found))
    return None


def expected_blocks(length: int, block_size: int) -> int:
    return math.ceil(length / block_size)
