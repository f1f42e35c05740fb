"""Correct, by hand: an explicit, numerically stable softmax with torch.where masking."""

import math

import torch
from torch import nn


def scaled_dot_product_attention(query, key, value, attn_mask=None):
    scores = torch.matmul(query, key.transpose(-1, -2)) / math.sqrt(key.size(-1))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = torch.where(attn_mask, torch.tensor(float("-inf"), dtype=scores.dtype), scores)
        else:
            scores = scores + attn_mask
    row_max = scores.amax(dim=-1, keepdim=True)
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    exp = torch.exp(scores - row_max)
    total = exp.sum(dim=-1, keepdim=True)
    weights = exp / torch.where(total > 0, total, torch.ones_like(total))
    return torch.matmul(weights, value), weights


class SingleHeadAttention(nn.Module):
    def __init__(self, d_model, bias=True, batch_first=False):
        super().__init__()
        self.batch_first = batch_first
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (
            nn.Linear(d_model, d_model, bias=bias) for _ in range(4))

    def forward(self, query, key, value, attn_mask=None):
        batch_dim = 0 if self.batch_first else 1
        q, k, v = (t.movedim(batch_dim, 0) for t in (query, key, value))
        out, weights = scaled_dot_product_attention(self.q_proj(q), self.k_proj(k), self.v_proj(v), attn_mask)
        return self.out_proj(out).movedim(0, batch_dim), weights
