"""Style: Meta's Llama - the rotation as complex multiplication by e^(iθ) (torch.polar),
pairs read as complex numbers (view_as_complex), in complex64 or complex128 to match x."""

from __future__ import annotations

import math

import torch


def rope_angles(positions, head_dim, base=10000.0):
    i = torch.arange(head_dim // 2, dtype=torch.float64, device=positions.device)
    freqs = torch.exp(-2.0 * i / head_dim * math.log(base))
    return torch.outer(positions.reshape(-1).double(), freqs).reshape(
        *positions.shape, head_dim // 2).to(torch.float32)


def apply_rope(x, positions=None, base=10000.0, interleaved=False):
    b, h, n, d = x.shape
    if positions is None:
        positions = torch.arange(n, device=x.device)
    angles = rope_angles(positions, d, base)
    if angles.dim() == 3:
        angles = angles[:, None]
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    rotation = torch.polar(torch.ones_like(angles, dtype=work), angles.to(work))
    xw = x.to(work)
    if interleaved:
        z = torch.view_as_complex(xw.reshape(b, h, n, d // 2, 2).contiguous())
        return torch.view_as_real(z * rotation).flatten(-2).to(x.dtype)
    z = torch.complex(xw[..., : d // 2], xw[..., d // 2:])
    z = z * rotation
    return torch.cat((z.real, z.imag), dim=-1).to(x.dtype)
