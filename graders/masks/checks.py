"""Grader for kata 04: ``causal_mask``, ``padding_mask`` and ``merge_masks``.

Expected numbers come from PyTorch: ``nn.Transformer.generate_square_subsequent_mask``
for the causal mask, and ``nn.MultiheadAttention`` given the original key_padding_mask
and attn_mask for the merged mask. The merged mask is judged by what it does: a
functional multi-head attention in PyTorch's (b*h, n, head_dim) layout, with the same
weights as a randomized ``nn.MultiheadAttention``, adds the learner's mask to its logits;
its weights and output must equal the module's. The mask's values are checked as well
(0 where allowed, -inf where blocked, a float attn_mask's values added).

:func:`merge_reference`, :func:`causal_reference` and :func:`padding_reference` carry one
switch per catalogued mistake; the grader flips a switch to recognise that mistake.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

from graders.core.i18n import N_, _
from graders.twins.reference import additive_mask, attend
from graders.core.compare import (
    MISTAKE_SLACK,
    expect_close,
    expect_grads_close,
    expect_tensor,
    matrix_pictures,
    tolerance,
)
from graders.core.implementation import Implementation
from graders.core.inputs import (
    drawn_cases,
    bool_mask,
    grads_of,
    leaf_copies,
    randn,
    randomize_,
    weighted_sum,
)
from graders.core.mistakes import Suspect, identify
from graders.core.report import describe_inputs, describe_tensor, describe_value, verdict, title

__all__ = [
    "test_causal_mask",
    "test_padding_mask",
    "test_merge_no_masks",
    "test_merge_padding_only",
    "test_merge_attn_mask_only",
    "test_merge_both_masks",
    "test_merge_random_shapes",
    "test_merge_dtypes",
    "test_merge_float_mask_gradient",
    "test_decoder_self_attention",
    "test_masks_on_cuda",
]

NEG_INF = float("-inf")
# A finite value at or below this where -inf is expected is a "large negative number"
# stand-in for -inf (-1e9, finfo.min, ...): attention barely notices, the contract does.
LARGE_NEGATIVE = -1e4


# --------------------------------------------------------------------------- references


def causal_reference(size: int, device=None, *, offset: int = 0, invert: bool = False,
                     transpose: bool = False) -> Tensor:
    """Float (size, size): -inf where key j > query i + offset, 0 elsewhere.

    offset 0 is correct; -1 also blocks the diagonal, +1 lets each token see the next one
    (the causal-diagonal mistake). invert swaps blocked and allowed (mask-inverted).
    transpose blocks the past instead of the future (tril where triu belongs:
    causal-mask-transposed).
    """
    i = torch.arange(size, device=device)[:, None]
    j = torch.arange(size, device=device)[None, :]
    blocked = j > i + offset
    if invert:
        blocked = ~blocked
    if transpose:
        blocked = blocked.T
    return additive_mask(blocked, torch.get_default_dtype())


def padding_reference(lengths, max_len: int | None = None, *, invert: bool = False) -> Tensor:
    """Bool (b, max_len), True at padded positions (True at the valid ones if invert)."""
    lengths = torch.as_tensor(lengths)
    if max_len is None:
        max_len = int(lengths.max())
    padded = torch.arange(max_len, device=lengths.device)[None, :] >= lengths[:, None]
    return ~padded if invert else padded


# Ways to read a float attn_mask as a yes/no mask (float-mask-as-bool): what is blocked.
FLOAT_AS_BOOL = {
    "nonzero": lambda mask: mask != 0,  # mask.bool(), mask != 0
    "negative": lambda mask: mask < 0,
    "neginf": torch.isneginf,  # keeps the -inf entries, drops the values
}


def merge_reference(
    key_padding_mask: Tensor | None,
    attn_mask: Tensor | None,
    num_heads: int,
    dtype: torch.dtype = torch.float32,
    *,
    invert_padding: bool = False,
    invert_attn: bool = False,
    head_major: bool = False,
    combine: str = "add",
    float_as_bool: str | None = None,
) -> Tensor | None:
    """The merged additive mask, broadcastable to (b*h, n, m), with mistake switches.

    key_padding_mask bool (b, m) becomes (b*h, 1, m) with batch-major rows (row i*h + j is
    batch i, head j; head_major gives row j*b + i instead). attn_mask bool or float,
    (n, m) or (b*h, n, m). combine "add" is correct (-inf + x = -inf: blocked by either);
    "max" blocks only where both block (what &, min or a product of bool masks give);
    "mul" multiplies the additive masks.
    """
    parts = []
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            parts.append(additive_mask(~attn_mask if invert_attn else attn_mask, dtype))
        elif float_as_bool is not None:
            parts.append(additive_mask(FLOAT_AS_BOOL[float_as_bool](attn_mask), dtype))
        else:
            parts.append(attn_mask.to(dtype))
    if key_padding_mask is not None:
        blocked = ~key_padding_mask if invert_padding else key_padding_mask
        if head_major:
            rows = blocked.repeat(num_heads, 1)  # row j*b + i: head-major
        else:
            rows = blocked.repeat_interleave(num_heads, 0)  # row i*h + j: batch-major
        parts.append(additive_mask(rows, dtype).unsqueeze(1))
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    attn, padding = parts
    if combine == "max":
        return torch.maximum(attn, padding)
    if combine == "mul":
        return attn * padding
    return attn + padding


def merge_suspects_switches(key_padding_mask, attn_mask) -> list[tuple[str, dict]]:
    """The catalogued merge mistakes that apply to these inputs, as merge_reference switches."""
    switches = []
    attn_is_bool = attn_mask is not None and attn_mask.dtype == torch.bool
    attn_is_float = attn_mask is not None and not attn_is_bool
    if key_padding_mask is not None:
        switches.append(("mask-inverted", {"invert_padding": True}))
    if attn_is_bool:
        switches.append(("mask-inverted", {"invert_attn": True}))
        if key_padding_mask is not None:
            switches.append(("mask-inverted", {"invert_padding": True, "invert_attn": True}))
    if key_padding_mask is not None:
        switches.append(("padding-mask-head-order", {"head_major": True}))
    if key_padding_mask is not None and attn_mask is not None:
        switches.append(("mask-and-instead-of-or", {"combine": "max"}))
        switches.append(("mask-and-instead-of-or", {"combine": "mul"}))
    if attn_is_float:
        for kind in FLOAT_AS_BOOL:
            switches.append(("float-mask-as-bool", {"float_as_bool": kind}))
    return switches


def suspects_from(candidates: list[tuple[str, Callable[[], Tensor]]]) -> list[Suspect]:
    """Suspects from (slug, predict) pairs; graders.core.mistakes.identify names one only when no
    other slug's mistake gives the same result on this input."""
    return [Suspect(slug, predict=predict) for slug, predict in candidates]


def merge_suspects(key_padding_mask, attn_mask, num_heads: int, dtype: torch.dtype,
                   outcome: Callable[[Tensor], Tensor]) -> list[Suspect]:
    """The merge mistakes that apply, each as what ``outcome(its merged mask)`` would be."""
    return suspects_from([
        (slug, lambda flags=flags: outcome(merge_reference(key_padding_mask, attn_mask, num_heads,
                                                           dtype, **flags)))
        for slug, flags in merge_suspects_switches(key_padding_mask, attn_mask)
    ])


def heads_first(x: Tensor, num_heads: int) -> Tensor:
    """(seq, b, E) -> (b*h, seq, head_dim), batch-major: PyTorch's internal layout."""
    seq, batch, embed = x.shape
    return x.reshape(seq, batch * num_heads, embed // num_heads).transpose(0, 1)


def reference_attention(twin: nn.MultiheadAttention, query, key, value,
                        mask: Tensor | None) -> tuple[Tensor, Tensor]:
    """Multi-head attention with ``twin``'s weights and an additive mask on the logits.

    query (n, b, E), key/value (m, b, E); mask broadcastable to (b*h, n, m). Returns the
    output (n, b, E) and per-head weights (b, h, n, m), like nn.MultiheadAttention with
    average_attn_weights=False.
    """
    n, batch, embed = query.shape
    h = twin.num_heads
    w_q, w_k, w_v = twin.in_proj_weight.chunk(3)
    b_q, b_k, b_v = twin.in_proj_bias.chunk(3)
    q = heads_first(F.linear(query, w_q, b_q), h)
    k = heads_first(F.linear(key, w_k, b_k), h)
    v = heads_first(F.linear(value, w_v, b_v), h)
    attended, weights = attend(q, k, v, mask)  # (b*h, n, head_dim), (b*h, n, m)
    attended = attended.transpose(0, 1).reshape(n, batch, embed)
    output = F.linear(attended, twin.out_proj.weight, twin.out_proj.bias)
    return output, weights.reshape(batch, h, n, -1)


def pytorch_attention(twin: nn.MultiheadAttention, query, key, value,
                      key_padding_mask, attn_mask) -> tuple[Tensor, Tensor]:
    """nn.MultiheadAttention given the two original masks (a float one in the query's dtype)."""
    if attn_mask is not None and attn_mask.is_floating_point():
        attn_mask = attn_mask.to(query.dtype)  # PyTorch insists on it
    with warnings.catch_warnings():
        # A bool key_padding_mask with a float attn_mask is "deprecated" but still supported.
        warnings.simplefilter("ignore", UserWarning)
        return twin(query, key, value, key_padding_mask=key_padding_mask, attn_mask=attn_mask,
                    need_weights=True, average_attn_weights=False)


def pytorch_twin(embed_dim: int, num_heads: int, seed: int, dtype=torch.float32,
                 device="cpu") -> nn.MultiheadAttention:
    """nn.MultiheadAttention with random weights and biases (no dropout: training mode is
    harmless, and keeps it off the fused fast path)."""
    twin = nn.MultiheadAttention(embed_dim, num_heads, dtype=dtype, device=device)
    return randomize_(twin, seed)


# ------------------------------------------------------------------------------- inputs


def key_padding(lengths: list[int], m: int, device="cpu") -> Tensor:
    """Bool (b, m), True at the padding; lengths >= 1, so key 0 is never padded."""
    return padding_reference(torch.tensor(lengths, device=device), m)


def blocking_mask(*shape: int, seed: int, device="cpu") -> Tensor:
    """A random bool attn_mask (True = blocked) that never blocks key 0.

    With key 0 also never padded, no query loses every key: PyTorch stays defined.
    """
    mask = bool_mask(*shape, seed=seed, device=device)
    mask[..., 0] = False
    return mask


def additive_values(*shape: int, seed: int, dtype=torch.float32, device="cpu") -> Tensor:
    """A float attn_mask: random values to add, -inf at some keys, never at key 0."""
    values = randn(*shape, seed=seed, dtype=dtype, device=device)
    return values.masked_fill(blocking_mask(*shape, seed=seed + 1, device=device), NEG_INF)


def attention_inputs(n: int, m: int, batch: int, embed_dim: int, seed: int,
                     dtype=torch.float32, device="cpu") -> tuple[Tensor, Tensor, Tensor]:
    """query (n, b, E), key and value (m, b, E): cross-attention, n != m where chosen."""
    return (randn(n, batch, embed_dim, seed=seed, dtype=dtype, device=device),
            randn(m, batch, embed_dim, seed=seed + 1, dtype=dtype, device=device),
            randn(m, batch, embed_dim, seed=seed + 2, dtype=dtype, device=device))


# ------------------------------------------------------------------------ shared checks


def expect_dtype(got: Tensor, dtype: torch.dtype, check: str, on: str, why: str) -> None:
    if got.dtype != dtype:
        raise verdict(check, on, [_("expected dtype {expected}, got {got} ({why})", expected=dtype,
                                    got=got.dtype, why=why)])


def expect_minus_inf(got: Tensor, expected: Tensor, check: str, on: str) -> None:
    """Blocked positions must hold -inf itself, not a large negative stand-in."""
    stand_in = torch.isneginf(expected) & torch.isfinite(got) & (got <= LARGE_NEGATIVE)
    if bool(stand_in.any()):
        where = tuple(int(i) for i in stand_in.nonzero()[0])
        value = got[where].item()
        raise verdict(check, on, [
            _("a blocked position holds {value} at index {index}, not -inf", value=f"{value:.4g}",
              index=where),
            _("use float('-inf') for blocked positions, as PyTorch's masks do: a large "
              "negative number is not the same (a fully blocked row would not give zeros)"),
        ])


def check_mask_values(got: Tensor, expected: Tensor, check: str, on: str,
                      suspects=()) -> None:
    """Values of a float mask whose shape, dtype and device are already right.

    Reports where it blocks what it should not, allows what it should block, or adds
    different values, each with a count and the first index.
    """
    expect_minus_inf(got, expected, check, on)
    rtol, atol = tolerance(expected.dtype)
    got64, exp64 = got.detach().cpu().double(), expected.detach().cpu().double()
    same = torch.isclose(got64, exp64, rtol=rtol, atol=atol, equal_nan=True)
    if bool(same.all()):
        return
    got_blocked, exp_blocked = torch.isneginf(got64), torch.isneginf(exp64)
    nan = torch.isnan(got64) & ~torch.isnan(exp64)
    start = max(0, int((~same).flatten().nonzero()[0]) - 1)  # previews show the difference
    details = [_("expected {value}", value=describe_tensor(expected, start)),
               _("got      {value}", value=describe_tensor(got, start))]
    kinds = ((nan, _("NaN")),
             (got_blocked & ~exp_blocked, _("blocked (-inf) that should be allowed")),
             (~got_blocked & exp_blocked & ~nan, _("allowed that should be blocked (-inf)")),
             (~same & (got_blocked == exp_blocked) & ~nan, _("with a different value")))
    for where, what in kinds:
        if bool(where.any()):
            first = tuple(int(i) for i in where.nonzero()[0])
            details.append(_("{count} of {total} position(s) {what}, first at index {index}",
                             count=int(where.sum()), total=where.numel(), what=what, index=first))
    slug = identify(got, expected, suspects, rtol * MISTAKE_SLACK, atol * MISTAKE_SLACK)
    failure = verdict(check, on, details, slug)
    failure.pictures = matrix_pictures(exp64, got64, tuple(int(i) for i in (~same).nonzero()[0]),
                                       of=check)
    raise failure


def run_merge(impl: Implementation, key_padding_mask, attn_mask, num_heads: int,
              dtype: torch.dtype, on: str):
    fn = impl.attr("merge_masks")
    # dtype is passed only when it is not the default, so a missing dtype argument costs
    # only the dtype follow-up.
    kwargs = {} if dtype == torch.float32 else {"dtype": dtype}
    return impl.call(fn, key_padding_mask, attn_mask, num_heads, what="merge_masks", on=on,
                     **kwargs)


def merge_description(key_padding_mask, attn_mask, num_heads, dtype) -> str:
    on = describe_inputs(key_padding_mask=key_padding_mask, attn_mask=attn_mask,
                         num_heads=num_heads,
                         dtype=None if dtype == torch.float32 else dtype)
    if key_padding_mask is not None:
        lengths = (~key_padding_mask).sum(-1).tolist()
        on += _(" (key lengths {lengths})", lengths=lengths)
    return on or "key_padding_mask=None, attn_mask=None"


def broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether ``shape`` broadcasts to exactly ``target``. (torch.broadcast_shapes would do,
    but it imports sympy on first use: a third of a grading run.)"""
    if len(shape) > len(target):
        return False
    return all(size in (1, want) for size, want in zip(reversed(shape), reversed(target)))


def expect_merged_layout(merged, full: tuple[int, int, int], dtype: torch.dtype,
                         device: torch.device, on: str) -> Tensor:
    """A tensor of ``dtype`` on ``device``, broadcastable to (b*h, n, m); returned expanded."""
    check = _("merge_masks' result")
    merged = expect_tensor(merged, check, on)
    if not broadcasts_to(tuple(merged.shape), full):
        raise verdict(check, on, [
            _("got shape {got}, which does not broadcast to (batch*heads, n, m) = {full}",
              got=tuple(merged.shape), full=full),
            _("key_padding_mask (b, m) becomes (b*h, 1, m); attn_mask keeps its shape"),
        ])
    why = _("the dtype argument") if dtype != torch.float32 else _("the default dtype=torch.float32")
    expect_dtype(merged, dtype, check, on, why)
    if merged.device != device:
        raise verdict(check, on, [_("expected device {expected}, got {got} (keep the masks' device)",
                                    expected=device, got=merged.device)])
    return merged.expand(full)


def check_merge(impl: Implementation, key_padding_mask: Tensor | None, attn_mask: Tensor | None,
                *, batch: int, heads: int, n: int, m: int, dtype=torch.float32,
                head_dim: int = 4, seed: int = 0, device="cpu") -> None:
    """merge_masks on these masks: None for no masks; else its attention and its values.

    The attention uses query (n, b, E) and key/value (m, b, E) in ``dtype``, E = h * head_dim.
    """
    on = merge_description(key_padding_mask, attn_mask, heads, dtype)
    merged = run_merge(impl, key_padding_mask, attn_mask, heads, dtype, on)
    if key_padding_mask is None and attn_mask is None:
        if merged is not None:
            raise verdict(_("merge_masks' result"), on, [
                _("expected None when both masks are None, got {value}", value=describe_value(merged))])
        return
    full = (batch * heads, n, m)
    mask_device = (key_padding_mask if key_padding_mask is not None else attn_mask).device
    merged = expect_merged_layout(merged, full, dtype, mask_device, on)

    twin = pytorch_twin(heads * head_dim, heads, seed, dtype, device)
    q, k, v = attention_inputs(n, m, batch, heads * head_dim, seed + 1, dtype, device)
    expected_out, expected_w = pytorch_attention(twin, q, k, v, key_padding_mask, attn_mask)
    got_out, got_w = reference_attention(twin, q, k, v, merged)

    def suspects(index: int | None) -> list[Suspect]:
        """What each mistake gives: attention output (0), weights (1), or the mask (None)."""
        def outcome(mask: Tensor) -> Tensor:
            return mask.expand(full) if index is None else \
                reference_attention(twin, q, k, v, mask)[index]
        return merge_suspects(key_padding_mask, attn_mask, heads, dtype, outcome)

    with_mask = on + _("; query length n={n}, key length m={m}", n=n, m=m)
    expect_close(got_w, expected_w, _("attention weights (b, h, n, m) with your mask vs "
                 "nn.MultiheadAttention's"), with_mask, suspects(1))
    expect_close(got_out, expected_out, _("attention output with your mask vs "
                 "nn.MultiheadAttention's"), with_mask, suspects(0))
    expected = merge_reference(key_padding_mask, attn_mask, heads, dtype).expand(full)
    check_mask_values(merged, expected, _("the merged mask's values, broadcast to (b*h, n, m)"),
                      with_mask, suspects(None))


# --------------------------------------------------------------------------- causal_mask


class _MetaAsked(TorchFunctionMode):
    """Runs code asked for the meta device on the CPU instead, noting that it was asked.

    Why not run it on meta: PyTorch's meta kernels (triu, comparisons, ...) import sympy on
    their first call, as costly as a third of ``import torch``. Every torch function and
    tensor method passes through a TorchFunctionMode, factories included, so a device
    argument meaning meta is seen wherever the code hands it on (``torch.full(...,
    device=device)``, ``.to(device)``, ``generate_square_subsequent_mask(n, device=device)``)."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = False

    def _cpu_for_meta(self, value: Any) -> Any:
        if (isinstance(value, torch.device) and value.type == "meta") or (
                isinstance(value, str) and value.split(":")[0] == "meta"):
            self.asked = True
            return torch.device("cpu")
        return value

    def __torch_function__(self, func, types, args=(), kwargs=None):
        args = tuple(self._cpu_for_meta(arg) for arg in args)
        kwargs = {key: self._cpu_for_meta(value) for key, value in (kwargs or {}).items()}
        return func(*args, **kwargs)


def check_causal_on_meta(impl: Implementation, size: int) -> None:
    """causal_mask(size, device="meta") must make the mask on the device it is given: a mask
    built on the CPU whatever ``device`` says fails here on any machine. The meta device is
    honoured when the code hands it to a torch function or tensor method; the call then
    runs on the CPU (see :class:`_MetaAsked`), so the values are checked too."""
    on = f"size={size}, device='meta'"
    fn = impl.attr("causal_mask")
    mode = _MetaAsked()

    def asked_for_meta(*args, **kwargs):
        with mode:
            return fn(*args, **kwargs)

    got = impl.call(asked_for_meta, size, device="meta", what="causal_mask", on=on)
    check = _("causal_mask on the device it is given")
    got = expect_tensor(got, check, on)
    if not mode.asked and got.device.type != "meta":
        raise verdict(check, on, [
            _("expected device meta, got {device}: make the mask on `device` (e.g. "
              "torch.full(..., device=device)), not on the CPU", device=got.device)])
    if got.device.type == "meta":  # made there without any torch call we could see
        return
    expected = nn.Transformer.generate_square_subsequent_mask(size)
    if got.shape != expected.shape or got.dtype != torch.float32:
        raise verdict(check, on, [_("expected float32 {expected}, got {dtype} {shape}",
                                    expected=(size, size), dtype=str(got.dtype)[6:],
                                    shape=tuple(got.shape))])
    check_mask_values(got, expected, check, on, [])


def check_causal(impl: Implementation, size: int, device=None) -> None:
    on = f"size={size}" + ("" if device is None else f", device={device!r}")
    fn = impl.attr("causal_mask")
    kwargs = {} if device is None else {"device": device}
    got = impl.call(fn, size, what="causal_mask", on=on, **kwargs)
    expected = nn.Transformer.generate_square_subsequent_mask(size, device=device)
    check = _("causal_mask against nn.Transformer.generate_square_subsequent_mask")
    got = expect_tensor(got, check, on)
    if got.shape != expected.shape:
        raise verdict(check, on, [_("expected shape {expected}, got {got}",
                                    expected=tuple(expected.shape), got=tuple(got.shape))])
    expect_dtype(got, expected.dtype, check, on, _("a float mask of 0 and -inf, like PyTorch's"))
    if got.device != expected.device:
        raise verdict(check, on, [_("expected device {expected}, got {got}", expected=expected.device,
                                    got=got.device)])
    suspects = suspects_from([
        ("causal-diagonal", lambda: causal_reference(size, device, offset=-1)),
        ("causal-diagonal", lambda: causal_reference(size, device, offset=1)),
        ("mask-inverted", lambda: causal_reference(size, device, invert=True)),
        ("causal-mask-transposed", lambda: causal_reference(size, device, transpose=True)),
    ])
    check_mask_values(got, expected, check, on, suspects)


@title(N_("causal_mask"))
@pytest.mark.core
def test_causal_mask(impl):
    """0 on and below the diagonal, -inf above, float32 on the CPU; sizes 1 to 8; made on
    the device given (the meta device, which every machine has)."""
    for size in (5, 1, 2, 8):
        check_causal(impl, size)
    check_causal(impl, 3, device="cpu")
    check_causal(impl, 4, device=torch.device("cpu"))
    check_causal_on_meta(impl, 6)


# -------------------------------------------------------------------------- padding_mask


def check_padding(impl: Implementation, lengths, max_len: int | None = None) -> None:
    shown = lengths.tolist() if isinstance(lengths, Tensor) else lengths
    kind = f"tensor {str(lengths.dtype)[6:]}" if isinstance(lengths, Tensor) else "list"
    on = f"lengths={shown} ({kind})" + ("" if max_len is None else f", max_len={max_len}")
    fn = impl.attr("padding_mask")
    kwargs = {} if max_len is None else {"max_len": max_len}
    got = impl.call(fn, lengths, what="padding_mask", on=on, **kwargs)
    expected = padding_reference(lengths, max_len)
    check = _("padding_mask (True at padded positions)")
    got = expect_tensor(got, check, on)
    if got.shape != expected.shape:
        raise verdict(check, on, [
            _("expected shape (batch, max_len) = {expected}, got {got}",
              expected=tuple(expected.shape), got=tuple(got.shape)),
            _("max_len defaults to the longest length") if max_len is None else
            _("max_len, when given, is the mask's width"),
        ])
    expect_dtype(got, torch.bool, check, on, _("a bool mask, True = padded"))
    if got.device != expected.device:
        raise verdict(check, on, [_("expected device {expected} (the lengths' device), got {got}",
                                    expected=expected.device, got=got.device)])
    suspects = [Suspect("mask-inverted", predict=lambda: padding_reference(lengths, max_len,
                                                                           invert=True))]
    expect_close(got, expected, check, on, suspects)


@title(N_("padding_mask"))
@pytest.mark.core
def test_padding_mask(impl):
    """Lengths as a tensor and as a list, a batch without padding, an explicit max_len."""
    check_padding(impl, torch.tensor([3, 1, 4]))
    check_padding(impl, [2, 5, 5, 1])
    check_padding(impl, torch.tensor([4, 4]))  # nothing padded
    check_padding(impl, torch.tensor([2, 3]), max_len=6)
    check_padding(impl, [1, 3, 2], max_len=3)
    check_padding(impl, torch.tensor([1, 3, 2], dtype=torch.int32), max_len=4)


# --------------------------------------------------------------------------- merge_masks


@title(N_("merge_masks without masks"))
@pytest.mark.core
def test_merge_no_masks(impl):
    """Both masks None: merge_masks returns None (attention runs unmasked)."""
    check_merge(impl, None, None, batch=2, heads=2, n=3, m=4)


@title(N_("merge_masks with a padding mask only"))
@pytest.mark.core
def test_merge_padding_only(impl):
    """key_padding_mask alone, padding that differs per batch element, h > 1, n != m."""
    check_merge(impl, key_padding([6, 3, 5], 6), None, batch=3, heads=2, n=4, m=6, seed=10)
    check_merge(impl, key_padding([2, 5], 5), None, batch=2, heads=4, n=3, m=5, seed=20)


@title(N_("merge_masks with attn_mask only"))
@pytest.mark.core
def test_merge_attn_mask_only(impl):
    """attn_mask alone: bool and float, (n, m) and (b*h, n, m)."""
    b, h, n, m = 2, 3, 4, 5
    check_merge(impl, None, blocking_mask(n, m, seed=30), batch=b, heads=h, n=n, m=m, seed=31)
    check_merge(impl, None, additive_values(n, m, seed=40), batch=b, heads=h, n=n, m=m, seed=41)
    check_merge(impl, None, blocking_mask(b * h, n, m, seed=50), batch=b, heads=h, n=n, m=m,
                seed=51)
    check_merge(impl, None, additive_values(b * h, n, m, seed=60), batch=b, heads=h, n=n, m=m,
                seed=61)


@title(N_("merge_masks with both masks"))
@pytest.mark.core
def test_merge_both_masks(impl):
    """key_padding_mask with a bool or float attn_mask, (n, m) and (b*h, n, m): a key is
    blocked when either mask blocks it."""
    b, h, n, m = 3, 2, 4, 6
    padding = key_padding([6, 2, 4], m)
    for seed, attn in ((70, blocking_mask(n, m, seed=71)),
                       (80, additive_values(n, m, seed=81)),
                       (90, blocking_mask(b * h, n, m, seed=91)),
                       (100, additive_values(b * h, n, m, seed=101))):
        check_merge(impl, padding, attn, batch=b, heads=h, n=n, m=m, seed=seed)


def merge_case(rng):
    batch, heads = rng.randint(1, 3), rng.randint(1, 4)
    n, m = rng.randint(1, 6), rng.randint(1, 6)
    lengths = rng.choice([None, [rng.randint(1, m) for _ in range(batch)]])
    attn_kind = rng.choice([None, "bool", "float"])
    per_head = rng.random() < 0.5  # attn_mask (b*h, n, m) rather than (n, m)
    return batch, heads, n, m, lengths, attn_kind, per_head, rng.randint(0, 10_000)


@title(N_("merge_masks on random shapes"))
@pytest.mark.core
def test_merge_random_shapes(impl):
    """Random batch, heads, lengths and masks, drawn from a fixed seed (the same every run)."""
    for batch, heads, n, m, lengths, attn_kind, per_head, seed in drawn_cases(merge_case):
        padding = None if lengths is None else key_padding(lengths, m)
        shape = (batch * heads, n, m) if per_head else (n, m)
        attn = {None: lambda: None,
                "bool": lambda: blocking_mask(*shape, seed=seed + 5),
                "float": lambda: additive_values(*shape, seed=seed + 5)}[attn_kind]()
        check_merge(impl, padding, attn, batch=batch, heads=heads, n=n, m=m, head_dim=3,
                    seed=seed)


@title(N_("merge_masks keeps the dtype"))
@pytest.mark.followup
def test_merge_dtypes(impl):
    """dtype is honoured: float64 (attention in float64), a float64 attn_mask merged into
    float32, a float32 one into float64, a float16 one into float32, and half types
    (values only)."""
    b, h, n, m = 2, 2, 3, 5
    padding = key_padding([5, 2], m)
    check_merge(impl, padding, blocking_mask(n, m, seed=110), batch=b, heads=h, n=n, m=m,
                dtype=torch.float64, seed=111)
    check_merge(impl, padding, additive_values(b * h, n, m, seed=120, dtype=torch.float64),
                batch=b, heads=h, n=n, m=m, dtype=torch.float64, seed=121)
    check_merge(impl, padding, additive_values(n, m, seed=130, dtype=torch.float64),
                batch=b, heads=h, n=n, m=m, dtype=torch.float32, seed=131)
    check_merge(impl, padding, additive_values(n, m, seed=140), batch=b, heads=h, n=n, m=m,
                dtype=torch.float64, seed=141)
    check_merge(impl, padding, additive_values(n, m, seed=145, dtype=torch.float16),
                batch=b, heads=h, n=n, m=m, dtype=torch.float32, seed=146)
    for dtype in (torch.float16, torch.bfloat16):  # no half attention on every CPU: values
        attn = additive_values(n, m, seed=150)
        on = merge_description(padding, attn, h, dtype)
        merged = run_merge(impl, padding, attn, h, dtype, on)
        merged = expect_merged_layout(merged, (b * h, n, m), dtype, torch.device("cpu"), on)
        expected = merge_reference(padding, attn, h, dtype).expand(b * h, n, m)
        suspects = merge_suspects(padding, attn, h, dtype,
                                  lambda mask: mask.expand(b * h, n, m))
        check_mask_values(merged, expected, _("the merged mask's values, broadcast to "
                          "(b*h, n, m)"), on, suspects)


@title(N_("gradient of a learned float mask"))
@pytest.mark.followup
def test_merge_float_mask_gradient(impl):
    """A float attn_mask can be a learned bias: its gradient through attention equals
    the one nn.MultiheadAttention gives, for (n, m) and (b*h, n, m) masks."""
    b, h, n, m, head_dim = 2, 2, 3, 5, 4
    padding = key_padding([5, 3], m)
    for seed, shape in ((160, (n, m)), (170, (b * h, n, m))):
        (attn,) = leaf_copies(randn(*shape, seed=seed))
        on = merge_description(padding, attn, h, torch.float32) + _(" (attn_mask requires grad)")
        merged = run_merge(impl, padding, attn, h, torch.float32, on)
        merged = expect_merged_layout(merged, (b * h, n, m), torch.float32, torch.device("cpu"), on)
        twin = pytorch_twin(h * head_dim, h, seed + 1)
        q, k, v = attention_inputs(n, m, b, h * head_dim, seed + 2)
        got_out, got_w = reference_attention(twin, q, k, v, merged)
        got = grads_of(weighted_sum([got_out, got_w], seed=seed + 3), {"attn_mask": attn}, on=on)
        (ref_attn,) = leaf_copies(attn)
        ref_out, ref_w = pytorch_attention(twin, q, k, v, padding, ref_attn)
        expected = grads_of(weighted_sum([ref_out, ref_w], seed=seed + 3),
                            {"attn_mask": ref_attn})
        expect_grads_close(got, expected, _("backward through attention with your mask"), on)


@title(N_("causal and padding masks in decoder self-attention"))
@pytest.mark.followup
def test_decoder_self_attention(impl):
    """All three together: merge_masks(padding_mask(lengths), causal_mask(n)) in masked
    self-attention equals nn.MultiheadAttention with PyTorch's causal and padding masks."""
    b, h, n, head_dim = 3, 2, 5, 4
    lengths = [5, 2, 4]
    on = _("lengths={lengths}, causal size {n}, num_heads={h}", lengths=lengths, n=n, h=h)
    padding = impl.call(impl.attr("padding_mask"), torch.tensor(lengths), what="padding_mask",
                        on=on)
    causal = impl.call(impl.attr("causal_mask"), n, what="causal_mask", on=on)
    merged = impl.call(impl.attr("merge_masks"), padding, causal, h, what="merge_masks",
                       on=on + _(" (your padding and causal masks)"))
    merged = expect_merged_layout(merged, (b * h, n, n), torch.float32, torch.device("cpu"), on)
    twin = pytorch_twin(h * head_dim, h, seed=180)
    x = randn(n, b, h * head_dim, seed=181)
    expected_out, expected_w = pytorch_attention(
        twin, x, x, x, key_padding(lengths, n), nn.Transformer.generate_square_subsequent_mask(n))
    got_out, got_w = reference_attention(twin, x, x, x, merged)
    check = _("masked self-attention with your three masks vs nn.MultiheadAttention")
    expect_close(got_w, expected_w, _("{check}: weights (b, h, n, n)", check=check), on)
    expect_close(got_out, expected_out, _("{check}: output", check=check), on)


@title(N_("masks on a CUDA GPU"))
@pytest.mark.followup
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_masks_on_cuda(impl):
    """Masks are made on the requested device; float16/bfloat16 merges on the GPU."""
    check_causal(impl, 6, device="cuda")
    check_causal(impl, 3, device=torch.device("cuda"))
    check_padding(impl, torch.tensor([3, 1, 4], device="cuda"))
    b, h, n, m = 2, 2, 3, 5
    padding = key_padding([5, 2], m, device="cuda")
    for dtype in (torch.float16, torch.bfloat16):
        check_merge(impl, padding, blocking_mask(b * h, n, m, seed=190, device="cuda"),
                    batch=b, heads=h, n=n, m=m, dtype=dtype, seed=191, device="cuda")
        check_merge(impl, padding, additive_values(n, m, seed=200, device="cuda"),
                    batch=b, heads=h, n=n, m=m, dtype=dtype, seed=201, device="cuda")
