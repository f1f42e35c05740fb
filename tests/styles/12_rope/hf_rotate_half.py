"""Style: Hugging Face's Llama - inv_freq = 1 / base ** (arange(0, d, 2) / d) in float64,
full-width cos/sin tables (cat(freqs, freqs)) from the float32 angles, x * cos +
rotate_half(x) * sin; interleaved pairs handled by permuting them into halves and back."""

from __future__ import annotations

import torch


def rope_angles(positions, head_dim, base=10000.0):
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    return (positions.double().unsqueeze(-1) * inv_freq.to(positions.device)).float()


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x, positions=None, base=10000.0, interleaved=False):
    n, d = x.shape[-2], x.shape[-1]
    if positions is None:
        positions = torch.arange(n, device=x.device)
    freqs = rope_angles(positions, d, base)
    emb = torch.cat((freqs, freqs), dim=-1)
    if emb.dim() == 3:
        emb = emb.unsqueeze(1)
    cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
    if not interleaved:
        return x * cos + rotate_half(x) * sin
    perm = torch.cat((torch.arange(0, d, 2), torch.arange(1, d, 2))).to(x.device)
    halves = x[..., perm]
    out = halves * cos + rotate_half(halves) * sin
    return out[..., torch.argsort(perm)]
