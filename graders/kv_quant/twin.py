"""Kata 24's twin: the reference quantiser, packer and quantised-cache attention, each with one
switch per catalogued mistake, so that a check can compute what a mistake produces on its own
inputs and name it by matching.
"""

from __future__ import annotations

import torch
from torch import Tensor

from graders.twins.attention import dense

# quantize switches -> slug
QUANTIZE_MISTAKES: dict[str, str] = {
    "amax/128": "scale-wrong-range",
    "amax/255": "scale-wrong-range",
    "amax/256": "scale-wrong-range",
    "2amax/255": "scale-wrong-range",
    "no-clamp": "int8-overflow",
    "truncate": "truncation-not-rounding",
    "per-tensor": "scale-wrong-axis",
    "other-axis": "scale-wrong-axis",
    "scale-int8": "scale-wrong-dtype",
    "scale-half": "scale-wrong-dtype",
    "int4-amax/8": "int4-range",
    "int4-offset": "int4-range",
    # asymmetric min/max: scale (max - min) / (2^bits - 1), a rounded zero point, codes over
    # the full signed range [-2^(bits-1), 2^(bits-1) - 1] or over [-qmax, qmax]
    "asymmetric": "asymmetric-zero-point",
    "asymmetric-qmax": "asymmetric-zero-point",
}
PACK_MISTAKES = {"swapped": "nibbles-swapped"}
UNPACK_MISTAKES = {"swapped": "nibbles-swapped", "no-sign": "nibble-not-sign-extended"}
ATTENTION_MISTAKES = {
    "raw-codes": "scale-not-applied",
    "no-key-scale": "scale-not-applied",
    "no-value-scale": "scale-not-applied",
    "key-scale-after-softmax": "key-scale-after-softmax",
    "query-quantised": "query-quantised",
    "mask-top-left": "causal-mask-offset",
    "no-mask": "causal-mask-offset",
    "dequant-divides": "dequant-divides",
    "scales-half": "scale-wrong-dtype",  # the cache keeps its scales in float16
    # keys and values quantised asymmetrically, read back as codes * scale (the zero point
    # lost), or with it: (codes - zero) * scale
    "asymmetric": "asymmetric-zero-point",
    "asymmetric-qmax": "asymmetric-zero-point",
    "asymmetric:zero": "asymmetric-zero-point",
    "asymmetric-qmax:zero": "asymmetric-zero-point",
}


def work_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def quantize(x: Tensor, dim: int | None = -1, bits: int = 8,
             mistake: str | None = None) -> tuple[Tensor, Tensor]:
    qmax = 2 ** (bits - 1) - 1
    xf = x.to(work_dtype(x.dtype))
    if mistake == "per-tensor":
        dim = None
    elif mistake == "other-axis":
        dim = -2 if dim == -1 else -1
    if mistake in ("asymmetric", "asymmetric-qmax"):
        return asymmetric(xf, dim, bits, mistake)[:2]
    amax = (xf.abs().amax().reshape([1] * x.dim()) if dim is None
            else xf.abs().amax(dim=dim, keepdim=True))
    divisor = {"amax/128": 128.0, "no-clamp": 128.0, "amax/255": 255.0, "amax/256": 256.0,
               "2amax/255": 127.5, "int4-amax/8": 8.0}.get(mistake or "", float(qmax))
    scale = (amax / divisor).to(torch.float32)
    if mistake == "scale-int8":
        scale = scale.round().to(torch.int8)
    elif mistake == "scale-half":
        scale = scale.to(torch.float16)
    safe = torch.where(scale > 0, scale, torch.ones_like(scale)).to(xf.dtype)
    ratio = xf / safe
    if mistake == "truncate":
        return ratio.to(torch.int8), scale
    codes = torch.round(ratio)
    if mistake == "no-clamp":
        return codes.to(torch.int32).to(torch.int8), scale  # wraps: 128 -> -128
    if mistake == "int4-amax/8":
        return codes.clamp(-8, 7).to(torch.int8), scale
    codes = codes.clamp(-qmax, qmax)
    if mistake == "int4-offset":
        codes = codes + 8
    return codes.to(torch.int8), scale


def asymmetric(xf: Tensor, dim: int | None, bits: int, mistake: str = "asymmetric"
               ) -> tuple[Tensor, Tensor, Tensor]:
    """Min/max quantisation: (codes int8, scale float32, zero point) with x ~ (codes - zero) ·
    scale; "asymmetric" uses the 2^bits levels -2^(bits-1) ... 2^(bits-1) - 1,
    "asymmetric-qmax" the 2·qmax + 1 levels -qmax ... qmax."""
    qmax = 2 ** (bits - 1) - 1
    low = -qmax - 1 if mistake == "asymmetric" else -qmax
    if dim is None:
        lo, hi = xf.amin().reshape([1] * xf.dim()), xf.amax().reshape([1] * xf.dim())
    else:
        lo, hi = xf.amin(dim=dim, keepdim=True), xf.amax(dim=dim, keepdim=True)
    scale = ((hi - lo) / (qmax - low)).to(torch.float32)
    safe = torch.where(scale > 0, scale, torch.ones_like(scale)).to(xf.dtype)
    zero = low - torch.round(lo / safe)
    codes = (torch.round(xf / safe) + zero).clamp(low, qmax)
    return codes.to(torch.int8), scale, zero


def ratio_of(x: Tensor, scale: Tensor) -> Tensor:
    """x / scale as the reference computes it (for the ties the grader accepts either way)."""
    xf = x.to(work_dtype(x.dtype))
    return xf / torch.where(scale > 0, scale, torch.ones_like(scale)).to(xf.dtype)


def dequantize(codes: Tensor, scale: Tensor, dtype: torch.dtype = torch.float32,
               mistake: str | None = None) -> Tensor:
    w = work_dtype(dtype)
    if mistake == "dequant-divides":
        s = scale.to(w)
        return (codes.to(w) / torch.where(s != 0, s, torch.ones_like(s))).to(dtype)
    return (codes.to(w) * scale.to(w)).to(dtype)


def pack_int4(codes: Tensor, mistake: str | None = None) -> Tensor:
    c = codes.to(torch.int16) & 0xF
    low, high = (c[..., 1::2], c[..., 0::2]) if mistake == "swapped" else (c[..., 0::2], c[..., 1::2])
    return (low | (high << 4)).to(torch.uint8)


def unpack_int4(packed: Tensor, mistake: str | None = None) -> Tensor:
    p = packed.to(torch.int16)
    pair = [(p >> 4) & 0xF, p & 0xF] if mistake == "swapped" else [p & 0xF, (p >> 4) & 0xF]
    nib = torch.stack(pair, dim=-1).flatten(-2)
    if mistake != "no-sign":
        nib = torch.where(nib >= 8, nib - 16, nib)
    return nib.to(torch.int8)


def cached_attention(q: Tensor, k: Tensor, v: Tensor, bits: int = 8,
                     mistake: str | None = None) -> Tensor:
    """Attention of the last t_q positions, q (b, h, t_q, d), over k, v (b, h, s, d)
    quantised per token: (b, h, t_q, d) in q's dtype (the attention in float64)."""
    dt = q.dtype
    w = work_dtype(dt)
    kc, ks = quantize(k, -1, bits)
    vc, vs = quantize(v, -1, bits)
    if mistake == "raw-codes":
        ks, vs = torch.ones_like(ks), torch.ones_like(vs)
    elif mistake == "no-key-scale":
        ks = torch.ones_like(ks)
    elif mistake == "no-value-scale":
        vs = torch.ones_like(vs)
    elif mistake == "scales-half":
        ks, vs = ks.half().float(), vs.half().float()
    dq = "dequant-divides" if mistake == "dequant-divides" else None
    kk = dequantize(kc, ks, dt, dq)
    vv = dequantize(vc, vs, dt, dq)
    if mistake and mistake.startswith("asymmetric"):
        scheme, _, with_zero = mistake.partition(":")

        def stored(x: Tensor) -> Tensor:
            codes, scale, zero = asymmetric(x.to(w), -1, bits, scheme)
            return ((codes.to(w) - (zero if with_zero else 0)) * scale.to(w)).to(dt)
        kk, vv = stored(k), stored(v)
    if mistake == "query-quantised":
        qc, qs = quantize(q, -1, bits)
        q = dequantize(qc, qs, dt)
    if mistake == "key-scale-after-softmax":
        # The weights times each key's scale, w_ij · ks_j, are the softmax's weights over
        # values scaled per key: (w · ksᵀ) vv = w (ks · vv).
        kk, vv = kc.to(w).to(dt), vv * ks.to(dt)
    return dense(q, kk, vv, causal=mistake != "no-mask",
                 offset=0 if mistake == "mask-top-left" else None).to(dt)
