"""Style: a home-made self_attn module with PyTorch's parameter names, attention in the
seq-first (b*h, n, d) layout with baddbmm, activation as a module from a dict, encoder via
a list comprehension and functools.reduce."""

from __future__ import annotations

import copy
import functools
import math

import torch
from torch import nn


class SelfAttention(nn.Module):
    """in_proj_weight (3E, E), in_proj_bias (3E), out_proj: the names nn.MultiheadAttention uses."""

    def __init__(self, embed_dim, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * embed_dim))
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.attn_dropout = nn.Dropout(dropout)
        nn.init.xavier_uniform_(self.in_proj_weight)

    def forward(self, x, attn_mask=None, key_padding_mask=None):
        """x (n, b, E) -> (n, b, E)."""
        n, b, e = x.shape
        h, hd = self.num_heads, e // self.num_heads
        q, k, v = (x @ self.in_proj_weight.T + self.in_proj_bias).chunk(3, dim=-1)
        # (n, b, E) -> (b*h, n, hd), batch-major like PyTorch
        q, k, v = (t.reshape(n, b * h, hd).transpose(0, 1) for t in (q, k, v))
        bias = torch.zeros(b, h, n, n, dtype=x.dtype, device=x.device)
        if attn_mask is not None:
            if attn_mask.dtype == torch.bool:
                attn_mask = torch.zeros_like(attn_mask, dtype=x.dtype).masked_fill(attn_mask, -math.inf)
            bias = bias + attn_mask
        if key_padding_mask is not None:
            pad = torch.zeros_like(key_padding_mask, dtype=x.dtype).masked_fill(key_padding_mask, -math.inf)
            bias = bias + pad.view(b, 1, 1, n)
        scores = torch.baddbmm(bias.reshape(b * h, n, n), q, k.transpose(1, 2), alpha=1 / math.sqrt(hd))
        weights = self.attn_dropout(torch.softmax(scores, dim=-1))
        out = torch.bmm(weights, v).transpose(0, 1).reshape(n, b, e)
        return self.out_proj(out)


_ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU}


class TransformerEncoderLayer(nn.Module):
    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False):
        super().__init__()
        self.self_attn = SelfAttention(d_model, nhead, dropout)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.activation = _ACTIVATIONS[activation]() if isinstance(activation, str) else activation
        self.batch_first = batch_first
        self.norm_first = norm_first

    def forward(self, src, src_mask=None, src_key_padding_mask=None):
        x = src.transpose(0, 1) if self.batch_first else src

        def sa(y):
            return self.dropout1(self.self_attn(y, src_mask, src_key_padding_mask))

        def ff(y):
            return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(y)))))

        for block, norm in ((sa, self.norm1), (ff, self.norm2)):
            x = x + block(norm(x)) if self.norm_first else norm(x + block(x))
        return x.transpose(0, 1) if self.batch_first else x


class TransformerEncoder(nn.Module):
    def __init__(self, encoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = nn.ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None):
        out = functools.reduce(
            lambda x, layer: layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask),
            self.layers, src)
        return self.norm(out) if self.norm is not None else out
