"""Grader for kata 26: the next-token loss (shift, ignore_index, label smoothing, z-loss,
num_items) and its chunked form, whose memory is recorded over the call and its backward.

Every value and gradient is compared with ``F.cross_entropy(..., reduction="sum")`` on the
shifted logits in float64 (the z-loss and the division added here), outside the learner's
calls; on a mismatch, :mod:`graders.cross_entropy.twin` computes what each catalogued mistake
gives on the same input, and the one that reproduces the learner's result is named.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

from graders.core.compare import expect_close, expect_grads_close, expect_tracks_grad
from graders.core.i18n import N_, _
from graders.core.implementation import Implementation
from graders.core.inputs import grads_of, randn
from graders.core.memory import LiveTensors
from graders.core.mistakes import Suspect
from graders.core.report import describe_inputs, describe_value, title, verdict
from graders.cross_entropy import twin

__all__ = [
    "test_shift_float64",
    "test_shift_float32",
    "test_ignored_and_last_positions",
    "test_large_logits",
    "test_half_precision_logits",
    "test_num_items",
    "test_empty_micro_batch",
    "test_label_smoothing",
    "test_z_loss",
    "test_chunked_value_and_gradients",
    "test_chunked_memory",
]

HALF = (torch.float16, torch.bfloat16)
# The mistakes every plain input can show (the others need an option, huge logits, half
# precision or an empty micro-batch to differ from the right answer).
PLAIN = ("not-shifted", "wrong-way", "ignore-counted", "mean-over-shifted", "mean-over-all")
SMOOTHING = PLAIN + ("smoothing-others", "smoothing-no-keep", "smoothing-sum")
Z_LOSS = PLAIN + ("z-not-squared", "z-max", "z-ignored", "z-ignored-mean")
# The memory rule's input: 64 chunks of 8 targets, so the full logits are 5.3x the bound.
MEMORY_SHAPE = dict(b=2, n=257, d=24, vocab=256, chunk_size=8)
MEMORY_FACTOR = 12


@dataclasses.dataclass(frozen=True)
class Case:
    """One graded input: logits (b, n, V) and unshifted labels (b, n) with ignored targets."""

    logits: Tensor
    labels: Tensor
    options: dict

    def on(self) -> str:
        shown = {k: v for k, v in self.options.items() if v is not None}
        if isinstance(shown.get("num_items"), Tensor):
            shown["num_items"] = f"tensor({int(shown['num_items'])})"
        text = describe_inputs(logits=self.logits, labels=self.labels)
        counted = int((self.labels[:, 1:] != self.ignore_index).sum())
        extra = "".join(f", {k}={v}" for k, v in shown.items())
        return text + _(", {counted} counted targets", counted=counted) + extra

    @property
    def ignore_index(self) -> int:
        return self.options.get("ignore_index", -100)


def labels_of(b: int, n: int, vocab: int, seed: int, pad_from: tuple[int, ...],
              ignored: tuple[tuple[int, int], ...] = (), ignore_index: int = -100) -> Tensor:
    """Random targets with row i padded from pad_from[i] on and ``ignored`` (row, t) mid-row."""
    labels = torch.randint(0, vocab, (b, n), generator=torch.Generator().manual_seed(seed))
    for row, start in enumerate(pad_from):
        labels[row, start:] = ignore_index
    for row, t in ignored:
        labels[row, t] = ignore_index
    return labels


def case(b: int, n: int, vocab: int, seed: int, dtype: torch.dtype, pad_from: tuple[int, ...],
         ignored: tuple[tuple[int, int], ...] = (), scale: float = 1.0, offset: float = 0.0,
         **options: Any) -> Case:
    ignore_index = options.get("ignore_index", -100)
    logits = (randn(b, n, vocab, seed=seed, dtype=torch.float64) * scale + offset).to(dtype)
    return Case(logits, labels_of(b, n, vocab, seed + 1, pad_from, ignored, ignore_index), options)


def reference(logits: Tensor, labels: Tensor, ignore_index: int = -100,
              label_smoothing: float = 0.0, z_loss: float = 0.0,
              num_items: int | Tensor | None = None) -> Tensor:
    """The contract's loss through F.cross_entropy, in float64 whatever the logits' dtype."""
    vocab = logits.size(-1)
    x = logits[:, :-1].reshape(-1, vocab).double()
    y = labels[:, 1:].reshape(-1)
    total = F.cross_entropy(x, y, ignore_index=ignore_index, label_smoothing=label_smoothing,
                            reduction="sum")
    counted = y != ignore_index
    if z_loss:
        total = total + z_loss * torch.logsumexp(x[counted], dim=-1).square().sum()
    return total / (counted.sum().clamp_min(1) if num_items is None else num_items)


def result_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def gradient_scale(c: Case) -> float:
    """The gradients are compared for loss * (its divisor): entries of order 1, whatever the
    count (half precision's absolute tolerance would hide a gradient divided by 40)."""
    num_items = c.options.get("num_items")
    if num_items is not None:
        return float(num_items)
    return float(max(int((c.labels[:, 1:] != c.ignore_index).sum()), 1))


def expected_of(c: Case) -> tuple[Tensor, Tensor]:
    """(the loss in the result's dtype, the gradient of loss * scale in the logits' dtype)."""
    leaf = c.logits.detach().double().requires_grad_(True)
    loss = reference(leaf, c.labels, **c.options)
    (grad,) = torch.autograd.grad(loss * gradient_scale(c), leaf)
    return loss.detach().to(result_dtype(c.logits.dtype)), grad.to(c.logits.dtype)


def twin_value(c: Case, mistake: str) -> Tensor:
    logits = c.logits if mistake == "half" else c.logits.double()
    return twin.next_token_loss(logits, c.labels, mistake=mistake, **c.options).detach()


def twin_grad(c: Case, mistake: str) -> Tensor:
    leaf = (c.logits if mistake == "half" else c.logits.double()).detach().requires_grad_(True)
    loss = twin.next_token_loss(leaf, c.labels, mistake=mistake, **c.options)
    (grad,) = torch.autograd.grad(loss * gradient_scale(c), leaf)
    return grad


def non_finite(value: Any) -> bool:
    return (isinstance(value, Tensor) and value.is_floating_point()
            and not bool(torch.isfinite(value).all()))


def suspects_for(c: Case, switches: tuple[str, ...], of: str) -> list[Suspect]:
    """Suspects for the value (``of="value"``) or the gradient (``"grad"``)."""
    predict = twin_value if of == "value" else twin_grad
    found = [Suspect(twin.MISTAKE_OF[m], lambda m=m: predict(c, m)) for m in switches
             if m not in ("unstable", "half", "nan-empty")]
    if "unstable" in switches:  # overflow: inf or NaN where the right answer is finite
        found.append(Suspect("logsumexp-unstable", matches=non_finite))
    if "nan-empty" in switches:
        found.append(Suspect("nan-on-empty-batch",
                             matches=lambda got: isinstance(got, Tensor) and bool(got.isnan().any())))
    if "half" in switches:
        found.append(Suspect("no-float32-upcast", matches=lambda got: computed_in_half(c, got, of)))
    return found


def computed_in_half(c: Case, got: Any, of: str) -> bool:
    """A result in float16/bfloat16, or a float32 value four times nearer the twin that
    computes in half precision than the right one (the two differ by far more than float32's
    rounding on these logits of about 100)."""
    if not isinstance(got, Tensor) or not got.is_floating_point():
        return False
    if of == "value" and got.dtype in HALF:
        return True
    right = expected_of(c)[0 if of == "value" else 1].double()
    half = (twin_value(c, "half") if of == "value" else twin_grad(c, "half")).double()
    mine = got.detach().double()
    if mine.shape != right.shape:
        return False
    return bool((mine - half).abs().max() * 4 < (mine - right).abs().max())


def expect_loss_tensor(got: Any, check: str, on: str) -> None:
    """A Python number (from .item() or float()) is a clear type slip: say so plainly."""
    if isinstance(got, (int, float)) and not isinstance(got, bool):
        raise verdict(check, on, [
            _("expected a 0-d tensor, got a Python {kind} {value}", kind=type(got).__name__,
              value=describe_value(got)),
            _("keep the loss a tensor: .item() and float() cut it from the graph")])


def expect_loss_dtype(got: Any, expected: torch.dtype, c: Case, check: str, on: str) -> None:
    """The loss's dtype, in this kata's words: float32 at least, not the logits' own."""
    if isinstance(got, Tensor) and got.is_floating_point() and got.dtype != expected:
        half = got.dtype in HALF and c.logits.dtype in HALF
        raise verdict(check, on, [
            _("expected dtype {expected} for {logits} logits (float32 at least; float64 stays "
              "float64), got {got}", expected=str(expected)[6:], logits=str(c.logits.dtype)[6:],
              got=str(got.dtype)[6:])], "no-float32-upcast" if half else None)


def grade_loss(impl: Implementation, c: Case, check: str, switches: tuple[str, ...]) -> None:
    """next_token_loss on case ``c``: the value, then the gradient w.r.t. the logits."""
    on = c.on()
    leaf = c.logits.detach().clone().requires_grad_(True)
    got = impl.call(impl.attr("next_token_loss"), leaf, c.labels.clone(), **c.options,
                    what="next_token_loss", on=on)
    expect_loss_tensor(got, check, on)
    value, grad = expected_of(c)
    expect_loss_dtype(got, value.dtype, c, check, on)
    expect_close(got, value, check, on, suspects_for(c, switches, "value"))
    expect_tracks_grad({_("the loss"): got}, check, on)
    got_grads = grads_of(got * gradient_scale(c), {"logits": leaf}, on)
    slack = 0.1 if c.logits.dtype in HALF else 1.0  # half's own tolerance is loose enough
    expect_grads_close(got_grads, {"logits": grad}, check, on,
                       suspects_for(c, switches, "grad"), slack=slack)


def plain_cases(dtype: torch.dtype) -> list[Case]:
    return [
        case(2, 6, 11, 1, dtype, pad_from=(4, 6), ignored=((1, 2),)),
        case(3, 5, 7, 3, dtype, pad_from=(5, 3, 2), ignored=((0, 2),)),
        case(2, 7, 9, 5, dtype, pad_from=(5, 7), ignored=((1, 3),), ignore_index=-1),
    ]


# ------------------------------------------------------------------------------ core

@pytest.mark.core
@title(N_("next_token_loss against F.cross_entropy on the shifted logits, float64"))
def test_shift_float64(impl: Implementation) -> None:
    for c in plain_cases(torch.float64):
        grade_loss(impl, c, _("next_token_loss(logits, labels)"), PLAIN)


@pytest.mark.core
@title(N_("next_token_loss, float32 logits: a float32 loss"))
def test_shift_float32(impl: Implementation) -> None:
    for c in plain_cases(torch.float32):
        grade_loss(impl, c, _("next_token_loss(logits, labels)"), PLAIN)


def with_huge_unscored_logits(c: Case, seed: int) -> Case:
    """``c`` with the logits of every position that predicts nothing counted (an ignored
    target, or the last position) replaced by values of magnitude 1e4 and more (up to ~5e4)."""
    logits = c.logits.clone()
    unscored = torch.ones(c.labels.shape, dtype=torch.bool)
    unscored[:, :-1] = c.labels[:, 1:] == c.ignore_index
    huge = randn(*logits.shape, seed=seed, dtype=torch.float64).sign() * 1e4
    huge = huge * (1 + randn(*logits.shape, seed=seed + 1, dtype=torch.float64).abs())
    logits[unscored] = huge.to(logits.dtype)[unscored]
    return dataclasses.replace(c, logits=logits)


@pytest.mark.core
@title(N_("the logits of ignored and last positions (1e4 and more) change nothing, get zero gradient"))
def test_ignored_and_last_positions(impl: Implementation) -> None:
    for i, dtype in enumerate((torch.float64, torch.float32)):
        for c in plain_cases(dtype)[:2]:
            huge = with_huge_unscored_logits(c, seed=20 + i)
            grade_loss(impl, huge, _("next_token_loss with logits of 1e4 and more where "
                                     "nothing is scored"), PLAIN + ("unstable",))


@pytest.mark.core
@title(N_("logits of magnitude 1e4, float32: a finite loss, the right one"))
def test_large_logits(impl: Implementation) -> None:
    for c in (case(2, 5, 13, 31, torch.float32, pad_from=(4, 5), ignored=((1, 1),), scale=1e4),
              case(3, 4, 6, 33, torch.float32, pad_from=(4, 3, 2), scale=3e4, offset=5e3)):
        grade_loss(impl, c, _("next_token_loss with logits of magnitude 1e4"),
                   PLAIN + ("unstable",))


@pytest.mark.core
@title(N_("float16 and bfloat16 logits: computed in float32, a float32 loss"))
def test_half_precision_logits(impl: Implementation) -> None:
    for seed, dtype in ((41, torch.float16), (43, torch.bfloat16)):
        c = case(2, 6, 64, seed, dtype, pad_from=(5, 6), ignored=((1, 2),), scale=3.0,
                 offset=100.0)
        grade_loss(impl, c, _("next_token_loss with {dtype} logits", dtype=str(dtype)[6:]),
                   PLAIN + ("half",))


@pytest.mark.core
@title(N_("num_items: two micro-batches divided by their total count (int and 0-d tensor)"))
def test_num_items(impl: Implementation) -> None:
    first = case(2, 6, 11, 51, torch.float64, pad_from=(3, 6), ignored=((1, 2),))
    second = case(2, 5, 11, 53, torch.float64, pad_from=(5, 2))
    total = sum(int((c.labels[:, 1:] != -100).sum()) for c in (first, second))
    for c, num_items in ((first, total), (second, torch.tensor(total))):
        c = dataclasses.replace(c, options={"num_items": num_items})
        grade_loss(impl, c, _("next_token_loss(..., num_items={total})", total=total),
                   PLAIN + ("no-num-items",))


@pytest.mark.core
@title(N_("no counted target (all ignored, or n = 1): a loss of 0 with zero gradients"))
def test_empty_micro_batch(impl: Implementation) -> None:
    empty = case(2, 4, 7, 61, torch.float32, pad_from=(0, 0))
    for c in (empty, dataclasses.replace(empty, options={"num_items": 9}),
              case(3, 1, 7, 63, torch.float32, pad_from=(1, 1, 1))):
        grade_loss(impl, c, _("next_token_loss with no counted target"), ("nan-empty",))


# ------------------------------------------------------------------------------ follow-ups

@pytest.mark.followup
@title(N_("label_smoothing: PyTorch's, the uniform share over all V classes"))
def test_label_smoothing(impl: Implementation) -> None:
    a, b, c = plain_cases(torch.float64)
    for graded in (dataclasses.replace(a, options={"label_smoothing": 0.1}),
                   dataclasses.replace(b, options={"label_smoothing": 0.3}),
                   dataclasses.replace(plain_cases(torch.float32)[2],
                                       options={**c.options, "label_smoothing": 0.1})):
        grade_loss(impl, graded, _("next_token_loss(..., label_smoothing={eps})",
                                   eps=graded.options["label_smoothing"]), SMOOTHING)


@pytest.mark.followup
@title(N_("z_loss: z_loss * logsumexp(logits)^2 per counted target (PaLM)"))
def test_z_loss(impl: Implementation) -> None:
    for graded in (case(2, 6, 11, 71, torch.float64, pad_from=(4, 6), ignored=((1, 2),),
                        offset=4.0, z_loss=1e-4),
                   case(3, 5, 7, 73, torch.float32, pad_from=(5, 3, 2), offset=3.0,
                        z_loss=0.05, label_smoothing=0.1)):
        grade_loss(impl, graded, _("next_token_loss(..., z_loss={z})",
                                   z=graded.options["z_loss"]), Z_LOSS)


def call_chunked(impl: Implementation, *args: Any, on: str, **kwargs: Any) -> Any:
    """chunked_next_token_loss under the guard, F.cross_entropy allowed (the kata forbids it
    in next_token_loss only): the implementation's kata is lent without its forbidden list."""
    kata = impl.kata
    impl.kata = dataclasses.replace(kata, forbidden=())
    try:
        return impl.call(impl.attr("chunked_next_token_loss"), *args, **kwargs,
                         what="chunked_next_token_loss", on=on)
    finally:
        impl.kata = kata


def chunked_inputs(b: int, n: int, d: int, vocab: int, seed: int, dtype: torch.dtype
                   ) -> tuple[Tensor, Tensor]:
    hidden = randn(b, n, d, seed=seed, dtype=torch.float64).to(dtype)
    weight = (randn(vocab, d, seed=seed + 1, dtype=torch.float64) / d ** 0.5 * 2).to(dtype)
    return hidden, weight


@pytest.mark.followup
@title(N_("chunked_next_token_loss: next_token_loss of hidden @ W.T, value and gradients"))
def test_chunked_value_and_gradients(impl: Implementation) -> None:
    graded = (
        (torch.float64, (2, 7, 5, 11), 4, dict(ignore_index=-100)),
        (torch.float64, (2, 7, 5, 11), 5, dict(label_smoothing=0.1, z_loss=1e-2, num_items=15)),
        (torch.float32, (3, 6, 8, 13), 4, dict(z_loss=1e-3)),
        (torch.float64, (2, 4, 6, 9), 100, dict(ignore_index=-1)),
    )
    for i, (dtype, (b, n, d, vocab), chunk_size, options) in enumerate(graded):
        hidden, weight = chunked_inputs(b, n, d, vocab, 81 + 2 * i, dtype)
        ignore_index = options.get("ignore_index", -100)
        labels = labels_of(b, n, vocab, 90 + i, pad_from=(n - 2,) + (n,) * (b - 1),
                           ignored=((b - 1, 2),), ignore_index=ignore_index)
        c = Case(hidden @ weight.T, labels, options)
        on = (describe_inputs(hidden=hidden, lm_head_weight=weight, labels=labels)
              + f", chunk_size={chunk_size}" + "".join(f", {k}={v}" for k, v in options.items()))
        h, w = (t.detach().clone().requires_grad_(True) for t in (hidden, weight))
        got = call_chunked(impl, h, w, labels.clone(), chunk_size, **options, on=on)
        check = _("chunked_next_token_loss(hidden, lm_head_weight, labels, {chunk_size})",
                  chunk_size=chunk_size)
        expect_loss_tensor(got, check, on)
        switches = SMOOTHING + Z_LOSS[len(PLAIN):] + ("no-num-items",)
        expect_close(got, expected_of(c)[0], check, on, suspects_for(c, switches, "value"))
        expect_tracks_grad({_("the loss"): got}, check, on)
        got_grads = grads_of(got * gradient_scale(c), {"hidden": h, "lm_head_weight": w}, on)
        expect_grads_close(got_grads, chunked_grads(hidden, weight, c), check, on,
                           chunked_suspects(hidden, weight, c, switches))


def chunked_grads(hidden: Tensor, weight: Tensor, c: Case, mistake: str | None = None
                  ) -> dict[str, Tensor]:
    """The gradients w.r.t. hidden and the weight of (the reference, or a mistake) * scale."""
    h, w = (t.detach().double().requires_grad_(True) for t in (hidden, weight))
    logits = h @ w.T
    loss = (reference(logits, c.labels, **c.options) if mistake is None
            else twin.next_token_loss(logits, c.labels, mistake=mistake, **c.options))
    gh, gw = torch.autograd.grad(loss * gradient_scale(c), (h, w))
    return {"hidden": gh.to(hidden.dtype), "lm_head_weight": gw.to(weight.dtype)}


def chunked_suspects(hidden: Tensor, weight: Tensor, c: Case, switches: tuple[str, ...]
                     ) -> list[Suspect]:
    """Each mistake's gradient w.r.t. hidden or the weight, whichever expect_grads_close is
    comparing: both are tried (a shape mismatch rules the other out)."""
    found = []
    for m in switches:
        for name in ("hidden", "lm_head_weight"):
            found.append(Suspect(twin.MISTAKE_OF[m],
                                 lambda m=m, name=name: chunked_grads(hidden, weight, c, m)[name]))
    return found


@pytest.mark.followup
@title(N_("chunked_next_token_loss's memory: at most 12 * chunk_size * V elements alive at once"))
def test_chunked_memory(impl: Implementation) -> None:
    b, n, d, vocab, chunk_size = (MEMORY_SHAPE[k] for k in ("b", "n", "d", "vocab", "chunk_size"))
    hidden, weight = chunked_inputs(b, n, d, vocab, 101, torch.float32)
    labels = labels_of(b, n, vocab, 103, pad_from=(n - 40, n), ignored=((1, 7),))
    on = (describe_inputs(hidden=hidden, lm_head_weight=weight, labels=labels)
          + f", chunk_size={chunk_size}")
    h, w = (t.detach().clone().requires_grad_(True) for t in (hidden, weight))

    def hidden_or_weight_sized(t: Tensor) -> bool:
        """What the rule does not bound: tensors whose last axis is d (hidden, its gradient,
        copies, per-chunk gradients) and the weight's shape either way round."""
        return t.dim() > 0 and (t.shape[-1] == d or tuple(t.shape) in ((vocab, d), (d, vocab)))

    recorder = LiveTensors(ignored=hidden_or_weight_sized)
    with recorder:
        got = call_chunked(impl, h, w, labels.clone(), chunk_size, on=on)
        expect_loss_tensor(got, _("chunked_next_token_loss"), on)
        expect_tracks_grad({_("the loss"): got}, _("chunked_next_token_loss"), on)
        grads_of(got, {"hidden": h, "lm_head_weight": w}, on)
        del got
    bound = MEMORY_FACTOR * chunk_size * vocab
    if recorder.peak > bound:
        shape, op = recorder.peak_at
        targets = b * (n - 1)
        raise verdict(_("the memory of chunked_next_token_loss and its backward"), on, [
            _("at most {bound} elements may be alive at once (12 * chunk_size * V; the full "
              "logits are {full}), tensors of hidden's or the weight's size aside",
              bound=f"{bound:,}", full=f"{targets * vocab:,}"),
            _("{peak} were ({times} * chunk_size * V), when {op} created a {shape} tensor",
              peak=f"{recorder.peak:,}", times=f"{recorder.peak / (chunk_size * vocab):.1f}",
              op=op, shape=shape),
        ], "full-logits-materialised")
