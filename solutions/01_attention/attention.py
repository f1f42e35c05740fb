"""Reference solution for kata 01: single-head scaled dot-product attention."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def scaled_dot_product_attention(
    query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """softmax(query @ key^T / sqrt(d_k) + mask) @ value.

    query (..., n, d_k), key (..., m, d_k), value (..., m, d_v); attn_mask bool (True =
    blocked) or float (added to the logits), broadcastable to (..., n, m).
    Returns output (..., n, d_v) and weights (..., n, m); a query whose keys are all
    blocked gets all-zero weights.
    """
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
    # A query whose keys are all blocked attends to nothing. Its scores are all -inf, whose
    # softmax is NaN, and so would be the gradients through it (of the query and of every
    # key, with a float mask): give those rows finite scores *before* the softmax, then
    # zero their weights.
    all_blocked = torch.isneginf(scores).all(dim=-1, keepdim=True)
    scores = scores.masked_fill(all_blocked, 0.0)
    weights = torch.softmax(scores, dim=-1).masked_fill(all_blocked, 0.0)
    return weights @ value, weights


class SingleHeadAttention(nn.Module):
    """One attention head with input and output projections.

    Equal to ``nn.MultiheadAttention(d_model, 1, bias=bias, batch_first=batch_first)``
    whose ``in_proj_weight`` stacks q_proj, k_proj, v_proj weights.
    """

    def __init__(self, d_model: int, bias: bool = True, batch_first: bool = False):
        super().__init__()
        self.batch_first = batch_first
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(
        self, query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """query (n, b, d) and key/value (m, b, d), or batch first with batch_first=True.

        attn_mask (n, m) or (b, n, m). Returns output shaped like query and weights (b, n, m).
        """
        if not self.batch_first:
            query, key, value = (x.transpose(0, 1) for x in (query, key, value))
        attended, weights = scaled_dot_product_attention(
            self.q_proj(query), self.k_proj(key), self.v_proj(value), attn_mask
        )
        output = self.out_proj(attended)
        if not self.batch_first:
            output = output.transpose(0, 1)
        return output, weights
