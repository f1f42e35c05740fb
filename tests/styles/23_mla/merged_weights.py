"""MLA with the absorbed path's weights merged: W_UK folded into the query projection
(q_proj or q_b_proj) and W_UV into o_proj, recomputed per call from the parameters;
F.scaled_dot_product_attention with scale= and a may-attend bool mask in the naive path."""

import torch
import torch.nn.functional as F
from torch import nn


def rope(x, start, base):
    d = x.shape[-1]
    inv = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    ang = (torch.arange(start, start + x.shape[1], dtype=torch.float64)[:, None] * inv)
    ang = ang.view(x.shape[1], *([1] * (x.dim() - 3)), d // 2)
    c, s_ = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    a, b = x[..., ::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., ::2], out[..., 1::2] = a * c - b * s_, a * s_ + b * c
    return out


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, hidden_size, num_heads, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, q_lora_rank=None, rope_base=10000.0, eps=1e-6):
        super().__init__()
        self.h, self.r, self.dn, self.dr, self.dv = (num_heads, kv_lora_rank, qk_nope_head_dim,
                                                     qk_rope_head_dim, v_head_dim)
        self.base, self.q_lora_rank = rope_base, q_lora_rank
        dqk = qk_nope_head_dim + qk_rope_head_dim
        if q_lora_rank is None:
            self.q_proj = nn.Linear(hidden_size, num_heads * dqk, bias=False)
        else:
            self.q_a_proj = nn.Linear(hidden_size, q_lora_rank, bias=False)
            self.q_a_layernorm = nn.RMSNorm(q_lora_rank, eps=eps)
            self.q_b_proj = nn.Linear(q_lora_rank, num_heads * dqk, bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(hidden_size, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_a_layernorm = nn.RMSNorm(kv_lora_rank, eps=eps)
        self.kv_b_proj = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.o_proj = nn.Linear(num_heads * v_head_dim, hidden_size, bias=False)

    def forward(self, x, cache=None, absorbed=False):
        b, t, _ = x.shape
        h, r, dn, dr, dv = self.h, self.r, self.dn, self.dr, self.dv
        s = 0 if cache is None or cache[0].shape[1] == 0 else cache[0].shape[1]
        q_in = x if self.q_lora_rank is None else self.q_a_layernorm(self.q_a_proj(x))
        q_w = (self.q_proj if self.q_lora_rank is None else self.q_b_proj).weight.view(h, dn + dr, -1)
        ckv, kr = self.kv_a_proj_with_mqa(x).split([r, dr], dim=-1)
        ckv, kr = self.kv_a_layernorm(ckv), rope(kr, s, self.base)
        if cache is not None:
            ckv, kr = torch.cat([cache[0], ckv], 1), torch.cat([cache[1], kr], 1)
        n = s + t
        allowed = torch.ones(t, n, dtype=torch.bool).tril(diagonal=s)
        q_rope = rope(torch.einsum("bti,hdi->bthd", q_in, q_w[:, dn:]), s, self.base)
        w = self.kv_b_proj.weight.view(h, dn + dv, r)
        scale = (dn + dr) ** -0.5
        if absorbed:
            q_merged = torch.einsum("hnr,hni->hri", w[:, :dn], q_w[:, :dn])  # W_UK into q
            q_lat = torch.einsum("bti,hri->bhtr", q_in, q_merged)
            scores = (torch.einsum("bhtr,bsr->bhts", q_lat, ckv)
                      + torch.einsum("bthd,bsd->bhts", q_rope, kr)) * scale
            p = scores.masked_fill(~allowed, -1e30).softmax(-1)
            o_lat = torch.einsum("bhts,bsr->bthr", p, ckv).reshape(b, t, h * r)
            o_merged = torch.einsum("ehv,hvr->ehr", self.o_proj.weight.view(-1, h, dv),
                                    w[:, dn:]).reshape(-1, h * r)  # W_UV into o_proj
            return o_lat @ o_merged.T, (ckv, kr)
        q_nope = torch.einsum("bti,hdi->bhtd", q_in, q_w[:, :dn])
        kv = self.kv_b_proj(ckv).view(b, n, h, dn + dv).transpose(1, 2)
        k = torch.cat([kv[..., :dn], kr[:, None].expand(b, h, n, dr)], -1)
        q = torch.cat([q_nope, q_rope.transpose(1, 2)], -1)
        o = F.scaled_dot_product_attention(q, k, kv[..., dn:].contiguous(), attn_mask=allowed,
                                           scale=scale)
        return self.o_proj(o.transpose(1, 2).reshape(b, t, h * dv)), (ckv, kr)
