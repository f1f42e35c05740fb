"""Mutant: cuts in_proj_bias in the order v, k, q (the weights are right)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class MultiheadAttention(nn.Module):
    """Multi-head attention with PyTorch's parameter names and layout.

    Parameters: in_proj_weight (3E, E), the q, k, v projections stacked in that order;
    in_proj_bias (3E) or None; out_proj = nn.Linear(E, E, bias=bias). A state dict of
    ``nn.MultiheadAttention(E, h, bias=bias)`` loads into it as it is.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 batch_first: bool = False):
        super().__init__()
        if embed_dim % num_heads != 0:
            raise ValueError(f"embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
        if bias:
            self.in_proj_bias = nn.Parameter(torch.empty(3 * embed_dim))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        # PyTorch's initialisation: Xavier for the stacked projections, zero biases.
        nn.init.xavier_uniform_(self.in_proj_weight)
        if self.in_proj_bias is not None:
            nn.init.zeros_(self.in_proj_bias)
            nn.init.zeros_(self.out_proj.bias)

    def _split_heads(self, x: Tensor) -> Tensor:
        """(b, len, E) -> (b, h, len, head_dim); head i holds columns i*d:(i+1)*d."""
        b, length, _ = x.shape
        return x.view(b, length, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                need_weights: bool = True) -> tuple[Tensor, Tensor | None]:
        """query (n, b, E), key and value (m, b, E); (b, n, E) and (b, m, E) with batch_first.

        Returns attn_output shaped like query and the per-head attention weights
        (b, h, n, m) after dropout, or None when need_weights is False.
        """
        if not self.batch_first:
            query, key, value = (x.transpose(0, 1) for x in (query, key, value))
        b, n, _ = query.shape

        w_q, w_k, w_v = self.in_proj_weight.chunk(3)
        b_q = b_k = b_v = None
        if self.in_proj_bias is not None:
            b_v, b_k, b_q = self.in_proj_bias.chunk(3)
        q = self._split_heads(F.linear(query, w_q, b_q))  # (b, h, n, d)
        k = self._split_heads(F.linear(key, w_k, b_k))  # (b, h, m, d)
        v = self._split_heads(F.linear(value, w_v, b_v))  # (b, h, m, d)

        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # (b, h, n, m)
        weights = torch.softmax(scores, dim=-1)
        weights = F.dropout(weights, self.dropout, training=self.training)

        attended = (weights @ v).transpose(1, 2).reshape(b, n, self.embed_dim)
        output = self.out_proj(attended)
        if not self.batch_first:
            output = output.transpose(0, 1)
        return output, (weights if need_weights else None)
