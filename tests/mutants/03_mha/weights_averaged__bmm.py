"""Mutant: returns the weights averaged over heads."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class MultiheadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, batch_first=False):
        super().__init__()
        assert embed_dim % num_heads == 0
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
        nn.init.xavier_uniform_(self.in_proj_weight)
        if bias:
            self.in_proj_bias = nn.Parameter(torch.zeros(3 * embed_dim))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)

    def forward(self, query, key, value, need_weights=True):
        if self.batch_first:
            query, key, value = (x.transpose(0, 1) for x in (query, key, value))
        tgt_len, bsz, embed_dim = query.shape
        src_len = key.shape[0]
        head_dim = embed_dim // self.num_heads
        w = self.in_proj_weight
        b = self.in_proj_bias
        e = embed_dim
        q = F.linear(query, w[:e], None if b is None else b[:e])
        k = F.linear(key, w[e:2 * e], None if b is None else b[e:2 * e])
        v = F.linear(value, w[2 * e:], None if b is None else b[2 * e:])
        # (len, b, E) -> (len, b*h, d) -> (b*h, len, d): row i*h + j is batch i, head j.
        q = q.reshape(tgt_len, bsz * self.num_heads, head_dim).transpose(0, 1)
        k = k.reshape(src_len, bsz * self.num_heads, head_dim).transpose(0, 1)
        v = v.reshape(src_len, bsz * self.num_heads, head_dim).transpose(0, 1)
        q = q * head_dim ** -0.5
        zeros = torch.zeros(bsz * self.num_heads, tgt_len, src_len, dtype=q.dtype, device=q.device)
        attn = torch.baddbmm(zeros, q, k.transpose(1, 2)).softmax(dim=-1)
        if self.training and self.dropout > 0:
            attn = F.dropout(attn, p=self.dropout)
        out = torch.bmm(attn, v)  # (b*h, n, d)
        out = out.transpose(0, 1).contiguous().view(tgt_len, bsz, embed_dim)
        out = self.out_proj(out)
        if self.batch_first:
            out = out.transpose(0, 1)
        if not need_weights:
            return out, None
        return out, attn.view(bsz, self.num_heads, tgt_len, src_len).mean(dim=1)
