"""Spare a grading run two of PyTorch's lazy imports, each as costly as a third of
``import torch``, that buy nothing when no model is traced or compiled.

- ``nn.MultiheadAttention`` checks a ``key_padding_mask``'s shape with ``torch._check_with``,
  which imports ``torch.fx.experimental.symbolic_shapes`` (and sympy) on its first call, to
  support symbolic shapes under tracing. Graded shapes are plain ints: the same check,
  written with ints, gives the same answer and the same error.
- Every ``TorchDispatchMode`` (``FlopCounterMode`` in kata 07 uses one) wraps its
  ``__torch_dispatch__`` so that TorchDynamo will not trace into it, and the wrapper imports
  ``torch._dynamo`` on its first call to build that guard. Nothing is compiled here, so the
  guard is the plain function: we hand it over in advance, where the wrapper caches it.
  The graders' own modes derive from :class:`GradingDispatchMode`, which does it for every
  subclass; a PyTorch mode is handed to :func:`skip_dynamo_import`.

Each shortcut checks that PyTorch still has the shape it expects and otherwise does nothing
(the run then simply pays for the import). The self-tests check both outcomes against
PyTorch's own behaviour.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode


def _check_key_padding_mask(key_padding_mask: torch.Tensor, src_len: int, bsz: int) -> None:
    """torch.nn.functional's shape check of a (batch, source length) key padding mask."""
    if key_padding_mask.shape[0] != bsz:
        raise AssertionError(
            f"Expected key_padded_mask.shape[0] to be {bsz}, but got {key_padding_mask.shape[0]}")
    if key_padding_mask.shape[1] != src_len:
        raise AssertionError(
            f"Expected key_padded_mask.shape[1] to be {src_len}, but got {key_padding_mask.shape[1]}")


def skip_symbolic_shapes_import() -> None:
    if callable(getattr(F, "_check_key_padding_mask", None)):
        F._check_key_padding_mask = _check_key_padding_mask


def skip_dynamo_import(mode_class: type) -> None:
    """For a TorchDispatchMode subclass, e.g. torch.utils.flop_counter._FlopCounterMode."""
    wrapper = vars(mode_class).get("__torch_dispatch__")
    raw = getattr(wrapper, "__wrapped__", None)
    if raw is not None and not hasattr(raw, "__dynamo_disable"):
        raw.__dynamo_disable = raw


class GradingDispatchMode(TorchDispatchMode):
    """The base of the graders' dispatch modes: each subclass, at any depth, has its
    ``__torch_dispatch__`` handed its plain function at once (skip_dynamo_import), so that
    a kata's own refinement of a shared mode does not pay for the import again."""

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)  # where PyTorch wraps __torch_dispatch__
        skip_dynamo_import(cls)
