"""Correct, bmm style: leading dims flattened into one batch, torch.baddbmm with the mask."""

import math

import torch
import torch.nn.functional as F
from torch import nn


def scaled_dot_product_attention(query, key, value, attn_mask=None):
    *lead, n, d_k = query.shape
    m, d_v = key.shape[-2], value.shape[-1]
    lead = torch.broadcast_shapes(tuple(lead), tuple(key.shape[:-2]), tuple(value.shape[:-2]))
    q = query.expand(*lead, n, d_k).reshape(-1, n, d_k)
    k = key.expand(*lead, m, d_k).reshape(-1, m, d_k)
    v = value.expand(*lead, m, d_v).reshape(-1, m, d_v)
    bias = torch.zeros(*lead, n, m, dtype=query.dtype, device=query.device)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            bias = bias.masked_fill(attn_mask, float("-inf"))
        else:
            bias = bias + attn_mask
    scores = torch.baddbmm(bias.reshape(-1, n, m), q, k.transpose(1, 2), alpha=d_k ** -0.5)
    dead = scores.isneginf().all(-1, keepdim=True)
    # Dead rows: finite scores before the softmax (no NaN, not even in the gradients), zero after.
    weights = torch.where(dead, torch.zeros_like(scores),
                          F.softmax(torch.where(dead, torch.zeros_like(scores), scores), dim=-1))
    out = torch.bmm(weights, v)
    return out.reshape(*lead, n, d_v), weights.reshape(*lead, n, m)


class SingleHeadAttention(nn.Module):
    def __init__(self, d_model, bias=True, batch_first=False):
        super().__init__()
        self.batch_first = batch_first
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, attn_mask=None):
        if not self.batch_first:
            query, key, value = query.permute(1, 0, 2), key.permute(1, 0, 2), value.permute(1, 0, 2)
        q = F.linear(query, self.q_proj.weight, self.q_proj.bias)
        k = F.linear(key, self.k_proj.weight, self.k_proj.bias)
        v = F.linear(value, self.v_proj.weight, self.v_proj.bias)
        out, weights = scaled_dot_product_attention(q, k, v, attn_mask)
        out = self.out_proj(out)
        if not self.batch_first:
            out = out.permute(1, 0, 2)
        return out, weights
