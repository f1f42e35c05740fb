"""Style: einsum for every product, the causal mask from explicit positions (query at
s + i, key at j, blocked when j > s + i) as an additive float mask, an empty cache made
up front so that there is one code path."""

from __future__ import annotations

import torch
from torch import nn


class CausalSelfAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, bias=True):
        super().__init__()
        self.h, self.d = num_heads, embed_dim // num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)

    def forward(self, x, cache=None):
        b, t, e = x.shape
        q, k, v = (p(x).unflatten(-1, (self.h, self.d)) for p in (self.q_proj, self.k_proj, self.v_proj))
        k, v = (y.permute(0, 2, 1, 3) for y in (k, v))  # (b, h, t, d)
        if cache is None:
            cache = (k.new_zeros(b, self.h, 0, self.d), v.new_zeros(b, self.h, 0, self.d))
        k = torch.cat((cache[0], k), dim=-2)
        v = torch.cat((cache[1], v), dim=-2)
        s = k.shape[-2] - t
        scores = torch.einsum("bqhd,bhkd->bhqk", q, k) * self.d ** -0.5
        query_pos = torch.arange(s, s + t, device=x.device)
        key_pos = torch.arange(s + t, device=x.device)
        future = key_pos[None, :] > query_pos[:, None]
        bias = torch.zeros(t, s + t, dtype=x.dtype, device=x.device).masked_fill(future, float("-inf"))
        weights = (scores + bias).softmax(dim=-1)
        out = torch.einsum("bhqk,bhkd->bqhd", weights, v).flatten(2)
        return self.out_proj(out), (k, v)
