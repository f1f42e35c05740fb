"""Whether the tensors learner code was given come back untouched.

A cache passed to a forward (katas 11 and 23) must stay as it was: another call may branch
from it, as beam search does. "Untouched" means the same shape, version counter and values,
and every byte of the storage behind each tensor, so a write into room beyond its visible
extent (a growable buffer's spare capacity, through an alias with a version counter of its
own) counts too.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import torch
from torch import Tensor

from graders.core.implementation import Implementation
from graders.core.report import GradingFailure

# Each tensor with its shape, version counter, values and the bytes of its storage.
Snapshot = list[tuple[Tensor, tuple, int, Tensor, Tensor]]


def storage_bytes(t: Tensor) -> Tensor:
    """Every byte of the storage behind ``t`` (uint8, 1-D), its visible extent or not: a
    view of the storage, which sees later writes through any alias."""
    return torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())


def snapshot(tensors: Iterable[Tensor]) -> Snapshot:
    return [(t, tuple(t.shape), t._version, t.detach().clone(), storage_bytes(t).clone())
            for t in tensors]


def visibly_changed(before: Snapshot) -> bool:
    """Whether a tensor's shape, version counter or values changed."""
    return any(tuple(t.shape) != shape or t._version != version
               or not torch.equal(torch.nan_to_num(t.detach()), torch.nan_to_num(copy))
               for t, shape, version, copy, _ in before)


def changed(before: Snapshot) -> bool:
    """Whether a tensor changed visibly or in any byte of the storage behind it."""
    return visibly_changed(before) or any(not torch.equal(storage_bytes(t), stored)
                                          for t, _, _, _, stored in before)


def call_leaving_untouched(impl: Implementation, fn: Callable[..., Any], *args: Any,
                           before: Snapshot, modified: Callable[[], GradingFailure],
                           what: str, on: str, **kwargs: Any) -> Any:
    """``impl.call(fn, *args, **kwargs)``, failing with ``modified()`` when a tensor of
    ``before`` changed: after the call, or during a call that then failed without naming a
    mistake (the change is the likelier cause)."""
    try:
        result = impl.call(fn, *args, what=what, on=on, **kwargs)
    except GradingFailure as failure:
        if failure.slug is None and changed(before):
            raise modified() from None
        raise
    if changed(before):
        raise modified()
    return result
