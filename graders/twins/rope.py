"""RoPE in float64, with a switch per way of getting it wrong (kata 12's reference, which
kata 15's Llama block reuses).

angle = p * base^(-2i/d), and each pair (x1, x2) - (i, i + d/2) by default, (2i, 2i+1) with
interleaved=True - rotated to (x1 cos - x2 sin, x1 sin + x2 cos). :func:`rope_reference`
writes the rotation as ``x * cos + partner(x) * sin`` over full-width tables.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

# The ways of getting the frequencies wrong that inv_frequencies models.
WRONG_FREQUENCIES = ("i/d", "4i/d", "inverted", "precedence", "precedence-2i", "linspace",
                     "log-divided")


def inv_frequencies(head_dim: int, base: float, frequency: str = "ok") -> Tensor:
    """base^(-2i/d) for i = 0 ... d/2-1 in float64, or a wrong-frequency variant:
    "i/d" (the 2 forgotten), "4i/d" (arange(0, d, 2) doubled again), "inverted" (no minus),
    "precedence" (``base ** -2 * i / d``, i.e. i / (d base^2)), "precedence-2i"
    (``base ** (-2 * i) / d``), "linspace" (exponents ``linspace(0, 1, d // 2)``, the end
    included, instead of 2i/d), "log-divided" (``exp(-(2i/d) / log(base))``: the exponent
    divided by log base where base^x = exp(x log base) multiplies by it)."""
    pair = torch.arange(head_dim // 2, dtype=torch.float64)
    if frequency == "precedence":
        return base ** -2.0 * pair / head_dim
    if frequency == "precedence-2i":
        return base ** (-2.0 * pair) / head_dim
    if frequency == "log-divided":
        return torch.exp(-(2.0 * pair / head_dim) / math.log(base))
    if frequency == "linspace":
        return base ** -torch.linspace(0.0, 1.0, head_dim // 2, dtype=torch.float64)
    exponent = {"ok": -2.0 * pair, "i/d": -pair, "4i/d": -4.0 * pair,
                "inverted": 2.0 * pair}[frequency] / head_dim
    return base ** exponent


def angles64(positions: Tensor, head_dim: int, base: float, frequency: str = "ok") -> Tensor:
    """(*positions.shape, d/2) float64 on the CPU."""
    return positions.to("cpu", torch.float64)[..., None] * inv_frequencies(head_dim, base, frequency)


def partner(x: Tensor, interleaved: bool) -> Tensor:
    """The rotation's other half: (x1, x2) -> (-x2, x1) in every pair ("rotate_half")."""
    if interleaved:
        return torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def written_in_other_layout(y: Tensor, interleaved: bool) -> Tensor:
    """y (..., d) laid out in one pairing's layout (pairs (2i, 2i+1) when ``interleaved``,
    else (i, i + d/2)), its pairs written back in the other's: what rotating the pairs read
    one way and concatenating (or interleaving) them the other way gives."""
    if interleaved:
        return torch.cat((y[..., 0::2], y[..., 1::2]), dim=-1)
    y1, y2 = y.chunk(2, dim=-1)
    return torch.stack((y1, y2), dim=-1).flatten(-2)


def full_width(angles: Tensor, interleaved: bool) -> Tensor:
    """(..., d/2) per-pair angles -> (..., d), each column its pair's angle."""
    if interleaved:
        return angles.repeat_interleave(2, dim=-1)
    return torch.cat((angles, angles), dim=-1)


def position_angles(x: Tensor, positions: Tensor | None, base: float, frequency: str = "ok",
                    ignore_positions: str = "") -> Tensor:
    """Per-pair angles broadcastable to x (b, h, n, d): (n, d/2) or (b, 1, n, d/2).

    ignore_positions: "arange" (0 ... n-1 instead of the positions given), "first-row"
    (batch row 0's positions for every row)."""
    n, d = x.shape[-2:]
    if positions is None or ignore_positions == "arange":
        positions = torch.arange(n)
    elif ignore_positions == "first-row" and positions.dim() == 2:
        positions = positions[0]
    angles = angles64(positions, d, base, frequency)
    return angles[:, None] if angles.dim() == 3 else angles


def rope_reference(x: Tensor, positions: Tensor | None = None, base: float = 10000.0,
                   interleaved: bool = False, *, rotate: bool | None = None,
                   table: bool | None = None, frequency: str = "ok", sign: float = 1.0,
                   swap: bool = False, ignore_positions: str = "",
                   written_back: bool | None = None) -> tuple[Tensor, Tensor]:
    """RoPE of x (b, h, n, d) in float64 (CPU) and the angle behind each output value.

    ``rotate`` and ``table`` say which pairing the rotation uses and which one the cos/sin
    table is laid out for (both ``interleaved`` when right); ``written_back`` the layout the
    rotated pairs are written back in (``rotate``'s when right: pairs read as neighbours
    but concatenated as halves give the right values with the features permuted);
    ``frequency``, ``sign`` (-1: rotation reversed), ``swap`` (cos and sin exchanged) and
    ``ignore_positions`` switch on the other mistakes.
    """
    rotate = interleaved if rotate is None else rotate
    table = interleaved if table is None else table
    x64 = x.detach().to("cpu", torch.float64)
    angle = full_width(position_angles(x64, positions, base, frequency, ignore_positions), table)
    cos, sin = torch.cos(angle), sign * torch.sin(angle)
    if swap:
        cos, sin = sin, cos
    out, angle = x64 * cos + partner(x64, rotate) * sin, torch.broadcast_to(angle, x64.shape)
    if written_back is not None and written_back != rotate:
        return written_in_other_layout(out, rotate), written_in_other_layout(angle, rotate)
    return out, angle


def describe_positions(positions: Tensor | None, shown: int = 6) -> str:
    """positions as a report shows them: dtype (but int64), shape and the first ``shown`` values."""
    if positions is None:
        return "positions None"
    values = positions.flatten()[:shown].tolist()
    more = ", ..." if positions.numel() > shown else ""
    dtype = "" if positions.dtype == torch.int64 else f" {str(positions.dtype)[6:]}"
    return f"positions{dtype} {tuple(positions.shape)} [{', '.join(map(str, values))}{more}]"
