"""Reference solution for kata 15: a Llama decoder block, in Hugging Face's names."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class RMSNorm(nn.Module):
    """x / sqrt(mean(x², dim=-1) + eps) * weight over the last axis; weight (dim,), ones.

    No mean is subtracted and there is no bias. Half-precision inputs are normalised in
    float32 (their squares overflow float16 above |x| = 256), cast back, and only then
    multiplied by the weight: Hugging Face's LlamaRMSNorm, in its order.
    """

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: Tensor) -> Tensor:
        wide = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
        normed = wide * torch.rsqrt(wide.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return self.weight * normed.to(x.dtype)  # cast back first, then the weight


class SwiGLU(nn.Module):
    """down_proj(silu(gate_proj(x)) * up_proj(x)): Llama's MLP, no biases."""

    def __init__(self, dim: int, hidden_dim: int):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden_dim, bias=False)
        self.up_proj = nn.Linear(dim, hidden_dim, bias=False)
        self.down_proj = nn.Linear(hidden_dim, dim, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


def rope_cos_sin(positions: Tensor, head_dim: int, base: float, dtype: torch.dtype
                 ) -> tuple[Tensor, Tensor]:
    """cos and sin (*positions.shape, head_dim) for the rotate-half pairing (i, i + d/2).

    The angles p * base^(-2i/d) are computed in float64 (exact enough at any position),
    then cos and sin are cast to x's dtype.
    """
    pair = torch.arange(head_dim // 2, dtype=torch.float64, device=positions.device)
    angles = positions.to(torch.float64)[..., None] * base ** (-2 * pair / head_dim)
    angles = torch.cat((angles, angles), dim=-1)  # column i and i + d/2 share an angle
    return angles.cos().to(dtype), angles.sin().to(dtype)


def rotate_half(x: Tensor) -> Tensor:
    """(x1, x2) -> (-x2, x1), halves of the last axis."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class LlamaAttention(nn.Module):
    """Causal grouped-query self-attention with RoPE on queries and keys.

    q_proj, o_proj: dim -> dim; k_proj, v_proj: dim -> num_kv_heads * head_dim (no biases);
    head_dim = dim // num_heads. Query head j reads kv head j // (num_heads // num_kv_heads).
    """

    def __init__(self, dim: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = dim // num_heads
        self.rope_base = rope_base
        self.q_proj = nn.Linear(dim, num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(dim, num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(dim, num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(num_heads * self.head_dim, dim, bias=False)

    def forward(self, x: Tensor, positions: Tensor | None = None) -> Tensor:
        """x (b, n, dim) -> (b, n, dim); positions None (0 ... n-1), (n,) or (b, n)."""
        b, n, _ = x.shape
        h, kv, d = self.num_heads, self.num_kv_heads, self.head_dim
        q = self.q_proj(x).view(b, n, h, d).transpose(1, 2)  # (b, h, n, d)
        k = self.k_proj(x).view(b, n, kv, d).transpose(1, 2)  # (b, kv, n, d)
        v = self.v_proj(x).view(b, n, kv, d).transpose(1, 2)  # (b, kv, n, d)

        if positions is None:
            positions = torch.arange(n, device=x.device)
        cos, sin = rope_cos_sin(positions, d, self.rope_base, x.dtype)  # (n, d) or (b, n, d)
        if cos.dim() == 3:  # one row of positions per sequence: broadcast over the heads
            cos, sin = cos[:, None], sin[:, None]  # (b, 1, n, d)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin  # values are never rotated

        group = h // kv  # kv head g serves query heads g*group ... g*group + group-1
        k = k.repeat_interleave(group, dim=1)  # (b, h, n, d)
        v = v.repeat_interleave(group, dim=1)

        scores = q @ k.transpose(-2, -1) / math.sqrt(d)  # (b, h, n, n)
        # By sequence index, whatever the positions: query i sees keys 0 ... i.
        future = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(diagonal=1)
        weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
        attended = (weights @ v).transpose(1, 2).reshape(b, n, h * d)  # (b, n, dim)
        return self.o_proj(attended)


class LlamaBlock(nn.Module):
    """Pre-norm decoder block: h = x + self_attn(input_layernorm(x), positions);
    out = h + mlp(post_attention_layernorm(h)). The state dict is LlamaDecoderLayer's."""

    def __init__(self, dim: int, num_heads: int, num_kv_heads: int, hidden_dim: int,
                 rope_base: float = 10000.0, eps: float = 1e-6):
        super().__init__()
        self.input_layernorm = RMSNorm(dim, eps)
        self.self_attn = LlamaAttention(dim, num_heads, num_kv_heads, rope_base)
        self.post_attention_layernorm = RMSNorm(dim, eps)
        self.mlp = SwiGLU(dim, hidden_dim)

    def forward(self, x: Tensor, positions: Tensor | None = None) -> Tensor:
        h = x + self.self_attn(self.input_layernorm(x), positions)
        return h + self.mlp(self.post_attention_layernorm(h))
