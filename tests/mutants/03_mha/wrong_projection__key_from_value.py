"""Mutant: projects the key from the value input."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class MultiheadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, batch_first=False):
        super().__init__()
        self.num_heads, self.dropout, self.batch_first = num_heads, dropout, batch_first
        self.in_proj_weight = nn.Parameter(torch.randn(3 * embed_dim, embed_dim) / math.sqrt(embed_dim))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * embed_dim)) if bias else None
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)

    def forward(self, query, key, value, need_weights=True):
        if not self.batch_first:
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        h = self.num_heads
        weights = self.in_proj_weight.unflatten(0, (3, h, -1))  # (3, h, d, E)
        biases = None if self.in_proj_bias is None else self.in_proj_bias.unflatten(0, (3, h, -1))
        projected = []
        for i, x in enumerate((query, value, value)):
            y = torch.einsum("bse,hde->bhsd", x, weights[i])
            if biases is not None:
                y = y + biases[i][:, None, :]
            projected.append(y)
        q, k, v = projected
        scores = torch.einsum("bhnd,bhmd->bhnm", q, k) / math.sqrt(q.shape[-1])
        attn = F.dropout(scores.softmax(-1), self.dropout, self.training)
        heads = torch.einsum("bhnm,bhmd->bnhd", attn, v)
        out = self.out_proj(heads.flatten(2))
        if not self.batch_first:
            out = out.transpose(0, 1)
        return out, attn if need_weights else None
