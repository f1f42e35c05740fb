"""Kata 14 in another style: queries tiled too (a two-level loop, as a GPU kernel does),
exponentials in base 2 as in FlashAttention-2's Triton kernel, key blocks past the
diagonal skipped, the lse converted back to natural log at the end; each tile upcast to
float32 for half inputs, as a kernel's registers are."""

from __future__ import annotations

import math

import torch
from torch import Tensor

LOG2_E = 1.4426950408889634


def flash_attention(q: Tensor, k: Tensor, v: Tensor, block_size: int = 64,
                    causal: bool = False) -> tuple[Tensor, Tensor]:
    n, m, d = q.size(2), k.size(2), q.size(3)
    qk_scale = LOG2_E / math.sqrt(d)  # scores in bits: exp(x) = 2 ** (x * log2(e))
    outputs, lses = [], []
    for q_start in range(0, n, block_size):
        q_tile = q[:, :, q_start:q_start + block_size]
        if q.dtype in (torch.float16, torch.bfloat16):
            q_tile = q_tile.float()
        rows = q_tile.size(2)
        m2 = q_tile.new_full((*q_tile.shape[:3], 1), -math.inf)
        l = q_tile.new_zeros((*q_tile.shape[:3], 1))
        acc = q_tile.new_zeros((*q_tile.shape[:3], v.size(3)))
        last_key = min(m, q_start + rows) if causal else m
        for k_start in range(0, last_key, block_size):
            k_tile = k[:, :, k_start:k_start + block_size].to(q_tile.dtype)
            s2 = (q_tile @ k_tile.transpose(-1, -2)) * qk_scale
            if causal:
                qi = torch.arange(q_start, q_start + rows, device=q.device).view(-1, 1)
                kj = torch.arange(k_start, k_start + k_tile.size(2), device=q.device).view(1, -1)
                s2 = s2.masked_fill(kj > qi, -math.inf)
            m2_new = torch.maximum(m2, s2.amax(-1, keepdim=True))
            p = torch.exp2(s2 - m2_new)
            alpha = torch.exp2(m2 - m2_new)
            l = l * alpha + p.sum(-1, keepdim=True)
            acc = acc * alpha + p @ v[:, :, k_start:k_start + block_size].to(q_tile.dtype)
            m2 = m2_new
        outputs.append(acc / l)
        lses.append(((m2 + torch.log2(l)) / LOG2_E).squeeze(-1))
    return torch.cat(outputs, dim=2).to(q.dtype), torch.cat(lses, dim=2)
