"""Kata 23, absorbed path with the heads folded into the query rows and SDPA: queries
(b, h·t, r + d_r) against [c_kv; k_rope] (b, s + t, r + d_r), the mask repeated over the heads
((h·t, s + t): the scores' size per batch element, allowed by the memory rule)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def apply_rope(x: torch.Tensor, start: int, base: float) -> torch.Tensor:
    """DeepSeek's RoPE of x (b, t, ..., d_r): adjacent pairs (2i, 2i+1) of the token at
    position start + a rotated by (start + a) * base^(-2i/d_r)."""
    b, t, d = x.shape[0], x.shape[1], x.shape[-1]
    inv_freq = base ** (-torch.arange(0, d, 2, dtype=torch.float32, device=x.device) / d)
    positions = torch.arange(start, start + t, dtype=torch.float32, device=x.device)
    angles = torch.outer(positions, inv_freq)  # (t, d/2)
    angles = angles.view(t, *([1] * (x.dim() - 3)), d // 2)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, hidden_size: int, num_heads: int, kv_lora_rank: int,
                 qk_nope_head_dim: int, qk_rope_head_dim: int, v_head_dim: int,
                 q_lora_rank: int | None = None, rope_base: float = 10000.0,
                 eps: float = 1e-6) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.qk_nope_head_dim = qk_nope_head_dim
        self.qk_rope_head_dim = qk_rope_head_dim
        self.v_head_dim = v_head_dim
        self.q_lora_rank = q_lora_rank
        self.rope_base = rope_base
        qk_head_dim = qk_nope_head_dim + qk_rope_head_dim
        if q_lora_rank is None:
            self.q_proj = nn.Linear(hidden_size, num_heads * qk_head_dim, bias=False)
        else:
            self.q_a_proj = nn.Linear(hidden_size, q_lora_rank, bias=False)
            self.q_a_layernorm = nn.RMSNorm(q_lora_rank, eps=eps)
            self.q_b_proj = nn.Linear(q_lora_rank, num_heads * qk_head_dim, bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(hidden_size, kv_lora_rank + qk_rope_head_dim,
                                            bias=False)
        self.kv_a_layernorm = nn.RMSNorm(kv_lora_rank, eps=eps)
        self.kv_b_proj = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim),
                                   bias=False)
        self.o_proj = nn.Linear(num_heads * v_head_dim, hidden_size, bias=False)
        self.scaling = qk_head_dim ** -0.5

    def forward(self, x: torch.Tensor, cache=None, absorbed: bool = False):
        b, t, _ = x.shape
        h, r = self.num_heads, self.kv_lora_rank
        d_n, d_r, d_v = self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim
        s = 0 if cache is None else cache[0].size(1)

        if self.q_lora_rank is None:
            q = self.q_proj(x)
        else:
            q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x)))
        q = q.view(b, t, h, d_n + d_r)
        q_nope, q_rope = q[..., :d_n], q[..., d_n:]
        q_rope = apply_rope(q_rope, s, self.rope_base)  # (b, t, h, d_r)

        kv_a = self.kv_a_proj_with_mqa(x)
        c_kv = self.kv_a_layernorm(kv_a[..., :r])  # (b, t, r)
        k_rope = apply_rope(kv_a[..., r:], s, self.rope_base)  # (b, t, d_r)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)  # (b, s + t, r)
            k_rope = torch.cat([cache[1], k_rope], dim=1)  # (b, s + t, d_r)

        blocked = torch.ones(t, s + t, dtype=torch.bool, device=x.device).triu(diagonal=s + 1)
        w = self.kv_b_proj.weight.view(h, d_n + d_v, r)
        w_uk, w_uv = w[:, :d_n], w[:, d_n:]  # (h, d_n, r), (h, d_v, r)
        if absorbed:
            q_latent = torch.einsum("bthn,hnr->bhtr", q_nope, w_uk)
            qq = torch.cat([q_latent, q_rope.transpose(1, 2)], -1).reshape(b, h * t, r + d_r)
            kk = torch.cat([c_kv, k_rope], -1)
            mask = (~blocked).repeat(h, 1)
            o_latent = F.scaled_dot_product_attention(qq, kk, c_kv, attn_mask=mask, scale=self.scaling)
            o = torch.einsum("bhtr,hvr->bthv", o_latent.view(b, h, t, r), w_uv)
        else:
            kv = self.kv_b_proj(c_kv).view(b, s + t, h, d_n + d_v)
            k_nope, v = kv[..., :d_n], kv[..., d_n:]  # (b, s + t, h, d_n), (.., d_v)
            k = torch.cat([k_nope, k_rope[:, :, None].expand(b, s + t, h, d_r)], dim=-1)
            q_full = torch.cat([q_nope, q_rope], dim=-1)
            scores = torch.einsum("bthd,bshd->bhts", q_full, k) * self.scaling
            probs = torch.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1)
            o = torch.einsum("bhts,bshv->bthv", probs, v)
        return self.o_proj(o.reshape(b, t, h * d_v)), (c_kv, k_rope)
