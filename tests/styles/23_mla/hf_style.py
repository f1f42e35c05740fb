"""A Hugging Face DeepseekV3Attention-style MLA: (b, h, t, d) via view/transpose, matmul,
a float32 softmax, RoPE by complex multiplication (DeepSeek's reference code); the absorbed
path packs the heads into the query rows, (b, h*t, r) @ (b, r, s) (FlashMLA's packing)."""

import math

import torch
import torch.nn.functional as F
from torch import nn


def rotate(x, start, base):  # x (b, t, ..., d): adjacent pairs as complex numbers
    t, d = x.shape[1], x.shape[-1]
    freqs = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    angles = torch.outer(torch.arange(start, start + t, dtype=torch.float64), freqs)
    rot = torch.polar(torch.ones_like(angles), angles).view(t, *([1] * (x.dim() - 3)), d // 2)
    xc = torch.view_as_complex(x.to(torch.float64).reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(xc * rot).flatten(-2).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, hidden_size, num_heads, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, q_lora_rank=None, rope_base=10000.0, eps=1e-6):
        super().__init__()
        self.num_heads, self.kv_lora_rank, self.q_lora_rank = num_heads, kv_lora_rank, q_lora_rank
        self.qk_nope_head_dim, self.qk_rope_head_dim = qk_nope_head_dim, qk_rope_head_dim
        self.v_head_dim, self.rope_base = v_head_dim, rope_base
        self.qk_head_dim = qk_nope_head_dim + qk_rope_head_dim
        if q_lora_rank is None:
            self.q_proj = nn.Linear(hidden_size, num_heads * self.qk_head_dim, bias=False)
        else:
            self.q_a_proj = nn.Linear(hidden_size, q_lora_rank, bias=False)
            self.q_a_layernorm = nn.RMSNorm(q_lora_rank, eps=eps)
            self.q_b_proj = nn.Linear(q_lora_rank, num_heads * self.qk_head_dim, bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(hidden_size, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_a_layernorm = nn.RMSNorm(kv_lora_rank, eps=eps)
        self.kv_b_proj = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.o_proj = nn.Linear(num_heads * v_head_dim, hidden_size, bias=False)
        self.scaling = self.qk_head_dim ** (-0.5)

    def forward(self, hidden_states, cache=None, absorbed=False):
        bsz, q_len, _ = hidden_states.shape
        h, r = self.num_heads, self.kv_lora_rank
        nope, rope, vd = self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim
        past = 0 if cache is None else cache[0].shape[1]
        if self.q_lora_rank is None:
            q = self.q_proj(hidden_states)
        else:
            q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(hidden_states)))
        q = q.view(bsz, q_len, h, self.qk_head_dim).transpose(1, 2)  # (b, h, t, d_qk)
        q_pass, q_rot = torch.split(q, [nope, rope], dim=-1)
        q_rot = rotate(q_rot.transpose(1, 2), past, self.rope_base).transpose(1, 2)
        compressed = self.kv_a_proj_with_mqa(hidden_states)
        k_pass, k_rot = torch.split(compressed, [r, rope], dim=-1)
        k_pass = self.kv_a_layernorm(k_pass)
        k_rot = rotate(k_rot, past, self.rope_base)
        if cache is not None:
            k_pass = torch.cat((cache[0], k_pass), dim=1)
            k_rot = torch.cat((cache[1], k_rot), dim=1)
        kv_len = k_pass.shape[1]
        mask = torch.full((q_len, kv_len), float("-inf"), dtype=q.dtype).triu(past + 1)
        if not absorbed:
            kv = self.kv_b_proj(k_pass).view(bsz, kv_len, h, nope + vd).transpose(1, 2)
            k_nope, value_states = torch.split(kv, [nope, vd], dim=-1)
            k = torch.cat((k_nope, k_rot[:, None].expand(-1, h, -1, -1)), dim=-1)
            qs = torch.cat((q_pass, q_rot), dim=-1)
            attn = torch.matmul(qs, k.transpose(2, 3)) * self.scaling + mask
            attn = F.softmax(attn, dim=-1, dtype=torch.float32).to(q.dtype)
            out = torch.matmul(attn, value_states)  # (b, h, t, d_v)
        else:
            w = self.kv_b_proj.weight.view(h, nope + vd, r)
            q_lat = torch.matmul(q_pass, w[:, :nope])  # (b, h, t, r)
            packed = torch.cat((q_lat, q_rot), dim=-1).reshape(bsz, h * q_len, r + rope)
            keys = torch.cat((k_pass, k_rot), dim=-1)  # (b, s, r + d_r)
            scores = torch.bmm(packed, keys.transpose(1, 2)).view(bsz, h, q_len, kv_len)
            attn = F.softmax(scores * self.scaling + mask, dim=-1, dtype=torch.float32).to(q.dtype)
            o_lat = torch.bmm(attn.reshape(bsz, h * q_len, kv_len), k_pass).view(bsz, h, q_len, r)
            out = torch.matmul(o_lat, w[:, nope:].transpose(1, 2))  # (b, h, t, d_v)
        out = out.transpose(1, 2).reshape(bsz, q_len, h * vd)
        return self.o_proj(out), (k_pass, k_rot)
