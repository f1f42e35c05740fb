"""Kata 22's reference with one switch per catalogued mistake (``mistake=slug``).

The grader runs the same scenario through the learner's cache and through this twin, once
correct and once per mistake, and compares what can be observed without knowing the
free-list policy or the ids: lengths, table lengths, the free count, each sequence's keys
and values, whether the pools hold every position where its table says, and which calls
raised. The first step where the learner differs from the correct twin names the mistake
whose twin differs in the same way there.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from graders.twins.attention import dense


class OutOfBlocksError(RuntimeError):
    pass


class TwinCache:
    """The reference allocator; ``mistake`` one of the allocator slugs or None."""

    def __init__(self, num_blocks: int, block_size: int, num_kv_heads: int, head_dim: int,
                 dtype: torch.dtype = torch.float32, mistake: str | None = None) -> None:
        self.block_size, self.mistake, self.num_blocks = block_size, mistake, num_blocks
        shape = (num_blocks, block_size, num_kv_heads, head_dim)
        self.k_cache = torch.zeros(shape, dtype=dtype)
        self.v_cache = torch.zeros(shape, dtype=dtype)
        self.free_blocks = list(range(num_blocks))
        self.ref_counts = [0] * num_blocks
        self.tables: dict[int, list[int]] = {}
        self.lengths: dict[int, int] = {}
        self.next_id = 0

    def new_sequence(self) -> int:
        seq_id, self.next_id = self.next_id, self.next_id + 1
        self.tables[seq_id], self.lengths[seq_id] = [], 0
        return seq_id

    def _take(self) -> int:
        if not self.free_blocks:
            if self.mistake in ("out-of-blocks-not-atomic/take-raises",
                                "out-of-blocks-not-atomic/cow-uncounted"):
                raise OutOfBlocksError("out of blocks")  # found mid-way, after changes
            raise IndexError("pop from empty list")
        block = self.free_blocks.pop(0)
        self.ref_counts[block] = 1
        return block

    def _release(self, block: int) -> None:
        self.ref_counts[block] -= 1
        if self.mistake == "free-shared-block" and block not in self.free_blocks:
            self.free_blocks.append(block)
            return
        if self.ref_counts[block] == 0:
            self.free_blocks.append(block)

    def append(self, seq_id: int, k: Tensor, v: Tensor) -> None:
        m, size = self.mistake, self.block_size
        table, length, t = self.tables[seq_id], self.lengths[seq_id], k.shape[0]
        filled = length % size
        shared = filled != 0 and self.ref_counts[table[-1]] > 1
        copy = shared and m != "cow-missing"
        needed = math.ceil((length + t) / size) - math.ceil(length / size) + int(copy)
        if m == "eager-allocation":
            needed = (length + t) // size + 1 - len(table)
        if m in ("out-of-blocks-unchecked/cow-uncounted", "out-of-blocks-not-atomic/cow-uncounted"):
            needed -= int(copy)  # the pre-check forgets the copy's block
        checked = m not in ("out-of-blocks-unchecked", "out-of-blocks-not-atomic",
                            "out-of-blocks-not-atomic/take-raises",
                            "out-of-blocks-not-atomic/cow-first")
        if checked and needed > len(self.free_blocks):
            raise OutOfBlocksError("out of blocks")
        if copy:
            old, new = table[-1], self._take()
            if m != "cow-copy-incomplete":
                self.k_cache[new, :filled] = self.k_cache[old, :filled]
                self.v_cache[new, :filled] = self.v_cache[old, :filled]
            table[-1] = new
            self._release(old)
        if m == "out-of-blocks-not-atomic/cow-first" and needed - int(copy) > len(self.free_blocks):
            raise OutOfBlocksError("out of blocks")  # checked after the copy
        for i in range(t):
            p = length + i
            if m == "out-of-blocks-not-atomic" and p % size == 0 and not self.free_blocks:
                self.lengths[seq_id] = p
                raise OutOfBlocksError("out of blocks")
            if m == "eager-allocation":
                while len(table) <= (p + 1) // size:
                    table.append(self._take())
            elif p % size == 0 and m != "no-allocation-when-full" or (
                    m == "no-allocation-when-full" and not table):
                table.append(self._take())
            if m == "slot-off-by-one":
                block, offset = table[p // size], (p + 1) % size
            elif m == "no-allocation-when-full":
                block, offset = table[-1], p % size
            else:
                block, offset = table[p // size], p % size
            self.k_cache[block, offset] = k[i]
            self.v_cache[block, offset] = v[i]
        self.lengths[seq_id] = length + t

    def fork(self, seq_id: int) -> int:
        if self.mistake == "fork-needs-free-block" and not self.free_blocks:
            raise OutOfBlocksError("no free block to fork into")  # before any change
        child = self.new_sequence()
        self.lengths[child] = self.lengths[seq_id]
        if self.mistake == "unneeded-copy":
            for block in self.tables[seq_id]:
                new = self._take()
                self.k_cache[new] = self.k_cache[block]
                self.v_cache[new] = self.v_cache[block]
                self.tables[child].append(new)
            return child
        self.tables[child] = list(self.tables[seq_id])
        for block in self.tables[child]:  # refcount-leak: one reference too many
            self.ref_counts[block] += 2 if self.mistake == "refcount-leak" else 1
        return child

    def free(self, seq_id: int) -> None:
        for block in self.tables.pop(seq_id):
            if self.mistake == "free-shared-block/free":  # counts ignored by free only
                self.ref_counts[block] = 0
                if block not in self.free_blocks:
                    self.free_blocks.append(block)
                continue
            self._release(block)
        del self.lengths[seq_id]

    def block_table(self, seq_id: int) -> list[int]:
        return list(self.tables[seq_id])

    def seq_len(self, seq_id: int) -> int:
        return self.lengths[seq_id]

    def num_free_blocks(self) -> int:
        return len(self.free_blocks)

    def keys_values(self, seq_id: int) -> tuple[Tensor, Tensor]:
        table, n = self.tables[seq_id], self.lengths[seq_id]
        if self.mistake == "block-order-wrong":
            table = sorted(table)
        if self.mistake == "stale-slots-read":
            n = len(table) * self.block_size
        return self.k_cache[table].flatten(0, 1)[:n], self.v_cache[table].flatten(0, 1)[:n]


# The allocator's switches: a slug, or "slug/variant" for another way to make that mistake
# (named by its slug). /free: free alone ignores the counts (copy-on-write drops its
# reference right); /cow-uncounted: the pre-check forgets the copy's block, and the empty
# free list then raises IndexError (unchecked) or OutOfBlocksError after the copy
# (not atomic); /take-raises: no pre-check, the empty free list raises OutOfBlocksError
# mid-way; /cow-first: the copy is made before the check.
ALLOCATOR_MISTAKES = (
    "slot-off-by-one", "no-allocation-when-full", "eager-allocation", "stale-slots-read",
    "block-order-wrong", "free-shared-block", "free-shared-block/free", "cow-missing",
    "cow-copy-incomplete", "unneeded-copy", "fork-needs-free-block", "refcount-leak", "out-of-blocks-unchecked",
    "out-of-blocks-unchecked/cow-uncounted", "out-of-blocks-not-atomic",
    "out-of-blocks-not-atomic/take-raises", "out-of-blocks-not-atomic/cow-uncounted",
    "out-of-blocks-not-atomic/cow-first",
)


def slug_of(switch: str) -> str:
    return switch.split("/")[0]


def paged_reference(q: Tensor, k_cache: Tensor, v_cache: Tensor, block_tables: Tensor,
                    seq_lens: Tensor, mistake: str | None = None) -> Tensor:
    """Decode attention of q (b, h, d) through the tables, in float64, cast to q's dtype;
    ``mistake`` one of ATTENTION_MISTAKES (a slug, or "slug/variant": /one-length reads
    max(seq_lens) positions of every sequence, its padding entries included; /keys and
    /values tile one of the two only)."""
    size, out = k_cache.size(1), []
    for i in range(q.size(0)):
        n = int(seq_lens[i])
        if mistake == "stale-slots-read/one-length":  # the longest length for every sequence
            n = int(seq_lens.max())
        blocks = block_tables[i, :math.ceil(n / size)].long()
        if mistake == "stale-slots-read":
            n = len(blocks) * size
        k = k_cache[blocks].flatten(0, 1)[:n]
        v = v_cache[blocks].flatten(0, 1)[:n]
        out.append(sequence_attention(q[i], k, v, 1.0 if mistake == "missing-scale" else None,
                                      TILED.get(mistake or "", "interleave")))
    return torch.stack(out).to(q.dtype)


# The kv-heads-tiled switches -> the kv_layout of twins.heads they stand for.
TILED = {"kv-heads-tiled": "tile", "kv-heads-tiled/keys": "tile-k",
         "kv-heads-tiled/values": "tile-v"}


def sequence_attention(q: Tensor, k: Tensor, v: Tensor, scale: float | None = None,
                       kv_layout: str = "interleave") -> Tensor:
    """One sequence's decode attention: q (h, d) over its keys and values k, v (n, kv_heads,
    d) as the cache lays them out, query head j reading kv head j // (h / kv_heads);
    (h, d) in float64."""
    group = q.size(0) // k.size(1)
    return dense(q[:, None], k.transpose(0, 1), v.transpose(0, 1), scale=scale, group=group,
                 kv_layout=kv_layout)[:, 0]


ATTENTION_MISTAKES = ("kv-heads-tiled", "kv-heads-tiled/keys", "kv-heads-tiled/values",
                      "missing-scale", "stale-slots-read", "stale-slots-read/one-length")
