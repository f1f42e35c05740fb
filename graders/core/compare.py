"""Compare a learner's tensors with the expected ones and explain any difference.

Tolerances follow the dtype: float64 is held to near machine precision, float32 to what
a different but sound order of operations gives, half types to their few digits.
"""

from __future__ import annotations

import math

from dataclasses import dataclass
from typing import Any, Callable, Collection, Sequence

import torch

from graders.core.i18n import _
from graders.core.mistakes import Suspect, identify
from graders.core.report import GradingFailure, describe_tensor, describe_value, verdict

# (rtol, atol) per dtype, for values of order 1.
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-7, 1e-9),
    torch.float32: (1e-4, 1e-5),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (5e-2, 5e-2),
}
# Gradients go through a longer chain of operations: allow a little more.
GRAD_SLACK = 10.0
# A mistake's reproduction is computed differently from the learner's code: match loosely.
MISTAKE_SLACK = 10.0


def tolerance(dtype: torch.dtype, slack: float = 1.0) -> tuple[float, float]:
    rtol, atol = TOLERANCES.get(dtype, TOLERANCES[torch.float32])
    return rtol * slack, atol * slack


def expect_tensor(value: Any, check: str, on: str) -> torch.Tensor:
    """Fail unless ``value`` is a tensor."""
    if not isinstance(value, torch.Tensor):
        raise verdict(check, on, [_("expected a torch.Tensor, got {value}", value=describe_value(value))])
    return value


def expect_tuple(value: Any, length: int, check: str, on: str, names: str) -> tuple:
    """Fail unless ``value`` is a tuple (or list) of ``length`` items, e.g. (output, weights)."""
    if not isinstance(value, (tuple, list)) or len(value) != length:
        raise verdict(check, on, [_("expected a tuple ({names}), got {value}", names=names,
                                           value=describe_value(value))])
    return tuple(value)


def expect_close(
    got: Any,
    expected: torch.Tensor,
    check: str,
    on: str,
    suspects: Sequence[Suspect] = (),
    slack: float = 1.0,
    mask: torch.Tensor | None = None,
) -> None:
    """Fail with a verdict unless ``got`` matches ``expected`` in type, shape, dtype and values.

    ``mask`` (bool, broadcastable to expected) restricts the value comparison to where it is
    True, e.g. to rows where PyTorch's reference is defined. On a mismatch every suspect is
    tried, and the first that reproduces ``got`` names the mistake.
    """
    rtol, atol = tolerance(expected.dtype, slack)
    m_rtol, m_atol = rtol * MISTAKE_SLACK, atol * MISTAKE_SLACK

    def fail(details: list[str]) -> GradingFailure:
        slug = identify(got, expected, suspects, m_rtol, m_atol)
        return verdict(check, on, details, slug)

    if not isinstance(got, torch.Tensor):
        raise fail([_("expected {value}", value=describe_tensor(expected)),
                    _("got      {value}", value=describe_value(got))])
    if got.shape != expected.shape:
        raise fail([
            _("expected shape {expected}, got shape {got}", expected=tuple(expected.shape),
              got=tuple(got.shape)),
        ])
    if got.dtype != expected.dtype:
        raise fail([_("expected dtype {expected}, got {got} (keep the input's dtype)",
                      expected=expected.dtype, got=got.dtype)])
    if got.device != expected.device:
        raise fail([_("expected device {expected}, got {got}", expected=expected.device,
                      got=got.device)])

    got64 = got.detach().double()
    exp64 = expected.detach().double()
    keep = (torch.ones_like(got64, dtype=torch.bool) if mask is None
            else torch.broadcast_to(mask.to(got.device), got.shape))
    nan_got, nan_exp = torch.isnan(got64), torch.isnan(exp64)
    inf_got, inf_exp = torch.isinf(got64), torch.isinf(exp64)
    bad = ~torch.isclose(got64, exp64, rtol=rtol, atol=atol, equal_nan=True) & keep
    if not bool(bad.any()):
        return

    def index(flat: int) -> tuple[int, ...]:
        return tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), got.shape))

    # The previews start just before the first difference, so that they show it.
    first = int(bad.flatten().nonzero()[0])
    start = max(0, first - 1)
    details = [_("expected {value}", value=describe_tensor(expected, start)),
               _("got      {value}", value=describe_tensor(got, start))]
    new_nan, new_inf = nan_got & ~nan_exp & keep, inf_got & ~inf_exp & keep
    if bool(new_nan.any()):
        details.append(_("got NaN in {count} place(s) where a number was expected, first at "
                         "index {index}", count=int(new_nan.sum()),
                         index=index(int(new_nan.flatten().nonzero()[0]))))
    elif bool(new_inf.any()):
        details.append(_("got inf in {count} place(s) where a finite number was expected, "
                         "first at index {index}", count=int(new_inf.sum()),
                         index=index(int(new_inf.flatten().nonzero()[0]))))
    else:
        # Only where the values disagree: matching -inf entries would give NaN differences.
        diff = (got64 - exp64).abs().nan_to_num(nan=float("inf"), posinf=float("inf"))
        diff = torch.where(bad, diff, torch.zeros_like(diff))
        worst = int(diff.flatten().argmax())
        numbers = dict(diff=f"{diff.max().item():.3g}", off=int(bad.sum()), total=int(keep.sum()),
                       rtol=f"{rtol:.0e}", atol=f"{atol:.0e}")
        if worst == first:
            details.append(_("first and largest difference at index {index} (abs diff {diff}); "
                             "{off} of {total} values off (rtol {rtol}, atol {atol})",
                             index=index(first), **numbers))
        else:
            details.append(_("first difference at index {index}, the largest at {largest} (abs "
                             "diff {diff}); {off} of {total} values off (rtol {rtol}, atol "
                             "{atol})", index=index(first), largest=index(worst), **numbers))
    failure = fail(details)
    failure.pictures = (sequence_pictures([_number(v) for v in exp64.flatten().tolist()],
                                          [_number(v) for v in got64.flatten().tolist()],
                                          bad.flatten().tolist(), of=check)
                        if got.dim() <= 1 and got.numel() <= SEQUENCE_MAX_LENGTH
                        else matrix_pictures(exp64, got64, index(first), of=check))
    raise failure


SEQUENCE_MAX_LENGTH = 64  # longer vectors get no diff (the verdict's preview shows them)


def _number(value: float) -> str:
    """A vector's entry as the diff shows it: integers whole, other values to 6 digits."""
    return str(int(value)) if math.isfinite(value) and value == int(value) else f"{value:.6g}"


def sequence_pictures(expected: Sequence, got: Sequence, differs: Sequence[bool] | None = None,
                      of: str = "") -> dict:
    """Two short sequences — token ids, a vector's entries, ranked hypotheses, an integer —
    for `kata serve`'s expected-vs-got diff: ``{"kind": "sequence", "of", "expected", "got",
    "differs"}``, entries as text. ``differs[i]``: whether entry i is off (by default: its
    text differs, or only one side has it)."""
    expected, got = [str(v) for v in expected], [str(v) for v in got]
    if differs is None:
        differs = [i >= len(expected) or i >= len(got) or expected[i] != got[i]
                   for i in range(max(len(expected), len(got)))]
    return {"kind": "sequence", "of": of, "expected": expected, "got": got,
            "differs": [bool(d) for d in differs]}


PICTURE_MAX_SIDE = 16  # larger matrices are not drawn (a heatmap of them says little)


def matrix_pictures(expected: torch.Tensor, got: torch.Tensor, first: tuple[int, ...],
                    of: str = "") -> dict | None:
    """The (n, m) matrices, expected and got, of the slice holding the first difference
    ``first`` (an index into tensors of shape (..., n, m), n and m at most 16), as lists of
    numbers ("-inf", "inf", "nan" as strings, for JSON); None for other shapes. ``of``: what
    the tensor is (the check's words, e.g. "the attention weights"), for the caption."""
    if expected.dim() < 2 or not all(2 <= side <= PICTURE_MAX_SIDE for side in expected.shape[-2:]):
        return None
    at = first[:-2]

    def rows(matrix: torch.Tensor) -> list[list]:
        return [[v if math.isfinite(v) else str(v) for v in row] for row in matrix[at].tolist()]

    return {"at": list(at), "of": of, "expected": rows(expected), "got": rows(got)}


# Dropout as near to 1 as keeps hand-written dropout's 1 / (1 - p) finite: in training mode
# it zeroes every element it acts on (a kept one among these few thousand is a 1e-5 chance).
NEARLY_ONE = 1 - 1e-9


def expect_branches_dropped(
    got: Any,
    expected: torch.Tensor,
    check: str,
    on: str,
    advice: str,
    leaks: Sequence[tuple[str, Callable[[], torch.Tensor]]] = (),
) -> None:
    """:func:`expect_close` for a layer run in training mode with dropout = NEARLY_ONE, where
    every residual branch is dropped. On a mismatch the verdict ends with the sentence of the
    one leak that reproduces ``got`` (each leak: that sentence, and the output with that
    branch's dropout never applied; several predictions may share a sentence), else with
    ``advice``."""
    try:
        expect_close(got, expected, check, on)
    except GradingFailure as failure:
        rtol, atol = tolerance(expected.dtype, MISTAKE_SLACK)
        leaked = identify(got, expected, [Suspect(text, predict) for text, predict in leaks],
                          rtol, atol)
        raise GradingFailure(str(failure) + "\n  " + (leaked or advice),
                             slug=failure.slug) from None


def expect_tracks_grad(outputs: dict[str, Any], check: str, on: str) -> None:
    """Fail unless every named learner output is part of the autograd graph.

    Call before backpropagating through learner outputs: autograd would otherwise raise
    its own error ("element 0 of tensors does not require grad") instead of a verdict.
    """
    for name, out in outputs.items():
        if isinstance(out, torch.Tensor) and not out.requires_grad:
            raise verdict(check, on, [
                _("{name} does not track gradients: is it detached, computed under "
                  "torch.no_grad(), or rebuilt with torch.tensor / .data / .item()?", name=name)])


def expect_grads_close(
    got: dict[str, torch.Tensor | None],
    expected: dict[str, torch.Tensor | None],
    check: str,
    on: str,
    suspects: Sequence[Suspect] = (),
    slack: float = 1.0,
) -> None:
    """Compare named gradients (inputs and parameters), each against PyTorch's; ``suspects``
    (see :func:`expect_close`) may name a mistake seen in any of them. ``slack`` widens the
    tolerance on top of the gradients' own :data:`GRAD_SLACK`."""
    for name, exp in expected.items():
        grad = got.get(name)
        if exp is None:
            continue
        what = _("{check}: gradient of {name}", check=check, name=name)
        if grad is None:
            raise verdict(
                what, on,
                [_("expected a gradient {value}, got None", value=describe_tensor(exp)),
                 _("is part of the computation detached, done under torch.no_grad(), or done "
                   "with .data / .item()?")],
            )
        expect_close(grad, exp, what, on, suspects, slack=GRAD_SLACK * slack)


def shape_mismatches(got: dict[str, tuple[int, ...]], expected: dict[str, tuple[int, ...]]
                     ) -> list[str]:
    """Verdict lines for a learner's parameters against the expected names and shapes
    ("missing: ...", "unexpected: ...", "q_proj.weight has shape ..., expected ..."); [] when
    they agree."""
    details = []
    if set(expected) - set(got):
        details.append(_("missing: {names}", names=", ".join(sorted(set(expected) - set(got)))))
    if set(got) - set(expected):
        details.append(_("unexpected: {names}", names=", ".join(sorted(set(got) - set(expected)))))
    details += [_("{name} has shape {got}, expected {expected}", name=name, got=got[name],
                  expected=shape)
                for name, shape in expected.items() if name in got and got[name] != shape]
    return details


@dataclass(frozen=True)
class StateDictDiff:
    """How a learner's state dict differs from PyTorch's twin's: keys it lacks, keys it has
    too many (but those ``ignored``), and tensors of the wrong shape."""

    missing: list[str]
    unexpected: list[str]
    resized: list[str]  # "key: yours (..), PyTorch's (..)"

    @classmethod
    def of(cls, theirs: dict, ours: dict, ignored: Collection[str] = ()) -> "StateDictDiff":
        return cls(
            missing=[k for k in ours if k not in theirs],
            unexpected=[k for k in theirs if k not in ours and k not in ignored],
            resized=[_("{key}: yours {yours}, PyTorch's {theirs}", key=k,
                       yours=tuple(theirs[k].shape), theirs=tuple(v.shape))
                     for k, v in ours.items() if k in theirs and theirs[k].shape != v.shape],
        )

    def __bool__(self) -> bool:
        return bool(self.missing or self.unexpected or self.resized)

    def lines(self, shown: int = 6) -> list[str]:
        """Verdict lines: at most ``shown`` missing and unexpected keys, three wrong shapes."""
        def some(names: list[str]) -> str:
            return ", ".join(names[:shown]) + (", ..." if len(names) > shown else "")

        details = []
        if self.missing:
            details.append(_("missing: {names}", names=some(self.missing)))
        if self.unexpected:
            details.append(_("unexpected: {names}", names=some(self.unexpected)))
        return details + [_("wrong shape {key}", key=r) for r in self.resized[:3]]


def lse_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype of a log-sum-exp returned beside attention (katas 14 and 19): float32 for
    float16/bfloat16 inputs, as FlashAttention returns it (the backward rebuilds P from
    it, and a half-precision lse makes P's rows sum to 1 ± 7 %); the input's own dtype for
    float32 and float64."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
