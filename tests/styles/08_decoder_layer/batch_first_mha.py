"""Kata 08 in another style: nn.MultiheadAttention always batch-first (the layer moves
seq-first inputs to batch-first once), masks passed by position, one residual helper."""

import copy

import torch.nn.functional as F
from torch import nn


class TransformerDecoderLayer(nn.Module):
    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, nhead, dropout, batch_first=True)
        self.multihead_attn = nn.MultiheadAttention(d_model, nhead, dropout, batch_first=True)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(d_model, layer_norm_eps) for _ in range(3))
        self.dropout1, self.dropout2, self.dropout3 = (nn.Dropout(dropout) for _ in range(3))
        self.seq_first, self.norm_first = not batch_first, norm_first
        if activation == "relu":
            activation = nn.ReLU()
        elif activation == "gelu":
            activation = nn.GELU()
        self.activation = activation

    def _residual(self, x, norm, block):
        if self.norm_first:
            return x + block(norm(x))
        return norm(x + block(x))

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None):
        if self.seq_first:
            tgt, memory = tgt.permute(1, 0, 2), memory.permute(1, 0, 2)
        x = self._residual(tgt, self.norm1, lambda y: self.dropout1(self.self_attn(
            y, y, y, key_padding_mask=tgt_key_padding_mask, need_weights=False,
            attn_mask=tgt_mask)[0]))
        x = self._residual(x, self.norm2, lambda y: self.dropout2(self.multihead_attn(
            y, memory, memory, memory_key_padding_mask, False, memory_mask)[0]))
        x = self._residual(x, self.norm3, lambda y: self.dropout3(
            self.linear2(self.dropout(self.activation(self.linear1(y))))))
        return x.permute(1, 0, 2) if self.seq_first else x


class TransformerDecoder(nn.Module):
    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = nn.ModuleList(map(copy.deepcopy, [decoder_layer] * num_layers))
        self.num_layers, self.norm = num_layers, norm

    def forward(self, tgt, memory, *masks, **named_masks):
        for layer in self.layers:
            tgt = layer(tgt, memory, *masks, **named_masks)
        return self.norm(tgt) if self.norm is not None else tgt
