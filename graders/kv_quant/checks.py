"""Grader for kata 24: an int8 (and packed int4) key/value cache with symmetric absmax scales.

Every check computes the expected result with :mod:`graders.kv_quant.twin` and, on a mismatch,
what each catalogued mistake would produce on the same inputs, naming the one that matches.
Codes are compared exactly, except where x / scale lies within 1e-3 of a half-integer (either
neighbour passes: ties are not graded); scales to a relative 1e-5.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import Tensor
from torch.utils._pytree import tree_leaves

from graders.core.compare import expect_close
from graders.core.i18n import N_, _
from graders.core.implementation import Implementation
from graders.core.inputs import randn
from graders.core.memory import kept_storages
from graders.core.mistakes import Suspect
from graders.core.report import describe_inputs, describe_value, title, verdict
from graders.core import torch_shortcuts
from graders.kv_quant import twin

__all__ = [
    "test_quantize_per_token_float64",
    "test_quantize_per_token_float32",
    "test_quantize_other_axes",
    "test_error_bound",
    "test_zero_slices",
    "test_dequantize_float64",
    "test_dequantize_float32",
    "test_cache_attention_int8",
    "test_cache_memory_int8",
    "test_int4_quantize",
    "test_pack_unpack",
    "test_cache_attention_int4",
    "test_cache_memory_int4",
]

DTYPES = (torch.float64, torch.float32)


class NonFinite(torch_shortcuts.GradingDispatchMode):
    """Records the first op whose floating-point output holds a NaN or an inf."""

    def __init__(self) -> None:
        super().__init__()
        self.first: str | None = None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if self.first is None:
            for out in tree_leaves(result):
                if (isinstance(out, Tensor) and out.is_floating_point() and out.numel()
                        and not bool(torch.isfinite(out).all())):
                    self.first = str(func.overloadpacket)
        return result


def sample(shape: tuple[int, ...], seed: int, dtype: torch.dtype) -> Tensor:
    """Normal values whose every slice has amax >= 0.1 (the contract's graded range)."""
    return randn(*shape, seed=seed, dtype=dtype) * 1.5 + 0.0


def codes_match(got: Any, expected: Tensor, ratio: Tensor) -> bool:
    if not isinstance(got, Tensor) or got.shape != expected.shape or got.dtype != torch.int8:
        return False
    diff = (got.to(torch.int32) - expected.to(torch.int32)).abs()
    tie = ((ratio - ratio.floor()) - 0.5).abs() < 1e-3
    return bool(((diff == 0) | (tie & (diff <= 1))).all())


def scales_match(got: Any, expected: Tensor) -> bool:
    return (isinstance(got, Tensor) and got.shape == expected.shape and got.dtype == torch.float32
            and bool(torch.allclose(got.double(), expected.double(), rtol=1e-5, atol=1e-12)))


def quantize_suspect(x: Tensor, dim, bits: int, switch: str) -> Suspect:
    codes, scale = twin.quantize(x, dim, bits, switch)
    ratio = twin.ratio_of(x, scale.float() if scale.dtype != torch.float32 else scale)

    def matches(got: Any) -> bool:
        if not (isinstance(got, tuple) and len(got) == 2 and isinstance(got[1], Tensor)):
            return False
        same_scale = (isinstance(got[1], Tensor) and got[1].shape == scale.shape
                      and got[1].dtype == scale.dtype
                      and bool(torch.allclose(got[1].double(), scale.double(), rtol=1e-5)))
        return same_scale and codes_match(got[0], codes, ratio)

    return Suspect(twin.QUANTIZE_MISTAKES[switch], matches=matches)


def overflow_slug(got: Any, qmax: int) -> str | None:
    if isinstance(got, tuple) and len(got) == 2 and isinstance(got[0], Tensor):
        c = got[0].to(torch.int32)
        if qmax == 127 and bool((c < -127).any()):
            return "int8-overflow"
        if qmax == 7 and bool(((c < -7) | (c > 7)).any()):
            return "int4-range"
    return None


def check_quantize(impl: Implementation, x: Tensor, dim, bits: int, check: str) -> tuple:
    on = describe_inputs(x=x) + f", dim={dim}, bits={bits}"
    got = impl.call(impl.attr("quantize"), x.clone(), dim=dim, bits=bits, what="quantize", on=on)
    codes, scale = twin.quantize(x, dim, bits)
    ratio = twin.ratio_of(x, scale)
    ok = (isinstance(got, tuple) and len(got) == 2 and codes_match(got[0], codes, ratio)
          and scales_match(got[1], scale))
    if ok:
        return got
    slug = None  # a mistake computed first; the overflow test only when none reproduces got
    for switch in twin.QUANTIZE_MISTAKES:
        if switch.startswith("int4") and bits != 4:
            continue
        suspect = quantize_suspect(x, dim, bits, switch)
        if suspect.matches(got):
            slug = suspect.slug
            break
    if slug is None:
        slug = overflow_slug(got, 2 ** (bits - 1) - 1)
    if slug is None and isinstance(got, tuple) and len(got) == 2 and isinstance(got[1], Tensor):
        if got[1].dtype != torch.float32 and got[1].shape == scale.shape:
            slug = "scale-wrong-dtype"
        elif got[1].shape != scale.shape:
            slug = "scale-wrong-axis"
    details = [_("expected codes {codes} and scale {scale}", codes=describe_value(codes),
                 scale=describe_value(scale))]
    if isinstance(got, tuple) and len(got) == 2:
        details.append(_("got codes {codes} and scale {scale}", codes=describe_value(got[0]),
                         scale=describe_value(got[1])))
    else:
        details.append(_("got {value}", value=describe_value(got)))
    raise verdict(check, on, details, slug)


# ------------------------------------------------------------------------------ core

def quantize_per_token(impl: Implementation, dtype: torch.dtype) -> None:
    for seed, shape in enumerate(((2, 3, 5, 16), (1, 2, 7, 8), (3, 1, 4, 32))):
        check_quantize(impl, sample(shape, seed, dtype), -1, 8, _("quantize(x, dim=-1)"))


@pytest.mark.core
@title(N_("quantize per token, float64 x: int8 codes and float32 scales"))
def test_quantize_per_token_float64(impl: Implementation) -> None:
    quantize_per_token(impl, torch.float64)


@pytest.mark.core
@title(N_("quantize per token, float32 x: int8 codes and float32 scales"))
def test_quantize_per_token_float32(impl: Implementation) -> None:
    quantize_per_token(impl, torch.float32)


@pytest.mark.core
@title(N_("quantize per channel and per tensor"))
def test_quantize_other_axes(impl: Implementation) -> None:
    x = sample((2, 2, 6, 8), 11, torch.float64)
    x[..., 3] *= 20.0  # an outlier channel
    check_quantize(impl, x, -2, 8, _("quantize(x, dim=-2)"))
    check_quantize(impl, x, None, 8, _("quantize(x, dim=None)"))


@pytest.mark.core
@title(N_("the error bound |x - dequantize(quantize(x))| <= scale / 2"))
def test_error_bound(impl: Implementation) -> None:
    x = sample((2, 3, 6, 16), 21, torch.float64)
    on = describe_inputs(x=x)
    codes, scale = impl.call(impl.attr("quantize"), x.clone(), what="quantize", on=on)
    back = impl.call(impl.attr("dequantize"), codes, scale, torch.float64, what="dequantize",
                     on=on)
    expected = twin.dequantize(*twin.quantize(x), torch.float64)
    suspects = [Suspect("dequant-divides",
                        lambda: twin.dequantize(*twin.quantize(x), torch.float64, "dequant-divides"))]
    suspects += [Suspect(twin.QUANTIZE_MISTAKES[m],
                         lambda m=m: twin.dequantize(*twin.quantize(x, -1, 8, m), torch.float64))
                 for m in ("truncate", "amax/128", "amax/255", "scale-half", "no-clamp",
                           "asymmetric", "asymmetric-qmax")]
    if isinstance(back, Tensor) and back.shape == x.shape:
        err = (x - back.double()).abs()
        if bool((err <= scale.double() / 2 * (1 + 1e-6) + 1e-12).all()):
            return
    expect_close(back, expected, _("dequantize(quantize(x)) within scale / 2 of x"), on,
                 suspects)
    raise verdict(_("dequantize(quantize(x)) within scale / 2 of x"), on,
                  [_("an element is further than half a step from x")], None)


@pytest.mark.core
@title(N_("all-zero slices: codes 0, exact zeros back, no NaN on the way"))
def test_zero_slices(impl: Implementation) -> None:
    x = sample((2, 2, 5, 8), 31, torch.float32)
    x[0, 1, 2] = 0.0
    x[1, :, 4] = 0.0
    on = describe_inputs(x=x) + _(" with all-zero rows")
    recorder = NonFinite()
    with recorder:
        got = impl.call(impl.attr("quantize"), x.clone(), what="quantize", on=on)
    if recorder.first is not None:
        raise verdict(_("quantize on all-zero rows"), on, [
            _("a tensor computed by {op} holds a NaN or an inf", op=recorder.first),
            _("divide by the scale only where it is non-zero (torch.where(scale > 0, scale, 1))"),
        ], "nan-on-zero-rows")
    codes, scale = twin.quantize(x)
    ratio = twin.ratio_of(x, scale)
    if not (isinstance(got, tuple) and len(got) == 2 and codes_match(got[0], codes, ratio)):
        asymmetric = [quantize_suspect(x, -1, 8, m) for m in ("asymmetric", "asymmetric-qmax")]
        raise verdict(_("quantize on all-zero rows"), on,
                      [_("got {value}", value=describe_value(got))],
                      next((sus.slug for sus in asymmetric if sus.matches(got)), None))
    back = impl.call(impl.attr("dequantize"), got[0], got[1], what="dequantize", on=on)
    expect_close(back, twin.dequantize(codes, scale), _("dequantize on all-zero rows"), on)


def dequantize_to(impl: Implementation, dtype: torch.dtype) -> None:
    x = sample((2, 3, 4, 8), 41, torch.float64)
    codes, scale = twin.quantize(x)
    on = describe_inputs(codes=codes, scale=scale) + f", dtype={dtype}"
    got = impl.call(impl.attr("dequantize"), codes.clone(), scale.clone(), dtype,
                    what="dequantize", on=on)
    expect_close(got, twin.dequantize(codes, scale, dtype), _("dequantize(codes, scale)"), on,
                 [Suspect("dequant-divides",
                          lambda: twin.dequantize(codes, scale, dtype, "dequant-divides"))])


@pytest.mark.core
@title(N_("dequantize to float64: codes times scale, computed in float64"))
def test_dequantize_float64(impl: Implementation) -> None:
    dequantize_to(impl, torch.float64)


@pytest.mark.core
@title(N_("dequantize to float32: codes times scale, computed in float32"))
def test_dequantize_float32(impl: Implementation) -> None:
    dequantize_to(impl, torch.float32)


@pytest.mark.followup
@title(N_("quantize with bits=4: codes in [-7, 7]"))
def test_int4_quantize(impl: Implementation) -> None:
    for dtype in DTYPES:
        check_quantize(impl, sample((2, 2, 5, 8), 51, dtype), -1, 4,
                       _("quantize(x, dim=-1, bits=4)"))


@pytest.mark.followup
@title(N_("pack_int4 and unpack_int4: low nibble first, sign-extended"))
def test_pack_unpack(impl: Implementation) -> None:
    examples = [torch.tensor([1, 2, 3, 4], dtype=torch.int8),
                torch.tensor([-1, 7, 3, -8], dtype=torch.int8),
                torch.randint(-8, 8, (2, 3, 4, 8), generator=torch.Generator().manual_seed(61),
                              dtype=torch.int8)]
    for codes in examples:
        on = describe_inputs(codes=codes)
        packed = impl.call(impl.attr("pack_int4"), codes.clone(), what="pack_int4", on=on)
        expect_close(packed, twin.pack_int4(codes), _("pack_int4(codes)"), on,
                     [Suspect("nibbles-swapped", lambda c=codes: twin.pack_int4(c, "swapped"))])
        ref = twin.pack_int4(codes)
        on = describe_inputs(packed=ref)
        got = impl.call(impl.attr("unpack_int4"), ref.clone(), what="unpack_int4", on=on)
        expect_close(got, codes, _("unpack_int4(packed)"), on, [
            Suspect("nibbles-swapped", lambda r=ref: twin.unpack_int4(r, "swapped")),
            Suspect("nibble-not-sign-extended", lambda r=ref: twin.unpack_int4(r, "no-sign"))])


def run_cache(impl: Implementation, k: Tensor, v: Tensor, bits: int, chunks: tuple[int, ...],
              on: str) -> Any:
    cache = impl.call(impl.attr("QuantizedKVCache"), bits, what="QuantizedKVCache", on=on)
    start = 0
    for t in chunks:
        impl.call(cache.append, k[:, :, start:start + t].clone(), v[:, :, start:start + t].clone(),
                  what="append", on=on)
        start += t
    return cache


def cache_attention(impl: Implementation, bits: int) -> None:
    for dtype, (b, h, s, d), chunks, t_q in ((torch.float64, (2, 2, 6, 8), (3, 1, 2), 3),
                                            (torch.float32, (1, 3, 5, 16), (1, 1, 1, 1, 1), 1),
                                            (torch.float64, (2, 1, 4, 8), (4,), 4)):
        k = sample((b, h, s, d), 71, dtype)
        v = sample((b, h, s, d), 72, dtype)
        q = sample((b, h, t_q, d), 73, dtype)
        on = describe_inputs(k=k, v=v, q=q) + _(", bits={bits}, appended {chunks} positions "
                                                "at a time", bits=bits, chunks=list(chunks))
        cache = run_cache(impl, k, v, bits, chunks, on)
        got = impl.call(cache.attention, q.clone(), what="attention", on=on)
        suspects = [Suspect(slug, lambda m=m: twin.cached_attention(q, k, v, bits, m))
                    for m, slug in twin.ATTENTION_MISTAKES.items()]
        expect_close(got, twin.cached_attention(q, k, v, bits),
                     _("cache.attention(q)"), on, suspects)


@pytest.mark.core
@title(N_("QuantizedKVCache(bits=8).attention against attention over the dequantised cache"))
def test_cache_attention_int8(impl: Implementation) -> None:
    cache_attention(impl, 8)


@pytest.mark.followup
@title(N_("QuantizedKVCache(bits=4).attention, codes packed: against the dequantised cache"))
def test_cache_attention_int4(impl: Implementation) -> None:
    cache_attention(impl, 4)


@pytest.mark.core
@title(N_("the memory the cache keeps with bits=8: int8 codes and float32 scales only"))
def test_cache_memory_int8(impl: Implementation) -> None:
    cache_memory(impl, 8)


@pytest.mark.followup
@title(N_("the memory the cache keeps with bits=4: packed uint8 codes and float32 scales only"))
def test_cache_memory_int4(impl: Implementation) -> None:
    cache_memory(impl, 4)


def cache_memory(impl: Implementation, bits: int) -> None:
    b, h, s, d = 2, 2, 8, 16
    k = sample((b, h, s, d), 81, torch.float32)
    v = sample((b, h, s, d), 82, torch.float32)
    on = describe_inputs(k=k, v=v) + _(", bits={bits}, appended 1 position at a time",
                                       bits=bits)
    cache = run_cache(impl, k, v, bits, (1,) * s, on)
    kept = kept_storages(cache, "cache")
    check = _("the memory the cache keeps after {s} appends", s=s)
    for st in kept:
        if st.floating and st.elements and st.shape[-1:] == (d,):
            raise verdict(check, on, [
                _("it keeps a floating-point tensor {path} of shape {shape}", path=st.path,
                  shape=st.shape),
                _("keep only int8/uint8 codes and float32 scales; dequantise when attending"),
            ], "cache-stores-float")
    nbytes = 0
    for st in kept:
        nbytes += st.elements * (4 if st.floating else 1)
    limit = 2 * (2 * b * h * s * (d * bits // 8 + 4))
    if nbytes > limit:
        raise verdict(check, on, [
            _("its attributes keep {count} bytes alive; the bound is {limit}",
              count=f"{nbytes:,}", limit=f"{limit:,}")], "cache-stores-float")
    if bits == 4:
        for st in kept:
            if not st.floating and st.shape and st.shape[-1] == d:
                raise verdict(check, on, [
                    _("it keeps codes {path} of shape {shape}: with bits=4 store them packed, "
                      "d/2 bytes per position", path=st.path, shape=st.shape)], "int4-range")
