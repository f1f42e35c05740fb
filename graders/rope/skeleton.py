"""Kata 12: rotary position embedding (RoPE).

Read README.md in this folder, fill in the two functions below, then run
    pytest katas/12_rope
"""

from __future__ import annotations

import torch  # noqa: F401
from torch import Tensor


def rope_angles(positions: Tensor, head_dim: int, base: float = 10000.0) -> Tensor:
    """The rotation angles, float32, shape (*positions.shape, head_dim // 2).

    angle[..., i] = position * base^(-2i / head_dim) for pair i = 0 ... head_dim/2 - 1,
    computed in float64 and then cast to float32 (exact at positions up to 10^6).
    positions is an integer tensor of any shape.
    """
    raise NotImplementedError("see katas/12_rope/README.md")


def apply_rope(x: Tensor, positions: Tensor | None = None, base: float = 10000.0,
               interleaved: bool = False) -> Tensor:
    """Rotate each pair of features of x (b, h, n, d), d even, by its position's angle.

    positions: None (= 0 ... n-1), or an integer tensor (n,) (shared by the batch) or
    (b, n) (one row per batch element). Pair i is (x1, x2) = (x[..., i], x[..., i + d/2])
    by default ("rotate half"), or (x[..., 2i], x[..., 2i+1]) with interleaved=True; it
    becomes (x1 cos θ - x2 sin θ, x1 sin θ + x2 cos θ) with θ = angle[position, i].
    Returns a tensor of x's shape (b, h, n, d) and dtype.
    """
    raise NotImplementedError("see katas/12_rope/README.md")
