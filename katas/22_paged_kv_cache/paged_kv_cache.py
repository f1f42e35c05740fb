"""Kata 22: a paged KV cache (vLLM's PagedAttention).

Read README.md in this folder, fill in the class and the function below, then run
    pytest katas/22_paged_kv_cache
"""

from __future__ import annotations

import torch
from torch import Tensor


class OutOfBlocksError(RuntimeError):
    """Raised when an append needs more blocks than are free (before anything changes)."""


class PagedKVCache:
    """Keys and values of many sequences in one pool of fixed-size blocks.

    k_cache, v_cache: (num_blocks, block_size, num_kv_heads, head_dim), allocated here,
    written in place, never replaced. Position p of a sequence with block table T lives at
    k_cache[T[p // block_size], p % block_size]. Bookkeeping: Python ints (or integer
    tensors) only.
    """

    def __init__(self, num_blocks: int, block_size: int, num_kv_heads: int, head_dim: int,
                 dtype: torch.dtype = torch.float32, device=None) -> None:
        raise NotImplementedError("see katas/22_paged_kv_cache/README.md")

    def new_sequence(self) -> int:
        """An empty sequence's id."""
        raise NotImplementedError

    def append(self, seq_id: int, k: Tensor, v: Tensor) -> None:
        """k, v: (t, num_kv_heads, head_dim), positions L ... L+t-1. Lazy allocation,
        copy-on-write on a shared partial last block, OutOfBlocksError before any change."""
        raise NotImplementedError

    def fork(self, seq_id: int) -> int:
        """A new sequence sharing every block of seq_id (reference counts + 1)."""
        raise NotImplementedError

    def free(self, seq_id: int) -> None:
        """Drop the sequence's references; blocks no one holds return to the free list."""
        raise NotImplementedError

    def block_table(self, seq_id: int) -> list[int]:
        """Physical block ids in logical order."""
        raise NotImplementedError

    def seq_len(self, seq_id: int) -> int:
        raise NotImplementedError

    def num_free_blocks(self) -> int:
        raise NotImplementedError

    def keys_values(self, seq_id: int) -> tuple[Tensor, Tensor]:
        """(k, v), each (seq_len, num_kv_heads, head_dim), in position order."""
        raise NotImplementedError


def paged_attention(q: Tensor, k_cache: Tensor, v_cache: Tensor, block_tables: Tensor,
                    seq_lens: Tensor) -> Tensor:
    """Decode attention through block tables.

    q: (b, num_heads, head_dim), one query per sequence. k_cache, v_cache: (num_blocks,
    block_size, num_kv_heads, head_dim). block_tables: (b, max_blocks) int64 or int32, padded
    past ceil(seq_lens[i] / block_size). seq_lens: (b,). Returns (b, num_heads, head_dim):
    softmax(q K_i^T / sqrt(head_dim)) V_i over the seq_lens[i] keys of sequence i, query head
    j reading kv head j // (num_heads // num_kv_heads). Reads only.
    """
    raise NotImplementedError("see katas/22_paged_kv_cache/README.md")
