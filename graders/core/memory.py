"""The tiled memory rule, checked by behaviour (katas 14 and 19).

While a learner's function runs, :class:`CreatedTensors` (a ``TorchDispatchMode``) records
the largest tensor any operation creates: factory functions, arithmetic, matmuls, copies.
Views (slices, transposes, expands) are left out: they share their input's memory and
allocate nothing. A tiled kernel never holds more than ``max(n, m) * max(block_size, d)``
elements per (batch, head) (:func:`memory_limit`), so an ``(n, m)`` score matrix, mask or
probability matrix can never exist, while copies of q, k, v and per-tile matmuls stay
within it.
"""

from __future__ import annotations

from torch import Tensor
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from graders.core import torch_shortcuts


class CreatedTensors(TorchDispatchMode):
    """While active, records the largest tensor any operation creates, as ``largest`` =
    (numel, shape, the operation's name), None when nothing was created."""

    def __init__(self) -> None:
        super().__init__()
        self.largest: tuple[int, tuple[int, ...], str] | None = None  # (numel, shape, op)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if not getattr(func, "is_view", False):
            for out in tree_leaves(result):
                if isinstance(out, Tensor) and (self.largest is None or out.numel() > self.largest[0]):
                    self.largest = (out.numel(), tuple(out.shape), str(func.overloadpacket))
        return result


torch_shortcuts.skip_dynamo_import(CreatedTensors)


def memory_limit(q: Tensor, k: Tensor, block_size: int) -> int:
    """The contract's bound for q (..., n, d), k (..., m, d): max(n, m) * max(block_size, d)
    elements per (batch, head), times the number of (batch, head) pairs."""
    per_head = max(q.size(-2), k.size(-2)) * max(block_size, q.size(-1))
    return q[..., 0, 0].numel() * per_head


def is_score_sized(shape: tuple[int, ...], numel: int, q: Tensor, k: Tensor) -> bool:
    """Whether a created tensor is an (n, m) matrix (scores, probabilities, a mask) or as
    large as all of them: what ``full-score-matrix`` names. A smaller excess (say, every
    block's partial output kept) breaks the rule without being one."""
    n, m = q.size(-2), k.size(-2)
    return tuple(shape[-2:]) in ((n, m), (m, n)) or numel >= q[..., 0, 0].numel() * n * m
