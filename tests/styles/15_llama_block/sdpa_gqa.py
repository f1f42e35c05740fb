"""Style: Llama's sdpa path - F.scaled_dot_product_attention(is_causal=True, enable_gqa=True),
a RoPE table grown on demand and kept as a plain attribute, and an RMSNorm that applies its
weight before casting back (as nn.RMSNorm does)."""

import torch
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x32 = x.float()
        out = x32 / torch.sqrt(x32.square().mean(-1, keepdim=True) + self.eps)
        return (out * self.weight.float()).type_as(x) if x.dtype != torch.float64 else \
            x / torch.sqrt(x.square().mean(-1, keepdim=True) + self.eps) * self.weight


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden_dim, bias=False)
        self.up_proj = nn.Linear(dim, hidden_dim, bias=False)
        self.down_proj = nn.Linear(hidden_dim, dim, bias=False)

    def forward(self, x):
        gate, up = self.gate_proj(x), self.up_proj(x)
        return self.down_proj(gate * torch.sigmoid(gate) * up)


class LlamaAttention(nn.Module):
    def __init__(self, dim, num_heads, num_kv_heads, rope_base=10000.0):
        super().__init__()
        self.h, self.kv, self.d = num_heads, num_kv_heads, dim // num_heads
        self.base = rope_base
        self.q_proj = nn.Linear(dim, dim, bias=False)
        self.k_proj = nn.Linear(dim, num_kv_heads * self.d, bias=False)
        self.v_proj = nn.Linear(dim, num_kv_heads * self.d, bias=False)
        self.o_proj = nn.Linear(dim, dim, bias=False)
        self.table = None  # (max position + 1, d/2) float64 angles, a plain attribute

    def angles(self, positions):
        top = int(positions.max()) + 1
        if self.table is None or self.table.shape[0] < top or self.table.device != positions.device:
            inv = self.base ** (-torch.arange(0, self.d, 2, dtype=torch.float64, device=positions.device) / self.d)
            self.table = torch.arange(max(top, 64), dtype=torch.float64, device=positions.device)[:, None] * inv
        return self.table[positions.long()]  # (..., n, d/2)

    def rope(self, t, cos, sin):
        t1, t2 = t[..., : self.d // 2], t[..., self.d // 2:]
        return torch.cat((t1 * cos - t2 * sin, t1 * sin + t2 * cos), dim=-1)

    def forward(self, x, positions=None):
        b, n, e = x.shape
        if positions is None:
            positions = torch.arange(n, device=x.device)
        theta = self.angles(positions)
        if theta.dim() == 3:
            theta = theta.unsqueeze(1)
        cos, sin = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
        q = self.rope(self.q_proj(x).view(b, n, self.h, self.d).transpose(1, 2), cos, sin)
        k = self.rope(self.k_proj(x).view(b, n, self.kv, self.d).transpose(1, 2), cos, sin)
        v = self.v_proj(x).view(b, n, self.kv, self.d).transpose(1, 2)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return self.o_proj(out.transpose(1, 2).reshape(b, n, e))


class LlamaBlock(nn.Module):
    def __init__(self, dim, num_heads, num_kv_heads, hidden_dim, rope_base=10000.0, eps=1e-6):
        super().__init__()
        self.input_layernorm = RMSNorm(dim, eps)
        self.self_attn = LlamaAttention(dim, num_heads, num_kv_heads, rope_base)
        self.post_attention_layernorm = RMSNorm(dim, eps)
        self.mlp = SwiGLU(dim, hidden_dim)

    def forward(self, x, positions=None):
        x = x + self.self_attn(self.input_layernorm(x), positions)
        return x + self.mlp(self.post_attention_layernorm(x))
