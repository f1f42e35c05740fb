"""Reference solution for kata 12: rotary position embedding (RoPE)."""

from __future__ import annotations

import torch
from torch import Tensor


def _angles64(positions: Tensor, head_dim: int, base: float) -> Tensor:
    """angle[..., i] = p * base^(-2i / head_dim), float64, shape (*positions.shape, head_dim // 2)."""
    pair = torch.arange(head_dim // 2, dtype=torch.float64, device=positions.device)
    inv_freq = base ** (-2.0 * pair / head_dim)
    return positions.to(torch.float64)[..., None] * inv_freq


def rope_angles(positions: Tensor, head_dim: int, base: float = 10000.0) -> Tensor:
    """The rotation angles, float32, shape (*positions.shape, head_dim // 2).

    angle[..., i] = position * base^(-2i / head_dim), computed in float64 and cast: a
    float32 product would be off by up to about 1.5 float32 steps at position 10^6 (most
    angles by less than one step, but the grader asks for the exactly rounded angle).
    """
    return _angles64(torch.as_tensor(positions), head_dim, base).to(torch.float32)


def apply_rope(x: Tensor, positions: Tensor | None = None, base: float = 10000.0,
               interleaved: bool = False) -> Tensor:
    """Rotate each pair of features of x (b, h, n, d) by the angle of its position.

    positions: None (0 ... n-1), or an int tensor (n,) or (b, n). The pairs are
    (i, i + d/2) ("rotate half", GPT-NeoX / Hugging Face), or (2i, 2i+1) with
    interleaved=True (RoFormer / Meta's Llama). Returns x's dtype and shape.
    """
    b, h, n, d = x.shape
    if positions is None:
        positions = torch.arange(n, device=x.device)
    angles = _angles64(torch.as_tensor(positions, device=x.device), d, base)  # (n | b n, d/2)
    if angles.dim() == 3:
        angles = angles[:, None]  # (b, 1, n, d/2): the same positions for every head
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    if interleaved:
        x1, x2 = x[..., 0::2], x[..., 1::2]
    else:
        x1, x2 = x[..., : d // 2], x[..., d // 2:]
    y1 = x1 * cos - x2 * sin
    y2 = x1 * sin + x2 * cos
    if interleaved:
        return torch.stack((y1, y2), dim=-1).flatten(-2)
    return torch.cat((y1, y2), dim=-1)
