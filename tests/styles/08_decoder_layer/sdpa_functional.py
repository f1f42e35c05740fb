"""Kata 08 in another style: PyTorch's parameter containers, the attention done with
F.scaled_dot_product_attention on one merged additive mask, masks handled seq-first."""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def additive(mask: Tensor | None, dtype) -> Tensor | None:
    if mask is None or mask.dtype != torch.bool:
        return mask
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(mask, float("-inf"))


class TransformerDecoderLayer(nn.Module):
    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False):
        super().__init__()
        # Used as parameter containers only (in_proj_weight, in_proj_bias, out_proj).
        self.self_attn = nn.MultiheadAttention(d_model, nhead, dropout=dropout)
        self.multihead_attn = nn.MultiheadAttention(d_model, nhead, dropout=dropout)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm3 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)
        self.nhead, self.p = nhead, dropout
        self.batch_first, self.norm_first = batch_first, norm_first
        self.activation = getattr(F, activation) if isinstance(activation, str) else activation

    def _attend(self, module, x, mem, attn_mask, key_padding_mask):
        """x (n, b, d), mem (m, b, d), seq-first."""
        n, b, d = x.shape
        m, h = mem.shape[0], self.nhead
        q, k, v = F._in_projection_packed(x, mem, mem, module.in_proj_weight, module.in_proj_bias)
        q, k, v = (t.reshape(t.shape[0], b, h, d // h).permute(1, 2, 0, 3) for t in (q, k, v))
        mask = additive(attn_mask, x.dtype)
        pad = additive(key_padding_mask, x.dtype)
        if pad is not None:
            pad = pad.reshape(b, 1, 1, m)
            mask = pad if mask is None else mask + pad
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                             dropout_p=self.p if self.training else 0.0)
        out = out.permute(2, 0, 1, 3).reshape(n, b, d)
        return F.linear(out, module.out_proj.weight, module.out_proj.bias)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None):
        x = tgt.transpose(0, 1) if self.batch_first else tgt
        mem = memory.transpose(0, 1) if self.batch_first else memory

        def sa(y):
            return self.dropout1(self._attend(self.self_attn, y, y, tgt_mask, tgt_key_padding_mask))

        def ca(y):
            return self.dropout2(self._attend(self.multihead_attn, y, mem, memory_mask,
                                              memory_key_padding_mask))

        def ff(y):
            return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(y)))))

        if self.norm_first:
            x = x + sa(self.norm1(x))
            x = x + ca(self.norm2(x))
            x = x + ff(self.norm3(x))
        else:
            x = self.norm1(x + sa(x))
            x = self.norm2(x + ca(x))
            x = self.norm3(x + ff(x))
        return x.transpose(0, 1) if self.batch_first else x


class TransformerDecoder(nn.Module):
    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = nn.ModuleList()
        for _ in range(num_layers):
            self.layers.append(copy.deepcopy(decoder_layer))
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None):
        out = tgt
        for layer in self.layers:
            out = layer(out, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                        memory_key_padding_mask)
        if self.norm is not None:
            out = self.norm(out)
        return out
