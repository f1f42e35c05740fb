"""Style: one head at a time in a Python loop, the mask as the last t rows of the full
(s+t) x (s+t) causal mask, torch.where for the blocked scores, the cache rebuilt with
torch.stack over heads."""

from __future__ import annotations

import math

import torch
from torch import nn


class CausalSelfAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, bias=True):
        super().__init__()
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            setattr(self, name, nn.Linear(embed_dim, embed_dim, bias=bias))

    def forward(self, x, cache=None):
        b, t, _ = x.shape
        d = self.head_dim
        q_all, k_all, v_all = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        outs, keys, values = [], [], []
        for i in range(self.num_heads):
            cols = slice(i * d, (i + 1) * d)
            q, k, v = q_all[..., cols], k_all[..., cols], v_all[..., cols]  # (b, t, d)
            if cache is not None:
                k = torch.cat([cache[0][:, i], k], dim=1)
                v = torch.cat([cache[1][:, i], v], dim=1)
            total = k.shape[1]
            full = torch.ones(total, total, dtype=torch.bool, device=x.device).tril()
            allowed = full[total - t:]  # rows of the new positions
            scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(d)
            scores = torch.where(allowed, scores, torch.full_like(scores, float("-inf")))
            outs.append(torch.bmm(torch.softmax(scores, dim=-1), v))
            keys.append(k)
            values.append(v)
        out = self.out_proj(torch.cat(outs, dim=-1))
        return out, (torch.stack(keys, dim=1), torch.stack(values, dim=1))
