"""Style: GPT-2 / nanoGPT's way - one fused qkv product (the three weights stacked on the
fly), a lower-triangular mask kept as a buffer and sliced at rows s..s+t-1, manual
softmax, heads merged with permute + reshape."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class CausalSelfAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, bias=True, max_len=64):
        super().__init__()
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        # As in GPT-2: 1 where attending is allowed; (1, 1, max_len, max_len).
        self.register_buffer("bias", torch.tril(torch.ones(max_len, max_len))[None, None])

    def forward(self, x, cache=None):
        b, t, e = x.shape
        h = self.num_heads
        weight = torch.cat([self.q_proj.weight, self.k_proj.weight, self.v_proj.weight])
        bias = None
        if self.q_proj.bias is not None:
            bias = torch.cat([self.q_proj.bias, self.k_proj.bias, self.v_proj.bias])
        q, k, v = F.linear(x, weight, bias).split(e, dim=2)
        q, k, v = (y.reshape(b, t, h, e // h).permute(0, 2, 1, 3) for y in (q, k, v))
        if cache is not None:
            past_k, past_v = cache
            k, v = torch.cat((past_k, k), dim=2), torch.cat((past_v, v), dim=2)
        total = k.size(2)
        s = total - t
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, s:total, :total] == 0, float("-inf"))
        att = att - att.amax(dim=-1, keepdim=True)
        att = att.exp() / att.exp().sum(dim=-1, keepdim=True)
        y = (att @ v).permute(0, 2, 1, 3).reshape(b, t, e)
        return self.out_proj(y), (k, v)
