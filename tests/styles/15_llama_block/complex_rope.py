"""Style: RoPE with complex numbers on the half-split pairing - feature i and i + d/2 are
the real and imaginary parts of one complex number, turned by multiplying with
exp(i·θ) from torch.polar - and the kv heads widened with expand + reshape."""

import math

import torch
from torch import nn
from torch.nn import functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        dtype = x.dtype
        if dtype in (torch.float16, torch.bfloat16):
            x = x.float()
        rms = x.pow(2).mean(dim=-1, keepdim=True).add(self.eps).sqrt()
        return ((x / rms) * self.weight).to(dtype)


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden_dim, bias=False)
        self.up_proj = nn.Linear(dim, hidden_dim, bias=False)
        self.down_proj = nn.Linear(hidden_dim, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


def rotate(t, turn):
    """t (..., d) real, turn (..., d/2) complex unit numbers."""
    half = t.shape[-1] // 2
    z = torch.complex(t[..., :half].float() if t.dtype in (torch.float16, torch.bfloat16) else t[..., :half],
                      t[..., half:].float() if t.dtype in (torch.float16, torch.bfloat16) else t[..., half:])
    z = z * turn
    return torch.cat((z.real, z.imag), dim=-1).to(t.dtype)


class LlamaAttention(nn.Module):
    def __init__(self, dim, num_heads, num_kv_heads, rope_base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_dim = dim // num_heads
        self.rope_base = rope_base
        self.q_proj = nn.Linear(dim, dim, bias=False)
        self.k_proj = nn.Linear(dim, num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(dim, num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(dim, dim, bias=False)

    def forward(self, x, positions=None):
        b, n, dim = x.shape
        h, kv, d = self.num_heads, self.num_kv_heads, self.head_dim
        if positions is None:
            positions = torch.arange(n, device=x.device)
        freqs = 1.0 / self.rope_base ** (torch.arange(0, d, 2, device=x.device, dtype=torch.float64) / d)
        theta = torch.outer(positions.reshape(-1).double(), freqs).reshape(*positions.shape, d // 2)
        real = torch.float64 if x.dtype == torch.float64 else torch.float32
        turn = torch.polar(torch.ones_like(theta, dtype=real), theta.to(real))
        if turn.dim() == 3:
            turn = turn[:, None]  # (b, 1, n, d/2)
        q = rotate(self.q_proj(x).view(b, n, h, d).transpose(1, 2), turn)
        k = rotate(self.k_proj(x).view(b, n, kv, d).transpose(1, 2), turn)
        v = self.v_proj(x).view(b, n, kv, d).transpose(1, 2)
        k = k[:, :, None].expand(b, kv, h // kv, n, d).reshape(b, h, n, d)
        v = v[:, :, None].expand(b, kv, h // kv, n, d).reshape(b, h, n, d)
        scores = q @ k.transpose(-1, -2) / math.sqrt(d)
        causal = torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~causal, torch.finfo(scores.dtype).min)
        out = scores.softmax(-1) @ v
        return self.o_proj(out.transpose(1, 2).reshape(b, n, dim))


class LlamaBlock(nn.Module):
    def __init__(self, dim, num_heads, num_kv_heads, hidden_dim, rope_base=10000.0, eps=1e-6):
        super().__init__()
        self.input_layernorm = RMSNorm(dim, eps)
        self.self_attn = LlamaAttention(dim, num_heads, num_kv_heads, rope_base)
        self.post_attention_layernorm = RMSNorm(dim, eps)
        self.mlp = SwiGLU(dim, hidden_dim)

    def forward(self, x, positions=None):
        h = x + self.self_attn(self.input_layernorm(x), positions)
        return h + self.mlp(self.post_attention_layernorm(h))
