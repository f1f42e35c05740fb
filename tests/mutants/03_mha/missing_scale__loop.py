"""Mutant: never scales the scores."""

from __future__ import annotations

import math

import torch
from torch import nn


class MultiheadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, batch_first=False):
        super().__init__()
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.batch_first = batch_first
        self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
        self.in_proj_bias = nn.Parameter(torch.empty(3 * embed_dim)) if bias else None
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.attn_drop = nn.Dropout(dropout)
        nn.init.xavier_normal_(self.in_proj_weight)
        if bias:
            nn.init.zeros_(self.in_proj_bias)

    def _head_projection(self, x, which, head):
        """x (b, len, E) through rows of part ``which`` (0 q, 1 k, 2 v) for ``head``: (b, len, d)."""
        start = which * self.embed_dim + head * self.head_dim
        rows = slice(start, start + self.head_dim)
        y = x @ self.in_proj_weight[rows].T
        if self.in_proj_bias is not None:
            y = y + self.in_proj_bias[rows]
        return y

    def forward(self, query, key, value, need_weights=True):
        if not self.batch_first:
            query, key, value = query.permute(1, 0, 2), key.permute(1, 0, 2), value.permute(1, 0, 2)
        outputs, all_weights = [], []
        for head in range(self.num_heads):
            q = self._head_projection(query, 0, head)
            k = self._head_projection(key, 1, head)
            v = self._head_projection(value, 2, head)
            w = torch.softmax(q @ k.transpose(1, 2), dim=2)
            w = self.attn_drop(w)
            outputs.append(w @ v)
            all_weights.append(w)
        out = self.out_proj(torch.cat(outputs, dim=-1))
        if not self.batch_first:
            out = out.permute(1, 0, 2)
        return out, (torch.stack(all_weights, dim=1) if need_weights else None)
