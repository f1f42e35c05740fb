"""Kata 22, a correct style: the softmax taken in float32 and cast back (Hugging Face's eager attention)."""

from __future__ import annotations

import math

import torch
from torch import Tensor


class OutOfBlocksError(RuntimeError):
    """An append needs more blocks than are free."""


class PagedKVCache:
    def __init__(self, num_blocks: int, block_size: int, num_kv_heads: int, head_dim: int,
                 dtype: torch.dtype = torch.float32, device=None) -> None:
        self.block_size = block_size
        shape = (num_blocks, block_size, num_kv_heads, head_dim)
        self.k_cache = torch.zeros(shape, dtype=dtype, device=device)
        self.v_cache = torch.zeros(shape, dtype=dtype, device=device)
        self.free_blocks = list(range(num_blocks))
        self.ref_counts = [0] * num_blocks
        self.tables: dict[int, list[int]] = {}
        self.lengths: dict[int, int] = {}
        self.next_id = 0

    def new_sequence(self) -> int:
        seq_id = self.next_id
        self.next_id += 1
        self.tables[seq_id] = []
        self.lengths[seq_id] = 0
        return seq_id

    def _take(self) -> int:
        block = self.free_blocks.pop(0)
        self.ref_counts[block] = 1
        return block

    def _release(self, block: int) -> None:
        self.ref_counts[block] -= 1
        if self.ref_counts[block] == 0:
            self.free_blocks.append(block)

    def append(self, seq_id: int, k: Tensor, v: Tensor) -> None:
        table, length, size = self.tables[seq_id], self.lengths[seq_id], self.block_size
        t = k.shape[0]
        filled = length % size
        copy = filled != 0 and self.ref_counts[table[-1]] > 1
        needed = math.ceil((length + t) / size) - math.ceil(length / size) + int(copy)
        if needed > len(self.free_blocks):
            raise OutOfBlocksError(f"need {needed} blocks, {len(self.free_blocks)} free")
        if copy:
            old, new = table[-1], self._take()
            self.k_cache[new, :filled] = self.k_cache[old, :filled]
            self.v_cache[new, :filled] = self.v_cache[old, :filled]
            table[-1] = new
            self._release(old)
        for i in range(t):
            p = length + i
            if p % size == 0:
                table.append(self._take())
            self.k_cache[table[p // size], p % size] = k[i]
            self.v_cache[table[p // size], p % size] = v[i]
        self.lengths[seq_id] = length + t

    def fork(self, seq_id: int) -> int:
        child = self.new_sequence()
        self.tables[child] = list(self.tables[seq_id])
        self.lengths[child] = self.lengths[seq_id]
        for block in self.tables[child]:
            self.ref_counts[block] += 1
        return child

    def free(self, seq_id: int) -> None:
        for block in self.tables.pop(seq_id):
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
        k = self.k_cache[table].flatten(0, 1)[:n]
        v = self.v_cache[table].flatten(0, 1)[:n]
        return k, v


def paged_attention(q: Tensor, k_cache: Tensor, v_cache: Tensor, block_tables: Tensor,
                    seq_lens: Tensor) -> Tensor:
    b, num_heads, head_dim = q.shape
    block_size, num_kv_heads = k_cache.shape[1], k_cache.shape[2]
    group = num_heads // num_kv_heads
    out = torch.empty_like(q)
    for i in range(b):
        n = int(seq_lens[i])
        blocks = block_tables[i, :math.ceil(n / block_size)].long()
        k = k_cache[blocks].flatten(0, 1)[:n].repeat_interleave(group, dim=1)  # (n, h, d)
        v = v_cache[blocks].flatten(0, 1)[:n].repeat_interleave(group, dim=1)
        scores = torch.einsum("hd,nhd->hn", q[i], k) / math.sqrt(head_dim)
        out[i] = torch.einsum("hn,nhd->hd", scores.softmax(dim=-1, dtype=torch.float32).to(q.dtype), v)
    return out
