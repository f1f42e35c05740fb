"""Style: explicit loops over the query heads and einsum, the RoPE angles from
exp(-log(base) * 2i / d) in float32 (as accurate as float32 angles, which the contract
allows), and the rotation written pair by pair."""

import math

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        work = x.float() if x.element_size() < 4 else x
        ms = torch.einsum("...i,...i->...", work, work)[..., None] / work.shape[-1]
        return (work / torch.sqrt(ms + self.eps) * self.weight).to(x.dtype)


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden_dim, bias=False)
        self.up_proj = nn.Linear(dim, hidden_dim, bias=False)
        self.down_proj = nn.Linear(hidden_dim, dim, bias=False)

    def forward(self, x):
        g = torch.einsum("...i,hi->...h", x, self.gate_proj.weight)
        u = torch.einsum("...i,hi->...h", x, self.up_proj.weight)
        return torch.einsum("...h,oh->...o", g / (1 + torch.exp(-g)) * u, self.down_proj.weight)


class LlamaAttention(nn.Module):
    def __init__(self, dim, num_heads, num_kv_heads, rope_base=10000.0):
        super().__init__()
        self.dim, self.num_heads, self.num_kv_heads = dim, num_heads, num_kv_heads
        self.head_dim = dim // num_heads
        self.rope_base = rope_base
        self.q_proj = nn.Linear(dim, dim, bias=False)
        self.k_proj = nn.Linear(dim, num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(dim, num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(dim, dim, bias=False)

    def rope(self, t, positions):
        """t (b, n, d) one head; positions (n,) or (b, n)."""
        d = self.head_dim
        half = d // 2
        i = torch.arange(half, device=t.device, dtype=torch.float32)
        inv = torch.exp(-math.log(self.rope_base) * 2 * i / d)
        theta = positions.to(torch.float32)[..., None] * inv  # (n, d/2) or (b, n, d/2)
        cos, sin = theta.cos().to(t.dtype), theta.sin().to(t.dtype)
        out = torch.empty_like(t)
        out = torch.cat([t[..., :half] * cos - t[..., half:] * sin,
                         t[..., :half] * sin + t[..., half:] * cos], dim=-1)
        return out

    def forward(self, x, positions=None):
        b, n, _ = x.shape
        d, group = self.head_dim, self.num_heads // self.num_kv_heads
        if positions is None:
            positions = torch.arange(n, device=x.device)
        q_all, k_all, v_all = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        blocked = torch.triu(torch.ones(n, n, dtype=torch.bool, device=x.device), 1)
        heads = []
        for j in range(self.num_heads):
            g = j // group
            q = self.rope(q_all[..., j * d:(j + 1) * d], positions)
            k = self.rope(k_all[..., g * d:(g + 1) * d], positions)
            v = v_all[..., g * d:(g + 1) * d]
            scores = torch.einsum("bqd,bkd->bqk", q, k) / math.sqrt(d)
            weights = torch.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1)
            heads.append(torch.einsum("bqk,bkd->bqd", weights, v))
        return self.o_proj(torch.cat(heads, dim=-1))


class LlamaBlock(nn.Module):
    def __init__(self, dim, num_heads, num_kv_heads, hidden_dim, rope_base=10000.0, eps=1e-6):
        super().__init__()
        self.input_layernorm = RMSNorm(dim, eps=eps)
        self.self_attn = LlamaAttention(dim, num_heads, num_kv_heads, rope_base=rope_base)
        self.post_attention_layernorm = RMSNorm(dim, eps=eps)
        self.mlp = SwiGLU(dim, hidden_dim)

    def forward(self, x, positions=None):
        attended = self.self_attn(self.input_layernorm(x), positions)
        h = x + attended
        return h + self.mlp(self.post_attention_layernorm(h))
