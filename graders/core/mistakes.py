"""The mistake matcher: name a wrong answer by reproducing the mistake.

A grader describes each catalogued mistake it can recognise on the current input as a
:class:`Suspect`: either ``predict`` (computes what an implementation with that mistake
would return on the *same* inputs) or ``matches`` (a predicate on the learner's output,
for mistakes that are not one deterministic output, such as NaN rows or dropout noise).
A suspect is named only when the learner's output matches it *and* it is observably
different from the correct answer, so a correct implementation is never given a slug.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch


@dataclass(frozen=True)
class Suspect:
    slug: str
    predict: Callable[[], Any] | None = None
    matches: Callable[[Any], bool] | None = None


def _close(a: Any, b: Any, rtol: float, atol: float) -> bool:
    """Structural closeness: tensors (shape, NaN in the same places, values), tuples, ints."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape:
            return False
        a64 = a.detach().to("cpu", torch.float64)
        b64 = b.detach().to("cpu", torch.float64)
        return bool(torch.allclose(a64, b64, rtol=rtol, atol=atol, equal_nan=True))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_close(x, y, rtol, atol) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return False
    return a == b


def identify(
    got: Any,
    expected: Any,
    suspects: list[Suspect] | tuple[Suspect, ...],
    rtol: float,
    atol: float,
) -> str | None:
    """The slug of the mistake that explains ``got``, or None.

    ``predict`` suspects are skipped when their prediction equals ``expected`` (the mistake
    makes no difference on this input) or cannot be computed for it. When suspects with
    *different* slugs all explain ``got`` (e.g. with a single key, an inverted mask and a
    missing mask can look alike), the input cannot tell them apart and none is named.
    """
    explaining: list[str] = []
    for suspect in suspects:
        if suspect.slug in explaining:
            continue
        if suspect.predict is not None:
            try:
                predicted = suspect.predict()
            except Exception:  # the mistake is not defined for this input
                continue
            if predicted is None or _close(predicted, expected, rtol, atol):
                continue
            if _close(got, predicted, rtol, atol):
                explaining.append(suspect.slug)
        elif suspect.matches is not None:
            try:
                if suspect.matches(got):
                    explaining.append(suspect.slug)
            except Exception:
                continue
    return explaining[0] if len(explaining) == 1 else None
