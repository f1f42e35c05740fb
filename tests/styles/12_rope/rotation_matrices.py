"""Style: one 2x2 rotation matrix per pair and position, applied with einsum; pairs
gathered with reshape (interleaved) or unflatten + transpose (halves)."""

from __future__ import annotations

import torch


def rope_angles(positions, head_dim, base=10000.0):
    exponents = torch.linspace(0.0, 1.0, head_dim // 2 + 1, dtype=torch.float64)[:-1]
    exponents = exponents.to(positions.device)  # 2i / head_dim for i = 0 ... d/2 - 1
    return (positions[..., None].to(torch.float64) / base ** exponents).to(torch.float32)


def apply_rope(x, positions=None, base=10000.0, interleaved=False):
    b, h, n, d = x.shape
    if positions is None:
        positions = torch.arange(n, device=x.device).expand(b, n)
    elif positions.dim() == 1:
        positions = positions.expand(b, n)
    i = torch.arange(d // 2, dtype=torch.float64, device=x.device)
    theta = positions[..., None].double() * base ** (-2 * i / d)  # (b, n, d/2), float64
    c, s = theta.cos(), theta.sin()
    rot = torch.stack((torch.stack((c, -s), -1), torch.stack((s, c), -1)), -2)  # (b, n, d/2, 2, 2)
    if interleaved:
        pairs = x.reshape(b, h, n, d // 2, 2)
    else:
        pairs = x.unflatten(-1, (2, d // 2)).transpose(-1, -2)  # (b, h, n, d/2, 2)
    out = torch.einsum("bnpij,bhnpj->bhnpi", rot.to(x.dtype), pairs)
    if interleaved:
        return out.reshape(b, h, n, d)
    return out.transpose(-1, -2).reshape(b, h, n, d)
