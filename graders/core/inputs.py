"""Reproducible test inputs shared by the graders: tensors, masks, module weights, grads.

Everything is drawn from an explicit seed, so a learner sees the same failure twice.
"""

from __future__ import annotations

import random
from typing import Callable, Iterable, TypeVar

import torch
from torch import Tensor, nn

from graders.core.i18n import _
from graders.core.report import GradingFailure, verdict

Case = TypeVar("Case")
CASES_PER_CHECK = 12


def drawn_cases(draw: Callable[[random.Random], Case], count: int = CASES_PER_CHECK,
                seed: int = 0) -> list[Case]:
    """``count`` cases from ``draw(rng)``, the rng seeded: the same cases on every run.

    The random-shape checks loop over these and stop at the first failure, whose verdict
    names the input. (A fixed list rather than hypothesis: importing hypothesis alone costs
    about half an ``import torch``, and grading must stay fast.)
    """
    rng = random.Random(seed)
    return [draw(rng) for _case in range(count)]


def generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def randn(*shape: int, seed: int, dtype: torch.dtype = torch.float32,
          device: str | torch.device = "cpu", requires_grad: bool = False) -> Tensor:
    """Standard normal values, drawn on the CPU in float64 and then converted (same numbers
    for every dtype and device)."""
    t = torch.randn(*shape, generator=generator(seed), dtype=torch.float64)
    return t.to(device=device, dtype=dtype).requires_grad_(requires_grad)


def bool_mask(*shape: int, seed: int, device: str | torch.device = "cpu") -> Tensor:
    """A random bool mask (True = blocked), last dim = keys, where every row blocks at least
    one key and allows at least one (when it has two or more keys).

    So the mask matters on every row, inverting it never blocks a whole row, and PyTorch's
    modules stay defined.
    """
    g = generator(seed)
    mask = torch.rand(*shape, generator=g) < 0.4
    m = shape[-1]
    rows = mask.reshape(-1, m)
    for row in rows:
        order = torch.randperm(m, generator=g)
        row[order[0]] = False
        if m >= 2:
            row[order[1]] = True
    return rows.reshape(shape).to(device)


def float_mask(*shape: int, seed: int, dtype: torch.dtype = torch.float32,
               device: str | torch.device = "cpu") -> Tensor:
    """A float mask to add to the logits: moderate values, with some -inf (never a whole row)."""
    values = randn(*shape, seed=seed, dtype=dtype, device=device)
    blocked = bool_mask(*shape, seed=seed + 1, device=device)
    return values.masked_fill(blocked, float("-inf"))


def randomize_(module: nn.Module, seed: int, scale: float = 0.5) -> nn.Module:
    """Overwrite every floating parameter with scale * N(0, 1), biases included.

    PyTorch initialises several biases to zero; random ones make bias mistakes visible.
    LayerNorm weights get 1 + noise so that they stay well-conditioned.
    """
    g = generator(seed)
    with torch.no_grad():
        for name, param in module.named_parameters():
            noise = torch.randn(param.shape, generator=g, dtype=torch.float64) * scale
            if name.endswith("weight") and param.dim() == 1:  # norm gains
                noise = noise + 1.0
            param.copy_(noise.to(param.dtype))
    return module


def leaf_copies(*tensors: Tensor) -> tuple[Tensor, ...]:
    """Fresh leaf tensors with the same values that record gradients."""
    return tuple(t.detach().clone().requires_grad_(True) for t in tensors)


# What autograd says when a tensor it saved for the backward pass was edited in place.
_EDITED_IN_PLACE = "modified by an inplace operation"


def grads_of(loss: Tensor, named: dict[str, Tensor], on: str | None = None
             ) -> dict[str, Tensor | None]:
    """Gradients of ``loss`` with respect to each named tensor (None where unused).

    Every grader computes gradients of learner outputs here, so that an exception raised by
    the backward pass (an in-place edit of a tensor autograd saved, a custom autograd
    Function) is a verdict in the learner's terms, never a traceback through grader code.
    ``on`` describes the input, as in the verdicts.
    """
    tensors = list(named.values())
    try:
        grads = torch.autograd.grad(loss, tensors, allow_unused=True)
    except Exception as exc:  # the learner's graph may fail in any way while differentiated
        raise backward_failure(exc, on or _("the graded input")) from None
    return dict(zip(named.keys(), grads))


def backward_failure(exc: BaseException, on: str) -> GradingFailure:
    """The verdict for a backward pass through learner code that raised ``exc``."""
    first = (str(exc).strip().splitlines() or [""])[0]
    if _EDITED_IN_PLACE in first:
        details = [
            _("the forward pass ran, but backward() failed: your code edited a tensor in place "
              "after autograd had saved it for the gradients (e.g. weights.masked_fill_(...) on "
              "the softmax's output, or x += ... on a tensor used before)"),
            _("use the out-of-place form: weights = weights.masked_fill(...), x = x + ..."),
        ]
    else:
        if len(first) > 200:
            first = first[:197] + "..."
        details = [_("the forward pass ran, but backward() raised {error}: {message}",
                     error=type(exc).__name__, message=first),
                   _("is part of the computation not differentiable (a custom autograd Function, "
                     "an in-place edit, a conversion to numpy or Python numbers)?")]
    return verdict(_("the gradients (backward through your output)"), on, details)


def weighted_sum(outputs: Iterable[Tensor], seed: int) -> Tensor:
    """A scalar loss sum(out * r) with fixed random r per output, so every element of
    every output gets its own gradient."""
    total = 0
    for i, out in enumerate(outputs):
        r = randn(*out.shape, seed=seed + i, dtype=out.dtype, device=out.device)
        total = total + (out * r).sum()
    return total
