"""Style: every input through the whole in_proj, the needed third sliced out afterwards; a
hand-written softmax; dropout as a Bernoulli keep-mask applied with torch.where."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class MultiheadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, batch_first=False):
        super().__init__()
        self.e, self.h, self.p, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim).uniform_(-0.1, 0.1))
        self.register_parameter("in_proj_bias", nn.Parameter(torch.zeros(3 * embed_dim)) if bias else None)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias)

    def heads(self, x):
        b, s, _ = x.shape
        return x.unflatten(-1, (self.h, self.e // self.h)).permute(0, 2, 1, 3)

    def forward(self, query, key, value, need_weights=True):
        if not self.batch_first:
            query, key, value = (t.movedim(1, 0) for t in (query, key, value))
        e = self.e
        q = self.heads(F.linear(query, self.in_proj_weight, self.in_proj_bias)[..., :e])
        k = self.heads(F.linear(key, self.in_proj_weight, self.in_proj_bias)[..., e:2 * e])
        v = self.heads(F.linear(value, self.in_proj_weight, self.in_proj_bias)[..., 2 * e:])
        scores = torch.matmul(q / (q.size(-1) ** 0.5), k.transpose(-1, -2))
        exp = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
        attn = exp / exp.sum(dim=-1, keepdim=True)
        if self.training and self.p > 0:
            keep = torch.rand_like(attn) >= self.p
            attn = torch.where(keep, attn / (1 - self.p), torch.zeros_like(attn))
        out = torch.matmul(attn, v).permute(0, 2, 1, 3).flatten(-2)
        out = self.out_proj(out)
        if not self.batch_first:
            out = out.movedim(0, 1)
        return out, attn if need_weights else None
