"""Kata 13 in another style: einsum, kv heads widened with expand + reshape, an additive mask."""

import math

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, num_kv_heads, bias=False):
        super().__init__()
        self.h, self.kv, self.d = num_heads, num_kv_heads, embed_dim // num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.k_proj = nn.Linear(embed_dim, num_kv_heads * self.d, bias=bias)
        self.v_proj = nn.Linear(embed_dim, num_kv_heads * self.d, bias=bias)
        self.o_proj = nn.Linear(embed_dim, embed_dim, bias=bias)

    def _widen(self, t):
        # (b, n, kv*d) -> (b, kv, n, d) -> (b, kv, group, n, d) -> (b, h, n, d): kv head g
        # feeds query heads g*group .. g*group + group - 1.
        b, n, _ = t.shape
        t = t.unflatten(-1, (self.kv, self.d)).permute(0, 2, 1, 3)
        return t[:, :, None].expand(b, self.kv, self.h // self.kv, n, self.d).reshape(b, self.h, n, self.d)

    def forward(self, x, attn_mask=None, is_causal=False):
        b, n, e = x.shape
        q = self.q_proj(x).unflatten(-1, (self.h, self.d))  # (b, n, h, d)
        k, v = self._widen(self.k_proj(x)), self._widen(self.v_proj(x))
        scores = torch.einsum("bihd,bhjd->bhij", q, k) / math.sqrt(self.d)
        bias = torch.zeros((), dtype=x.dtype, device=x.device)
        if attn_mask is not None:
            if attn_mask.dtype == torch.bool:
                bias = torch.zeros(attn_mask.shape, dtype=x.dtype, device=x.device).masked_fill(
                    attn_mask, float("-inf"))
            else:
                bias = attn_mask
        if is_causal:
            bias = bias + torch.full((n, n), float("-inf"), dtype=x.dtype, device=x.device).triu(1)
        scores = scores + bias
        dead = torch.isneginf(scores).all(-1, keepdim=True)
        weights = torch.where(dead, 0.0, torch.softmax(torch.where(dead, 0.0, scores), dim=-1))
        out = torch.einsum("bhij,bhjd->bihd", weights, v).reshape(b, n, e)
        return self.o_proj(out)


def kv_cache_bytes(batch_size, seq_len, num_layers, embed_dim, num_heads, num_kv_heads,
                   dtype=torch.float16):
    per_token = 2 * num_kv_heads * (embed_dim // num_heads) * dtype.itemsize
    return batch_size * seq_len * num_layers * per_token
