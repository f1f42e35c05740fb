"""Kata 09 in another style: encoder and decoder layers written by hand around
nn.MultiheadAttention (PyTorch's names), a float causal mask from
nn.Transformer.generate_square_subsequent_mask, and greedy decoding that calls the whole
model on the growing prefix with per-row Python bookkeeping."""

from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class PositionalEncoding(nn.Module):
    def __init__(self, d_model: int, dropout: float, max_len: int):
        super().__init__()
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.pe[: x.size(1)].unsqueeze(0).to(x.dtype)
        return self.dropout(x)


class EncoderLayer(nn.Module):
    def __init__(self, d_model, nhead, dim_feedforward, dropout):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=True)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x, key_padding_mask):
        attended = self.self_attn(x, x, x, key_padding_mask=key_padding_mask, need_weights=False)[0]
        x = self.norm1(x + self.dropout1(attended))
        ff = self.linear2(self.dropout(F.relu(self.linear1(x))))
        return self.norm2(x + self.dropout2(ff))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, nhead, dim_feedforward, dropout):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=True)
        self.multihead_attn = nn.MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=True)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)

    def forward(self, y, memory, tgt_mask, tgt_padding, memory_padding):
        sa = self.self_attn(y, y, y, attn_mask=tgt_mask, key_padding_mask=tgt_padding,
                            need_weights=False)[0]
        y = self.norm1(y + self.dropout1(sa))
        ca = self.multihead_attn(y, memory, memory, key_padding_mask=memory_padding,
                                 need_weights=False)[0]
        y = self.norm2(y + self.dropout2(ca))
        ff = self.linear2(self.dropout(F.relu(self.linear1(y))))
        return self.norm3(y + self.dropout3(ff))


class Stack(nn.Module):
    def __init__(self, layer, n, d_model):
        super().__init__()
        self.layers = nn.ModuleList([copy.deepcopy(layer) for _ in range(n)])
        self.norm = nn.LayerNorm(d_model)


class Seq2SeqTransformer(nn.Module):
    def __init__(self, src_vocab_size, tgt_vocab_size, d_model=512, nhead=8,
                 num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048,
                 dropout=0.1, max_len=5000, pad_idx=0):
        super().__init__()
        self.pad_idx = pad_idx
        self.scale = math.sqrt(d_model)
        self.src_embed = nn.Embedding(src_vocab_size, d_model, padding_idx=pad_idx)
        self.tgt_embed = nn.Embedding(tgt_vocab_size, d_model, padding_idx=pad_idx)
        self.positional_encoding = PositionalEncoding(d_model, dropout, max_len)
        self.encoder = Stack(EncoderLayer(d_model, nhead, dim_feedforward, dropout),
                             num_encoder_layers, d_model)
        self.decoder = Stack(DecoderLayer(d_model, nhead, dim_feedforward, dropout),
                             num_decoder_layers, d_model)
        self.generator = nn.Linear(d_model, tgt_vocab_size)

    def encode(self, src):
        x = self.positional_encoding(self.src_embed(src) * self.scale)
        padding = src.eq(self.pad_idx)
        for layer in self.encoder.layers:
            x = layer(x, padding)
        return self.encoder.norm(x)

    def decode(self, tgt, memory, src):
        y = self.positional_encoding(self.tgt_embed(tgt) * self.scale)
        mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(1), device=tgt.device,
                                                              dtype=y.dtype)
        # A float causal mask with bool padding masks: make the padding float too.
        tgt_padding = torch.zeros(tgt.shape, dtype=y.dtype, device=y.device).masked_fill(
            tgt == self.pad_idx, float("-inf"))
        memory_padding = src == self.pad_idx
        for layer in self.decoder.layers:
            y = layer(y, memory, mask, tgt_padding, memory_padding)
        return self.decoder.norm(y)

    def forward(self, src, tgt):
        memory = self.encode(src)
        return self.generator(self.decode(tgt, memory, src))


@torch.no_grad()
def greedy_decode(model, src, max_len, bos_idx, eos_idx):
    mode = model.training
    model.eval()
    try:
        rows = [[bos_idx] for _ in range(src.size(0))]
        ended = [False] * src.size(0)
        for _ in range(max_len - 1):
            if all(ended):
                break
            ys = torch.tensor(rows, dtype=torch.long, device=src.device)
            logits = model(src, ys)[:, -1, :]
            best = logits.argmax(dim=1).tolist()
            for i, token in enumerate(best):
                if ended[i]:
                    rows[i].append(model.pad_idx)
                else:
                    rows[i].append(token)
                    ended[i] = token == eos_idx
        return torch.tensor(rows, dtype=torch.int64, device=src.device)
    finally:
        model.train(mode)
