"""Kata 24 reference: an int8 (or packed int4) key/value cache with symmetric absmax scales
per (batch, head, position)."""

from __future__ import annotations

import math

import torch


def quantize(x: torch.Tensor, dim: int | None = -1, bits: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric absmax quantisation: codes int8 in [-qmax, qmax], scale float32 (dim of size 1)."""
    qmax = 2 ** (bits - 1) - 1
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    xf = x.to(work)
    if dim is None:
        amax = xf.abs().amax().reshape([1] * x.dim())
    else:
        amax = xf.abs().amax(dim=dim, keepdim=True)
    scale = (amax / qmax).to(torch.float32)
    safe = torch.where(scale > 0, scale, torch.ones_like(scale)).to(work)
    codes = torch.round(xf / safe).clamp(-qmax, qmax).to(torch.int8)
    return codes, scale


def dequantize(codes: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """codes * scale (scale broadcast), in float32 (float64 for float64), returned in dtype."""
    work = torch.float64 if dtype == torch.float64 else torch.float32
    return (codes.to(work) * scale.to(work)).to(dtype)


def pack_int4(codes: torch.Tensor) -> torch.Tensor:
    """(..., d) int8 codes in [-8, 7] -> (..., d/2) uint8: element 2j low nibble, 2j+1 high."""
    c = codes.to(torch.int16) & 0xF
    return (c[..., 0::2] | (c[..., 1::2] << 4)).to(torch.uint8)


def unpack_int4(packed: torch.Tensor) -> torch.Tensor:
    """(..., d/2) uint8 -> (..., d) int8, nibbles sign-extended."""
    p = packed.to(torch.int16)
    nib = torch.stack([p & 0xF, (p >> 4) & 0xF], dim=-1).flatten(-2)
    return torch.where(nib >= 8, nib - 16, nib).to(torch.int8)


class QuantizedKVCache:
    """Keys and values stored as int8 codes (packed int4 with bits=4) and float32 scales."""

    def __init__(self, bits: int = 8) -> None:
        self.bits = bits
        self.k_codes: list[torch.Tensor] = []
        self.k_scales: list[torch.Tensor] = []
        self.v_codes: list[torch.Tensor] = []
        self.v_scales: list[torch.Tensor] = []

    def _store(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        codes, scale = quantize(x, dim=-1, bits=self.bits)
        if self.bits == 4:
            codes = pack_int4(codes)
        return codes, scale

    def append(self, k: torch.Tensor, v: torch.Tensor) -> None:
        kc, ks = self._store(k)
        vc, vs = self._store(v)
        self.k_codes.append(kc)
        self.k_scales.append(ks)
        self.v_codes.append(vc)
        self.v_scales.append(vs)

    def _codes(self, parts: list[torch.Tensor]) -> torch.Tensor:
        codes = torch.cat(parts, dim=2)
        return unpack_int4(codes) if self.bits == 4 else codes

    def dequantized(self, dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
        k = dequantize(self._codes(self.k_codes), torch.cat(self.k_scales, dim=2), dtype)
        v = dequantize(self._codes(self.v_codes), torch.cat(self.v_scales, dim=2), dtype)
        return k, v

    def attention(self, q: torch.Tensor) -> torch.Tensor:
        k, v = self.dequantized(q.dtype)
        t, s = q.size(-2), k.size(-2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        blocked = torch.ones(t, s, dtype=torch.bool, device=q.device).triu(diagonal=s - t + 1)
        scores = scores.masked_fill(blocked, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v
