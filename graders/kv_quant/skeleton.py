"""Kata 24: A quantised KV cache.

Read README.md in this folder, fill in the functions and the class below, then run
    pytest katas/24_kv_quant
"""

from __future__ import annotations

import torch


def quantize(x: torch.Tensor, dim: int | None = -1, bits: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric absmax quantisation of x (any shape, float32 or float64).

    qmax = 2**(bits - 1) - 1 (127 for bits=8, 7 for bits=4). amax = max |x| along dim
    (kept as a size-1 axis; dim=None: the whole tensor, every axis of size 1).
    Returns (codes, scale): scale = amax / qmax, float32, shaped like x with dim of size 1;
    codes = clamp(round(x / scale), -qmax, qmax), int8, shaped like x.
    An all-zero slice gets codes 0 and no NaN or inf on the way.
    """
    raise NotImplementedError("see katas/24_kv_quant/README.md")


def dequantize(codes: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """codes * scale (scale broadcast), computed in float32 (float64 for float64), in dtype."""
    raise NotImplementedError("see katas/24_kv_quant/README.md")


def pack_int4(codes: torch.Tensor) -> torch.Tensor:
    """(..., d) int8 codes in [-8, 7], d even -> (..., d/2) uint8.

    Byte j holds element 2j in its low nibble and element 2j+1 in its high nibble.
    """
    raise NotImplementedError("see katas/24_kv_quant/README.md")


def unpack_int4(packed: torch.Tensor) -> torch.Tensor:
    """(..., d/2) uint8 -> (..., d) int8, each nibble sign-extended (nibble >= 8 is nibble - 16)."""
    raise NotImplementedError("see katas/24_kv_quant/README.md")


class QuantizedKVCache:
    """Keys and values kept as int8 codes (bits=4: packed uint8) and float32 scales per
    (batch, head, position)."""

    def __init__(self, bits: int = 8) -> None:
        self.bits = bits

    def append(self, k: torch.Tensor, v: torch.Tensor) -> None:
        """k, v: (b, h, t, d) float, t >= 1; quantise each position over d and store it."""
        raise NotImplementedError("see katas/24_kv_quant/README.md")

    def dequantized(self, dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
        """(k, v), each (b, h, s, d) in dtype: what is stored, dequantised, in position order."""
        raise NotImplementedError("see katas/24_kv_quant/README.md")

    def attention(self, q: torch.Tensor) -> torch.Tensor:
        """q: (b, h, t_q, d), the queries of the last t_q positions -> (b, h, t_q, d) in q's dtype.

        softmax(q K^T / sqrt(d) + causal mask) V over the dequantised keys and values; query a
        sits at position s - t_q + a.
        """
        raise NotImplementedError("see katas/24_kv_quant/README.md")
