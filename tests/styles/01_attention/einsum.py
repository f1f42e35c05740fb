"""Correct, einsum style: scores and the weighted sum as einsums, additive -inf mask."""

import math

import torch
from torch import nn


def scaled_dot_product_attention(query, key, value, attn_mask=None):
    scores = torch.einsum("...nd,...md->...nm", query, key) * (1.0 / math.sqrt(query.shape[-1]))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            additive = torch.zeros(attn_mask.shape, dtype=scores.dtype, device=scores.device)
            attn_mask = additive.masked_fill(attn_mask, -math.inf)
        scores = scores + attn_mask
    # A row blocked everywhere: scores 0 before the softmax (finite gradients), weights 0 after.
    dead = scores.isneginf().all(-1, keepdim=True)
    weights = scores.masked_fill(dead, 0.0).softmax(-1) * ~dead
    return torch.einsum("...nm,...mv->...nv", weights, value), weights


class SingleHeadAttention(nn.Module):
    def __init__(self, d_model, bias=True, batch_first=False):
        super().__init__()
        self.batch_first = batch_first
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            setattr(self, name, nn.Linear(d_model, d_model, bias=bias))

    def forward(self, query, key, value, attn_mask=None):
        if not self.batch_first:
            query, key, value = (torch.einsum("sbd->bsd", t) for t in (query, key, value))
        out, weights = scaled_dot_product_attention(
            self.q_proj(query), self.k_proj(key), self.v_proj(value), attn_mask)
        out = self.out_proj(out)
        return (out if self.batch_first else torch.einsum("bsd->sbd", out)), weights
