"""Style: always batch-first inside, masks merged into one float (b, h, n, n) mask, attention
with F.scaled_dot_product_attention on self_attn's weights (allowed in this kata), activation
resolved with match; encoder layers deep-copied by a generator."""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn


def _resolve(activation):
    match activation:
        case "relu":
            return F.relu
        case "gelu":
            return F.gelu
        case _ if callable(activation):
            return activation
    raise ValueError(f"unknown activation {activation!r}")


def _additive(mask, dtype):
    if mask is None or mask.dtype != torch.bool:
        return mask
    return torch.where(mask, float("-inf"), 0.0).to(dtype)


class TransformerEncoderLayer(nn.Module):
    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=True)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.activation = _resolve(activation)
        self.nhead = nhead
        self.batch_first = batch_first
        self.norm_first = norm_first

    def _mask(self, x, src_mask, key_padding_mask):
        b, n, _ = x.shape
        mask = torch.zeros(b, 1, n, n, dtype=x.dtype, device=x.device)
        if src_mask is not None:
            mask = mask + _additive(src_mask, x.dtype)
        if key_padding_mask is not None:
            mask = mask + _additive(key_padding_mask, x.dtype)[:, None, None, :]
        return mask

    def _sa(self, x, mask):
        b, n, d = x.shape
        attn = self.self_attn
        q, k, v = F.linear(x, attn.in_proj_weight, attn.in_proj_bias).view(b, n, 3, self.nhead, -1).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                             dropout_p=attn.dropout if self.training else 0.0)
        out = attn.out_proj(out.transpose(1, 2).reshape(b, n, d))
        return self.dropout1(out)

    def _ff(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, src, src_mask=None, src_key_padding_mask=None):
        x = src if self.batch_first else src.permute(1, 0, 2)
        mask = self._mask(x, src_mask, src_key_padding_mask)
        if not self.norm_first:
            x = self.norm1(x + self._sa(x, mask))
            x = self.norm2(x + self._ff(x))
        else:
            x = x + self._sa(self.norm1(x), mask)
            x = x + self._ff(self.norm2(x))
        return x if self.batch_first else x.permute(1, 0, 2)


class TransformerEncoder(nn.Module):
    def __init__(self, encoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = nn.ModuleList(copy.deepcopy(encoder_layer) for _ in range(num_layers))
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None):
        for layer in self.layers:
            src = layer(src, mask, src_key_padding_mask)
        if self.norm is not None:
            src = self.norm(src)
        return src
