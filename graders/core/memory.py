"""Memory, judged by behaviour: what a call allocates and what an object keeps alive.

:class:`CreatedTensors` records, while active, the largest tensor any operation creates
(views, which share their input's memory, aside): the graders of katas 14 and 18 hold a
learner's call under it (kata 19 too) to check that no (n, m) score matrix or mask is
ever built, within :func:`memory_limit`.
:class:`LiveTensors` records, while active, how many elements the tensors an operation created
hold *at once* (each counted until its storage is freed, the backward pass included): kata 26's
bound on a chunked loss, where what matters is not one tensor's size but how many chunks'
logits autograd keeps alive.
:func:`kept_storages` walks an object's attributes (through lists, tuples, dicts, deques
and plain objects) and lists every tensor storage it keeps alive, each storage once: the
bound on a cache's memory (kata 18).
"""

from __future__ import annotations

import types
import weakref
from collections import deque
from dataclasses import dataclass
from typing import Any

from torch import Tensor
from torch.utils._pytree import tree_leaves

from graders.core import torch_shortcuts


class CreatedTensors(torch_shortcuts.GradingDispatchMode):
    """While active, records the largest tensor any operation creates: factory functions,
    arithmetic, matmuls, copies. Views (slices, transposes, expands) are left out: they
    share their input's memory and allocate nothing."""

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


class LiveTensors(torch_shortcuts.GradingDispatchMode):
    """While active, counts the elements of the storages that operations create (views and
    in-place results, which reuse a storage, aside) until each is freed, and records the peak:
    ``peak`` elements, with ``peak_at`` the (shape, op) of the tensor that reached it.

    A storage stays counted while anything keeps it: a variable, or autograd, which saves
    tensors for the backward pass (``saved_tensors`` share the storage); it leaves the count
    when its last reference goes, seen by a weakref finalizer on the storage (PyTorch keeps a
    storage's Python object alive as long as the storage). Tensors created before the mode
    was entered (the inputs) are never counted. ``ignored(tensor)`` -> True leaves a created
    tensor out of the count (e.g. one of an input's size, which the rule does not bound).
    """

    def __init__(self, ignored=None) -> None:
        super().__init__()
        self.ignored = ignored or (lambda tensor: False)
        self.live: dict[tuple[int, int], int] = {}  # (data_ptr, nbytes) -> elements
        self.now = 0
        self.peak = 0
        self.peak_at: tuple[tuple[int, ...], str] | None = None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if not getattr(func, "is_view", False):
            for out in tree_leaves(result):
                if isinstance(out, Tensor) and out.device.type != "meta":
                    self._created(out, str(func.overloadpacket))
        return result

    def _created(self, tensor: Tensor, op: str) -> None:
        storage = tensor.untyped_storage()
        key = (storage.data_ptr(), storage.nbytes())
        if not storage.nbytes() or key in self.live or self.ignored(tensor):
            return  # empty, an in-place or out= result already counted, or left out
        elements = storage.nbytes() // tensor.element_size()
        self.live[key] = elements
        self.now += elements
        if self.now > self.peak:
            self.peak, self.peak_at = self.now, (tuple(tensor.shape), op)
        weakref.finalize(storage, self._freed, key).atexit = False

    def _freed(self, key: tuple[int, int]) -> None:
        self.now -= self.live.pop(key, 0)


def memory_limit(q: Tensor, k: Tensor, block_size: int) -> int:
    """The tiled kernels' bound for q (..., n, d), k (..., m, d): max(n, m) * max(block_size,
    d) elements per (batch, head), times the number of (batch, head) pairs."""
    per_head = max(q.size(-2), k.size(-2)) * max(block_size, q.size(-1))
    return q[..., 0, 0].numel() * per_head


def is_score_sized(shape: tuple[int, ...], numel: int, q: Tensor, k: Tensor) -> bool:
    """Whether a created tensor is an (n, m) matrix (scores, probabilities, a mask) or as
    large as all of them: what ``full-score-matrix`` names. A smaller excess (say, every
    block's partial output kept) breaks the rule without being one."""
    n, m = q.size(-2), k.size(-2)
    return tuple(shape[-2:]) in ((n, m), (m, n)) or numel >= q[..., 0, 0].numel() * n * m


# What a walk does not enter: code, classes and modules hold no state of the object.
NOT_WALKED = (str, bytes, type, types.ModuleType, types.FunctionType, types.MethodType,
              types.BuiltinFunctionType)


@dataclass(frozen=True)
class KeptStorage:
    path: str  # how the object reaches it, e.g. "self.keys[0]"
    shape: tuple[int, ...]  # the shape of the (first) tensor seen on this storage
    elements: int  # the storage's size in elements of that tensor's dtype
    floating: bool  # whether that tensor holds floating-point (or complex) numbers
    data_ptr: int  # the storage's address: tells a view of a known tensor without re-reaching it


def kept_storages(obj: Any, name: str = "self", max_depth: int = 6) -> list[KeptStorage]:
    """Every tensor storage reachable from ``obj``'s attributes, each counted once."""
    seen_objects: set[int] = set()
    storages: dict[tuple[str, int], KeptStorage] = {}

    def visit(value: Any, path: str, depth: int) -> None:
        if isinstance(value, Tensor):
            storage = value.untyped_storage()
            key = (str(value.device), storage.data_ptr())
            if storage.nbytes() and key not in storages:
                storages[key] = KeptStorage(path, tuple(value.shape),
                                            storage.nbytes() // value.element_size(),
                                            value.is_floating_point() or value.is_complex(),
                                            storage.data_ptr())
            return
        if depth > max_depth or id(value) in seen_objects or isinstance(value, NOT_WALKED):
            return
        seen_objects.add(id(value))
        if isinstance(value, dict):
            for key, item in value.items():
                visit(item, f"{path}[{key!r}]", depth + 1)
        elif isinstance(value, (list, tuple, deque)):
            for i, item in enumerate(value):
                visit(item, f"{path}[{i}]", depth + 1)
        else:
            attributes = dict(getattr(value, "__dict__", None) or {})
            for slot in getattr(type(value), "__slots__", ()):
                if hasattr(value, slot):
                    attributes[slot] = getattr(value, slot)
            for key, item in attributes.items():
                visit(item, f"{path}.{key}", depth + 1)

    visit(obj, name, 0)
    return list(storages.values())
