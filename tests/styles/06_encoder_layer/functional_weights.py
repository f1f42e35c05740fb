"""Style: explicit if/else per norm_first, hand-written multi-head attention and F.* calls on
the submodules' weights; activation resolved with getattr(F, name); encoder built in a loop."""

from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F
from torch import nn


class TransformerEncoderLayer(nn.Module):
    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.nhead = nhead
        self.p = dropout
        self.eps = layer_norm_eps
        self.batch_first = batch_first
        self.norm_first = norm_first
        self.activation = getattr(F, activation) if isinstance(activation, str) else activation

    def _ln(self, norm, x):
        return F.layer_norm(x, norm.normalized_shape, norm.weight, norm.bias, self.eps)

    def _attention(self, x, src_mask, key_padding_mask):
        # x: (b, n, d)
        b, n, d = x.shape
        h = self.nhead
        q, k, v = F.linear(x, self.self_attn.in_proj_weight, self.self_attn.in_proj_bias).split(d, dim=-1)
        q, k, v = (t.reshape(b, n, h, d // h).permute(0, 2, 1, 3) for t in (q, k, v))
        scores = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(d // h)
        if src_mask is not None:
            if src_mask.dtype == torch.bool:
                scores = scores.masked_fill(src_mask, float("-inf"))
            else:
                scores = scores + src_mask
        if key_padding_mask is not None:
            scores = scores.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
        weights = F.dropout(scores.softmax(dim=-1), self.p, training=self.training)
        out = torch.einsum("bhij,bhjd->bhid", weights, v).permute(0, 2, 1, 3).reshape(b, n, d)
        out = F.linear(out, self.self_attn.out_proj.weight, self.self_attn.out_proj.bias)
        return F.dropout(out, self.p, training=self.training)

    def _feed_forward(self, x):
        hidden = self.activation(F.linear(x, self.linear1.weight, self.linear1.bias))
        hidden = F.dropout(hidden, self.p, training=self.training)
        out = F.linear(hidden, self.linear2.weight, self.linear2.bias)
        return F.dropout(out, self.p, training=self.training)

    def forward(self, src, src_mask=None, src_key_padding_mask=None):
        x = src if self.batch_first else src.transpose(0, 1)
        if self.norm_first:
            x = x + self._attention(self._ln(self.norm1, x), src_mask, src_key_padding_mask)
            x = x + self._feed_forward(self._ln(self.norm2, x))
        else:
            x = self._ln(self.norm1, x + self._attention(x, src_mask, src_key_padding_mask))
            x = self._ln(self.norm2, x + self._feed_forward(x))
        return x if self.batch_first else x.transpose(0, 1)


class TransformerEncoder(nn.Module):
    def __init__(self, encoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = nn.ModuleList()
        for _ in range(num_layers):
            self.layers.append(copy.deepcopy(encoder_layer))
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None):
        x = src
        for i in range(len(self.layers)):
            x = self.layers[i](x, mask, src_key_padding_mask)
        if self.norm is None:
            return x
        return self.norm(x)
