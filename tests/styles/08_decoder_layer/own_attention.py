"""Kata 08 in another style: a hand-written attention module (PyTorch's parameter names),
batch-first inside, the softmax written out with fully masked rows set to zero."""

import copy
import math

import torch
import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    def __init__(self, d_model, nhead, dropout):
        super().__init__()
        self.nhead, self.p = nhead, dropout
        self.in_proj_weight = nn.Parameter(torch.empty(3 * d_model, d_model))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * d_model))
        self.out_proj = nn.Linear(d_model, d_model)
        nn.init.xavier_uniform_(self.in_proj_weight)

    def forward(self, q_in, kv_in, attn_mask=None, key_padding_mask=None):
        """q_in (b, n, d), kv_in (b, m, d) -> (b, n, d)."""
        b, n, d = q_in.shape
        m, h = kv_in.shape[1], self.nhead
        wq, wk, wv = self.in_proj_weight.chunk(3)
        bq, bk, bv = self.in_proj_bias.chunk(3)
        q = F.linear(q_in, wq, bq).reshape(b, n, h, d // h).permute(0, 2, 1, 3)
        k = F.linear(kv_in, wk, bk).reshape(b, m, h, d // h).permute(0, 2, 1, 3)
        v = F.linear(kv_in, wv, bv).reshape(b, m, h, d // h).permute(0, 2, 1, 3)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d // h)
        if attn_mask is not None:
            if attn_mask.dtype == torch.bool:
                scores = scores.masked_fill(attn_mask, -math.inf)
            else:
                scores = scores + attn_mask
        if key_padding_mask is not None:
            scores = scores.masked_fill(key_padding_mask.view(b, 1, 1, m), -math.inf)
        dead = torch.isneginf(scores).all(dim=-1, keepdim=True)
        weights = torch.softmax(scores.masked_fill(dead, 0.0), dim=-1).masked_fill(dead, 0.0)
        weights = F.dropout(weights, self.p, self.training)
        out = torch.matmul(weights, v).permute(0, 2, 1, 3).reshape(b, n, d)
        return self.out_proj(out)


class TransformerDecoderLayer(nn.Module):
    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False):
        super().__init__()
        self.self_attn = Attention(d_model, nhead, dropout)
        self.multihead_attn = Attention(d_model, nhead, dropout)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        for i in (1, 2, 3):
            setattr(self, f"norm{i}", nn.LayerNorm(d_model, eps=layer_norm_eps))
            setattr(self, f"dropout{i}", nn.Dropout(dropout))
        self.batch_first, self.norm_first = batch_first, norm_first
        self.activation = {"relu": F.relu, "gelu": F.gelu}[activation] if isinstance(
            activation, str) else activation

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None):
        if not self.batch_first:
            tgt, memory = tgt.transpose(0, 1), memory.transpose(0, 1)
        blocks = [
            (self.norm1, lambda x: self.dropout1(self.self_attn(x, x, tgt_mask, tgt_key_padding_mask))),
            (self.norm2, lambda x: self.dropout2(
                self.multihead_attn(x, memory, memory_mask, memory_key_padding_mask))),
            (self.norm3, lambda x: self.dropout3(
                self.linear2(self.dropout(self.activation(self.linear1(x)))))),
        ]
        x = tgt
        for norm, block in blocks:
            x = x + block(norm(x)) if self.norm_first else norm(x + block(x))
        return x if self.batch_first else x.transpose(0, 1)


class TransformerDecoder(nn.Module):
    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = nn.ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None):
        masks = dict(tgt_mask=tgt_mask, memory_mask=memory_mask,
                     tgt_key_padding_mask=tgt_key_padding_mask,
                     memory_key_padding_mask=memory_key_padding_mask)
        for layer in self.layers:
            tgt = layer(tgt, memory, **masks)
        return tgt if self.norm is None else self.norm(tgt)
