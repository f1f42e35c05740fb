"""Kata 13 in another style: no copies of k and v at all; the query heads are grouped as
(b, kv, group, n, d) and broadcast against (b, kv, 1, n, d)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, embed_dim: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = embed_dim // num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.k_proj = nn.Linear(embed_dim, num_kv_heads * self.head_dim, bias=bias)
        self.v_proj = nn.Linear(embed_dim, num_kv_heads * self.head_dim, bias=bias)
        self.o_proj = nn.Linear(embed_dim, embed_dim, bias=bias)

    def forward(self, x, attn_mask=None, is_causal=False):
        b, n, e = x.shape
        h, kv, d = self.num_heads, self.num_kv_heads, self.head_dim
        g = h // kv
        # query head j = kv_index * g + member: heads split as (kv, g), kv outermost.
        q = self.q_proj(x).reshape(b, n, kv, g, d).permute(0, 2, 3, 1, 4)  # (b, kv, g, n, d)
        k = self.k_proj(x).reshape(b, n, kv, 1, d).permute(0, 2, 3, 1, 4)  # (b, kv, 1, n, d)
        v = self.v_proj(x).reshape(b, n, kv, 1, d).permute(0, 2, 3, 1, 4)
        scores = torch.matmul(q, k.transpose(-1, -2)) * d ** -0.5  # (b, kv, g, n, n)
        blocked = torch.zeros(b, h, n, n, dtype=torch.bool, device=x.device)
        if attn_mask is not None and attn_mask.dtype == torch.bool:
            blocked = blocked | attn_mask
        if is_causal:
            blocked = blocked | torch.tril(torch.ones(n, n, dtype=torch.bool, device=x.device)).logical_not()
        blocked = blocked.reshape(b, kv, g, n, n)
        if attn_mask is not None and attn_mask.dtype != torch.bool:
            scores = scores + torch.broadcast_to(attn_mask, (b, h, n, n)).reshape(b, kv, g, n, n)
        scores = scores.masked_fill(blocked, -math.inf)
        none_left = scores.isneginf().all(dim=-1, keepdim=True)
        weights = F.softmax(scores.masked_fill(none_left, 0), dim=-1).masked_fill(none_left, 0)
        out = (weights @ v).permute(0, 3, 1, 2, 4).reshape(b, n, e)
        return self.o_proj(out)


def kv_cache_bytes(batch_size, seq_len, num_layers, embed_dim, num_heads, num_kv_heads,
                   dtype=torch.float16):
    head_dim = embed_dim // num_heads
    elements = num_layers * 2 * batch_size * num_kv_heads * seq_len * head_dim
    return elements * torch.finfo(dtype).bits // 8
