"""Grader for kata 12: ``rope_angles`` and ``apply_rope``.

PyTorch has no RoPE of its own, so expected numbers come from the definition, computed
in float64: angle = p * base^(-2i/d), and each pair (x1, x2) - (i, i + d/2) by default,
(2i, 2i+1) with interleaved=True - rotated to (x1 cos - x2 sin, x1 sin + x2 cos).
:func:`rope_reference` writes the rotation as ``x * cos + partner(x) * sin`` over full-width
tables, with one switch per way of getting it wrong (the pairing and the table's layout
each way, the frequencies, the rotation's sign, cos and sin swapped, the positions
replaced by 0 ... n-1); a wrong answer is named by the mistake it reproduces.

``rope_angles`` must be float32 exact (float64, then cast): at positions near 10^6 a
float32 product is already off by a float32 step or more, which the check at large
positions sees. ``apply_rope`` only needs angles as good as float32's (the contract), so
its outputs are compared with an allowed error that grows with the angle behind each
value (:func:`allowed_error`), as in kata 05.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import pytest
import torch
from torch import Tensor

from graders.core.i18n import N_, _
from graders.core.compare import MISTAKE_SLACK, expect_close, tolerance
from graders.core.implementation import Implementation
from graders.core.inputs import drawn_cases, generator, leaf_copies, randn
from graders.core.mistakes import Suspect, identify
from graders.core.report import describe_inputs, describe_tensor, verdict, title
from graders.twins.precision import ANGLE_ERROR, FLOAT32_EPS
from graders.twins.rope import (
    WRONG_FREQUENCIES,
    angles64,
    describe_positions,
    partner,
    rope_reference,
)

__all__ = [
    "test_angles_match_formula",
    "test_angles_exact_at_large_positions",
    "test_rope_rotate_half",
    "test_rope_interleaved",
    "test_rope_positions_per_batch_row",
    "test_rope_random_shapes",
    "test_rope_relative_position",
    "test_rope_preserves_norms",
    "test_rope_float64",
    "test_rope_long_positions",
    "test_rope_gradients",
    "test_rope_half_precision",
    "test_rope_half_precision_on_cuda",
]

ANGLES_DTYPE = torch.float32
# rope_angles must be float32 exact: the float64 angle rounded to the nearest float32, at
# most half a step away (relative 2^-24 = eps / 2); a little room for float64's own error.
EXACT_RTOL = FLOAT32_EPS / 2 * (1 + 1e-6)


# --------------------------------------------------------------------------- references


def mistaken_ropes(x: Tensor, positions: Tensor | None, base: float,
                   interleaved: bool) -> list[tuple[str, Callable[[], tuple[Tensor, Tensor]]]]:
    """(slug, make) for every modelled way of writing each mistake; ``make()`` gives that
    output and its angles."""

    def rope(slug: str, **switches) -> tuple[str, Callable[[], tuple[Tensor, Tensor]]]:
        return slug, lambda: rope_reference(x, positions, base, interleaved, **switches)

    other = not interleaved
    return [
        rope("rope-pairs-mismatch", rotate=other, table=other),
        rope("rope-pairs-mismatch", rotate=other),
        rope("rope-pairs-mismatch", table=other),
        rope("rope-pairs-mismatch", rotate=other, table=other, written_back=interleaved),
        *(rope("rope-wrong-frequency", frequency=f) for f in WRONG_FREQUENCIES),
        rope("rope-rotation-reversed", sign=-1.0),
        rope("rope-cos-sin-swapped", swap=True),
        rope("rope-cos-sin-swapped", swap=True, sign=-1.0),
        rope("rope-positions-ignored", ignore_positions="arange"),
        rope("rope-positions-ignored", ignore_positions="first-row"),
    ]


# ------------------------------------------------------------------ comparing by angle


def allowed_error(expected: Tensor, angle: Tensor, radius: Tensor, dtype: torch.dtype) -> Tensor:
    """How far a sound implementation may be from ``expected`` (float64), element by
    element: the dtype's own tolerance plus float32 angles' error, which grows with the
    angle and with the size of the pair being turned (``radius``)."""
    rtol, atol = tolerance(dtype)
    error = atol + rtol * expected.abs() + ANGLE_ERROR * FLOAT32_EPS * (1 + angle.abs()) * radius
    return error.nan_to_num(nan=math.inf)


def pair_radius(x: Tensor, interleaved: bool) -> Tensor:
    """|x| + |partner(x)| per element, float64: bounds the length of the pair it belongs to."""
    x64 = x.detach().to("cpu", torch.float64)
    return x64.abs() + partner(x64, interleaved).abs()


def within(got: Tensor, target: Tensor, allowed: Tensor) -> Tensor:
    return ((got - target).abs() <= allowed) | (torch.isnan(got) & torch.isnan(target))


def as_float64(t: Tensor) -> Tensor:
    return t.detach().to("cpu", torch.float64)


def rope_suspect(slug: str, make: Callable[[], tuple[Tensor, Tensor]], expected: Tensor,
                 radius: Tensor, dtype: torch.dtype) -> Suspect:
    """Named when the learner's output is (loosely) the mistake's and the mistake is
    observably different from the right answer on this input."""

    def matches(got: Any) -> bool:
        if not isinstance(got, Tensor) or got.shape != expected.shape:
            return False
        predicted, angle = make()
        loose = MISTAKE_SLACK * allowed_error(predicted, angle, radius, dtype)
        if bool(within(predicted, expected, 2 * loose).all()):
            return False
        return bool(within(as_float64(got), predicted, loose).all())

    return Suspect(slug, matches=matches)


def angles_in_dtype_suspect(expected: Tensor, angle: Tensor, radius: Tensor,
                            dtype: torch.dtype) -> list[Suspect]:
    """With x float16 or bfloat16: the angles computed in x's dtype (positions and
    frequencies cast to it before the product). Each angle is then off by up to about
    two of that dtype's steps (relative eps), which at positions in the hundreds is a large
    fraction of a radian: named when every value lies within that error of the right
    answer (so the pairing, sign and positions are right, only the angles' precision is
    not)."""
    if dtype not in (torch.float16, torch.bfloat16):
        return []
    angle_error = 4 * torch.finfo(dtype).eps * (1 + angle.abs())

    def matches(got: Any) -> bool:
        if not isinstance(got, Tensor) or got.shape != expected.shape:
            return False
        band = MISTAKE_SLACK * allowed_error(expected, angle, radius, dtype) + angle_error * radius
        return bool(within(as_float64(got), expected, band).all())

    return [Suspect("rope-wrong-frequency", matches=matches)]


def expect_rotated(got: Any, expected: Tensor, angle: Tensor, radius: Tensor, dtype: torch.dtype,
                   device: torch.device | str, check: str, on: str,
                   suspects: list[Suspect] = ()) -> None:
    """Fail unless ``got`` is a ``dtype`` tensor of expected's shape on ``device`` within
    :func:`allowed_error` of ``expected`` (float64, CPU); name the suspect it matches."""
    shaped = torch.empty(expected.shape, dtype=dtype, device=device)
    # Type, shape, dtype and device only (no value is selected for comparison).
    expect_close(got, shaped, check, on, suspects, mask=torch.tensor(False))
    allowed = allowed_error(expected, angle, radius, dtype)
    got64 = as_float64(got)
    bad = ~within(got64, expected, allowed)
    if not bool(bad.any()):
        return
    diff = (got64 - expected).abs().nan_to_num(nan=math.inf)
    where = tuple(int(i) for i in torch.unravel_index((diff - allowed).argmax(), diff.shape))
    # The previews start just before the first difference, so that they show it.
    start = max(0, int(bad.flatten().nonzero()[0]) - 1)
    details = [
        _("expected {value}", value=describe_tensor(expected.to(dtype), start)),
        _("got      {value}", value=describe_tensor(got, start)),
        _("worst at index {index}: expected {expected}, got {got}; {off} of {total} values off",
          index=where, expected=f"{expected[where].item():.6g}",
          got=f"{got64[where].item():.6g}", off=int(bad.sum()), total=bad.numel()),
    ]
    raise verdict(check, on, details, identify(got, expected, suspects, 0.0, 0.0))


# ------------------------------------------------------------------------- rope_angles


def angle_suspects(positions: Tensor, head_dim: int, base: float, expected: Tensor) -> list[Suspect]:
    """What rope_angles would return with each mistake that shows in the angles alone."""
    def make(slug: str, fn: Callable[[], Tensor]) -> Suspect:
        return Suspect(slug, predict=lambda: fn().to(ANGLES_DTYPE))

    arange = torch.arange(positions.shape[-1]).expand(positions.shape) if positions.dim() else positions
    return [
        *(make("rope-wrong-frequency", lambda f=f: angles64(positions, head_dim, base, f))
          for f in WRONG_FREQUENCIES),
        make("rope-rotation-reversed", lambda: -angles64(positions, head_dim, base)),
        make("rope-positions-ignored", lambda: angles64(arange, head_dim, base)),
    ]


def check_angles(impl: Implementation, positions: Tensor, head_dim: int,
                 base: float | None = None, exact: bool = False) -> None:
    """rope_angles against the formula in float64, cast: to float32's tolerance (named
    mistakes), and with ``exact`` to half a float32 step (float32 arithmetic fails it)."""
    kwargs = {} if base is None else {"base": base}
    base = 10000.0 if base is None else base
    on = f"{describe_positions(positions)}, head_dim={head_dim}" + (f", base={base:g}" if kwargs else "")
    fn = impl.attr("rope_angles")
    got = impl.call(fn, positions, head_dim, what="rope_angles", on=on, **kwargs)
    exact64 = angles64(positions, head_dim, base)
    check = _("the angles (*positions.shape, head_dim // 2), float32")
    if isinstance(got, Tensor) and got.dtype != ANGLES_DTYPE:
        raise verdict(check, on, [_("expected dtype float32, got {dtype}: compute in "
                                    "float64, then cast the angles to float32", dtype=got.dtype)])
    expect_close(got, exact64.to(ANGLES_DTYPE), check, on,
                 angle_suspects(positions, head_dim, base, exact64.to(ANGLES_DTYPE)))
    if not exact:
        return
    error = (as_float64(got) - exact64).abs()
    allowed = EXACT_RTOL * exact64.abs()
    if bool((error > allowed).any()):
        where = tuple(int(i) for i in torch.unravel_index((error / allowed.clamp_min(1e-300)).argmax(),
                                                          error.shape))
        raise verdict(check, on, [
            _("at index {index} (position {position}, pair {pair}): expected {expected}, got "
              "{got}", index=where, position=int(positions[where[:-1]]), pair=where[-1],
              expected=f"{exact64[where].item():.10g}",
              got=f"{as_float64(got)[where].item():.10g}"),
            _("off by {steps} float32 steps (relative eps); the float64 angle cast to float32 "
              "is at most 0.5 off",
              steps=f"{error[where].item() / (FLOAT32_EPS * exact64[where].abs().item()):.2f}"),
            _("compute the angles in float64 (positions and frequencies), then cast to "
              "float32")])


@title(N_("the angles against the formula"))
@pytest.mark.core
def test_angles_match_formula(impl):
    """angle[..., i] = p * base^(-2i/d): positions (n,), (b, n) and 3-D, not from 0, any
    order; several head_dims and bases; float32 out, shape (*positions.shape, d // 2)."""
    check_angles(impl, torch.tensor([0, 1, 2, 3, 4]), 8)
    check_angles(impl, torch.tensor([7, 3, 100, 3]), 6, base=100.0)
    check_angles(impl, torch.tensor([[2, 3, 4], [10, 11, 12]]), 4)
    check_angles(impl, torch.tensor([[5, 0, 9]], dtype=torch.int32), 16, base=500000.0)
    check_angles(impl, torch.arange(24).view(2, 3, 4) * 7, 10)
    check_angles(impl, torch.tensor([3]), 2)


@title(N_("exact angles at large positions"))
@pytest.mark.core
def test_angles_exact_at_large_positions(impl):
    """Up to position 10^6 the angles are the float64 values rounded to float32 (at most
    half a float32 step off); float32 arithmetic is a step or more off there."""
    positions = torch.tensor([65_537, 123_457, 500_001, 999_999, 1_000_000])
    check_angles(impl, positions, 64, exact=True)
    check_angles(impl, positions.view(1, 5).expand(2, 5) - torch.tensor([[0], [1]]), 128,
                 base=500000.0, exact=True)


# -------------------------------------------------------------------------- apply_rope


def make_positions(kind: str, b: int, n: int, seed: int) -> Tensor | None:
    """None; (n,) "offset" (a run not starting at 0) or "scattered" (any order, repeats);
    (b, n) "rows" (each batch row its own offset, as with left padding) or "batch-random"."""
    g = generator(seed)
    if kind == "none":
        return None
    if kind == "offset":
        return torch.arange(n) + int(torch.randint(1, 50, (), generator=g))
    if kind == "scattered":
        return torch.randint(0, 60, (n,), generator=g)
    if kind == "rows":
        return torch.arange(n)[None, :] + torch.randint(0, 40, (b, 1), generator=g)
    if kind == "batch-random":
        return torch.randint(0, 200, (b, n), generator=g)
    raise ValueError(kind)


def check_rope(impl: Implementation, *, b: int, h: int, n: int, d: int, seed: int,
               positions: Tensor | None = None, base: float | None = None,
               interleaved: bool | None = None, dtype=torch.float32, device="cpu") -> Tensor:
    """apply_rope against the definition; returns the learner's output."""
    x = randn(b, h, n, d, seed=seed, dtype=dtype, device=device)
    kwargs: dict[str, Any] = {}
    if positions is not None:
        kwargs["positions"] = positions.to(device)
    if base is not None:
        kwargs["base"] = base
    if interleaved is not None:
        kwargs["interleaved"] = interleaved
    base_ = 10000.0 if base is None else base
    inter = bool(interleaved)
    flags = "".join(f", {k}={v:g}" if isinstance(v, float) else f", {k}={v}"
                    for k, v in kwargs.items() if k != "positions")
    where = "" if device == "cpu" else _(" on {device}", device=device)
    on = f"{describe_inputs(x=x)}{where}, {describe_positions(positions)}{flags}"
    got = impl.call(impl.attr("apply_rope"), x, what="apply_rope", on=on, **kwargs)
    expected, angle = rope_reference(x, positions, base_, inter)
    radius = pair_radius(x, inter)
    suspects = [rope_suspect(slug, make, expected, radius, dtype)
                for slug, make in mistaken_ropes(x, positions, base_, inter)]
    suspects += angles_in_dtype_suspect(expected, angle, radius, dtype)
    expect_rotated(got, expected, angle, radius, dtype, x.device,
                   _("the rotated x (b, h, n, d)"), on, suspects)
    return got


@title(N_("RoPE in the rotate-half layout"))
@pytest.mark.core
def test_rope_rotate_half(impl):
    """Default pairs (i, i + d/2): positions None, a run not starting at 0, and positions
    in any order; also with interleaved=False passed explicitly."""
    check_rope(impl, b=2, h=3, n=5, d=8, seed=100)
    check_rope(impl, b=2, h=2, n=4, d=6, seed=110, positions=make_positions("offset", 2, 4, 111))
    check_rope(impl, b=1, h=2, n=6, d=4, seed=120, positions=make_positions("scattered", 1, 6, 121),
               base=100.0)
    check_rope(impl, b=3, h=1, n=3, d=10, seed=220, interleaved=False,
               positions=make_positions("scattered", 3, 3, 221))


@title(N_("RoPE in the interleaved layout"))
@pytest.mark.core
def test_rope_interleaved(impl):
    """interleaved=True: pairs (2i, 2i+1)."""
    check_rope(impl, b=2, h=3, n=5, d=8, seed=200, interleaved=True)
    check_rope(impl, b=2, h=2, n=4, d=6, seed=210, interleaved=True,
               positions=make_positions("offset", 2, 4, 211))


@title(N_("positions per batch row"))
@pytest.mark.core
def test_rope_positions_per_batch_row(impl):
    """positions (b, n): every batch row its own positions (left-padded batches), the same
    for every head; both pairings."""
    for i, inter in enumerate((None, True)):
        check_rope(impl, b=3, h=2, n=4, d=8, seed=300 + 10 * i, interleaved=inter,
                   positions=make_positions("rows", 3, 4, 301 + 10 * i))
        check_rope(impl, b=2, h=3, n=5, d=6, seed=302 + 10 * i, interleaved=inter,
                   positions=make_positions("batch-random", 2, 5, 303 + 10 * i))


def rope_case(rng):
    b, h, n, d = rng.randint(1, 3), rng.randint(1, 3), rng.randint(1, 6), 2 * rng.randint(1, 6)
    kind = rng.choice(["none", "offset", "scattered", "rows", "batch-random"])
    return (b, h, n, d, kind, rng.choice([None, True, False]), rng.choice([None, 100.0, 500000.0]),
            rng.randint(0, 9999))


@title(N_("RoPE on random shapes"))
@pytest.mark.core
def test_rope_random_shapes(impl):
    """Random shapes, pairings, bases and kinds of positions, drawn from a fixed seed."""
    for b, h, n, d, kind, inter, base, seed in drawn_cases(rope_case, seed=12):
        check_rope(impl, b=b, h=h, n=n, d=d, seed=seed, interleaved=inter, base=base,
                   positions=make_positions(kind, b, n, seed + 1))


@title(N_("scores depend only on the relative position"))
@pytest.mark.core
def test_rope_relative_position(impl):
    """The point of RoPE: a query rotated at position m and a key at position n have a dot
    product that depends on m - n only (here the same q and k at pairs of positions
    shifted together), equal to the one the definition gives."""
    d, h = 8, 2
    q, k = randn(1, h, 1, d, seed=400), randn(1, h, 1, d, seed=401)
    shifts = torch.tensor([0, 1, 5, 37, 1000])
    for inter in (False, True):
        for m, n in ((3, 1), (0, 4), (6, 6)):
            queries = q.expand(1, h, len(shifts), d).contiguous()
            keys = k.expand(1, h, len(shifts), d).contiguous()
            flag = ", interleaved=True" if inter else ""
            on = _("q and k {shape} repeated at query positions {queries} and key positions "
                   "{keys}", shape=(1, h, 1, d), queries=(m + shifts).tolist(),
                   keys=(n + shifts).tolist()) + flag
            fn = impl.attr("apply_rope")
            kw = {"interleaved": True} if inter else {}
            rq = impl.call(fn, queries, m + shifts, what="apply_rope", on=on, **kw)
            rk = impl.call(fn, keys, n + shifts, what="apply_rope", on=on, **kw)
            check = _("the dot products q·k for m - n = {offset} (one per shift)", offset=m - n)
            if not (isinstance(rq, Tensor) and isinstance(rk, Tensor) and rq.shape == rk.shape
                    == queries.shape):
                raise verdict(check, on, [_("apply_rope returned {value}, expected a tensor {shape}",
                                            value=describe_tensor(rq) if isinstance(rq, Tensor)
                                            else type(rq).__name__, shape=tuple(queries.shape))])
            dots = (as_float64(rq) * as_float64(rk)).sum(-1)  # (1, h, shifts)
            eq = rope_reference(queries, m + shifts, interleaved=inter)[0]
            ek = rope_reference(keys, n + shifts, interleaved=inter)[0]
            expected = (eq * ek).sum(-1)
            spread = (dots - dots[..., :1]).abs().max().item()
            # float32 angles near position 1000 may be off by ~1e-4 rad: allow for it.
            allowed = 1e-3 * (1 + (q.norm(dim=-1) * k.norm(dim=-1)).max().item())
            if spread > allowed or not bool(torch.isfinite(dots).all()):
                raise verdict(check, on, [
                    _("the dot products change with the shift by up to {spread}: {values} for "
                      "head 0", spread=f"{spread:.3g}",
                      values=[round(v, 4) for v in dots[0, 0].tolist()]),
                    _("they must depend on m - n only: the same rotation per position for "
                      "queries and keys, angles proportional to the position")])
            off = (dots - expected).abs().max().item()
            if off > allowed:
                raise verdict(check, on, [
                    _("they depend on m - n only, but are not the definition's: expected "
                      "{expected} for head 0, got {got} (max abs diff {off})",
                      expected=f"{expected[0, 0, 0].item():.5g}",
                      got=f"{dots[0, 0, 0].item():.5g}", off=f"{off:.3g}")])


@title(N_("RoPE preserves norms"))
@pytest.mark.core
def test_rope_preserves_norms(impl):
    """A rotation keeps each vector's length (and x's shape and dtype): the norm over d of
    every output vector equals its input's."""
    for inter in (False, True):
        x = randn(2, 3, 5, 8, seed=500)
        positions = make_positions("rows", 2, 5, 501)
        on = f"{describe_inputs(x=x)}, {describe_positions(positions)}, interleaved={inter}"
        got = impl.call(impl.attr("apply_rope"), x, positions, interleaved=inter,
                        what="apply_rope", on=on)
        check = _("the norms of the rotated vectors, ||apply_rope(x)|| over d")
        if not isinstance(got, Tensor) or got.shape != x.shape:
            expect_close(got, x, check, on)
        expect_close(as_float64(got).norm(dim=-1), as_float64(x).norm(dim=-1), check, on,
                     slack=10.0)


# ------------------------------------------------------------------------- follow-ups


@title(N_("RoPE in float64"))
@pytest.mark.followup
def test_rope_float64(impl):
    """float64 in, float64 out (angles as good as float32's at least), both pairings."""
    check_rope(impl, b=2, h=2, n=5, d=8, seed=600, dtype=torch.float64)
    check_rope(impl, b=2, h=3, n=4, d=6, seed=610, dtype=torch.float64, interleaved=True,
               positions=make_positions("rows", 2, 4, 611))


@title(N_("RoPE at long positions"))
@pytest.mark.followup
def test_rope_long_positions(impl):
    """Positions in the thousands and up to 10^6 (long contexts), graded with float32
    angles' tolerance."""
    far = torch.tensor([4093, 4094, 4095, 4096])
    check_rope(impl, b=1, h=2, n=4, d=16, seed=700, positions=far)
    check_rope(impl, b=2, h=1, n=4, d=16, seed=710, interleaved=True,
               positions=torch.stack([far, far + 20_000]), base=500000.0)
    check_rope(impl, b=1, h=1, n=3, d=64, seed=720,
               positions=torch.tensor([999_998, 999_999, 1_000_000]), dtype=torch.float64)


@title(N_("RoPE's gradients"))
@pytest.mark.followup
def test_rope_gradients(impl):
    """The gradient with respect to x is the upstream gradient rotated back (by -θ), for
    both pairings and in float32 and float64."""
    for i, (inter, dtype) in enumerate(((False, torch.float32), (True, torch.float64))):
        base_x = randn(2, 2, 4, 8, seed=800 + i, dtype=dtype)
        positions = make_positions("rows", 2, 4, 810 + i)
        (x,) = leaf_copies(base_x)
        on = f"{describe_inputs(x=x)}, {describe_positions(positions)}, interleaved={inter}"
        out = impl.call(impl.attr("apply_rope"), x, positions, interleaved=inter,
                        what="apply_rope", on=on)
        check = _("backward: the gradient of x")
        if not isinstance(out, Tensor) or out.shape != x.shape:
            raise verdict(check, on, [_("expected a tensor {shape} to backpropagate through",
                                        shape=tuple(x.shape))])
        if not out.requires_grad:
            raise verdict(check, on, [_("the output does not track gradients: is it detached, "
                                        "computed under torch.no_grad(), or rebuilt with .data?")])
        upstream = randn(*x.shape, seed=820 + i, dtype=dtype)
        (grad,) = torch.autograd.grad((out * upstream).sum(), [x], allow_unused=True)
        if grad is None:
            raise verdict(check, on, [_("expected a gradient, got None")])
        # d/dx of <rotate(x), g> is g rotated back: the reference rotation by -θ.
        expected, angle = rope_reference(upstream, positions, interleaved=inter, sign=-1.0)
        expect_rotated(grad, expected, angle, pair_radius(upstream, inter), dtype, "cpu",
                       check, on)


@title(N_("float16 and bfloat16 on the CPU"))
@pytest.mark.followup
def test_rope_half_precision(impl):
    """float16 and bfloat16 on the CPU (rotary embedding is elementwise: it runs there too)
    keep their dtype, at positions in the hundreds and thousands, where angles computed in
    the half dtype itself are already off by a large fraction of a radian; both pairings.
    Graded with the dtype's own tolerance on top of float32 angles'."""
    for dtype in (torch.float16, torch.bfloat16):
        for i, inter in enumerate((None, True)):
            positions = torch.arange(6)[None, :] + torch.tensor([[300], [1500]])
            check_rope(impl, b=2, h=2, n=6, d=16, seed=950 + i, dtype=dtype,
                       interleaved=inter, positions=positions)


@title(N_("half precision on a CUDA GPU"))
@pytest.mark.followup
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_rope_half_precision_on_cuda(impl):
    """float16 and bfloat16 on the GPU keep their dtype and device."""
    for dtype in (torch.float16, torch.bfloat16):
        for inter in (False, True):
            check_rope(impl, b=2, h=2, n=5, d=8, seed=900, dtype=dtype, device="cuda",
                       interleaved=inter, positions=make_positions("rows", 2, 5, 901))
