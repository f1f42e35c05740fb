"""Kata 09 in another style: no PyTorch attention module at all. A small attention
module with nn.MultiheadAttention's parameter names computes the scores by hand and takes
the softmax in float32, cast back (Hugging Face's eager attention: float32-precise in
float64); masks are merged into one (b, 1, n, m) mask; greedy decoding computes every row
and pads afterwards."""

from __future__ import annotations

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

    def forward(self, x, context, blocked):
        """x (b, n, d), context (b, m, d), blocked bool broadcastable to (b, 1, n, m)."""
        w_q, w_kv = self.in_proj_weight.split([x.size(-1), 2 * x.size(-1)])
        b_q, b_kv = self.in_proj_bias.split([x.size(-1), 2 * x.size(-1)])
        q = F.linear(x, w_q, b_q)
        k, v = F.linear(context, w_kv, b_kv).chunk(2, dim=-1)
        q, k, v = (t.unflatten(-1, (self.nhead, -1)).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
        scores = scores.masked_fill(blocked, float("-inf"))
        weights = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        weights = F.dropout(weights, self.p, self.training)
        out = weights @ v
        return self.out_proj(out.transpose(1, 2).flatten(2))


class Block(nn.Module):
    def __init__(self, d_model, nhead, d_ff, dropout, cross):
        super().__init__()
        self.self_attn = Attention(d_model, nhead, dropout)
        if cross:
            self.multihead_attn = Attention(d_model, nhead, dropout)
            self.norm3 = nn.LayerNorm(d_model)
        self.linear1, self.linear2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, self_blocked, memory=None, memory_blocked=None):
        x = self.norm1(x + self.drop(self.self_attn(x, x, self_blocked)))
        if memory is not None:
            x = self.norm2(x + self.drop(self.multihead_attn(x, memory, memory_blocked)))
            last = self.norm3
        else:
            last = self.norm2
        return last(x + self.drop(self.linear2(self.drop(torch.relu(self.linear1(x))))))


class Stack(nn.Module):
    def __init__(self, n, d_model, *args):
        super().__init__()
        self.layers = nn.ModuleList(Block(d_model, *args) for _ in range(n))
        self.norm = nn.LayerNorm(d_model)


class Seq2SeqTransformer(nn.Module):
    def __init__(self, src_vocab_size, tgt_vocab_size, d_model=512, nhead=8,
                 num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048,
                 dropout=0.1, max_len=5000, pad_idx=0):
        super().__init__()
        self.pad_idx = pad_idx
        self.src_embed = nn.Embedding(src_vocab_size, d_model, padding_idx=pad_idx)
        self.tgt_embed = nn.Embedding(tgt_vocab_size, d_model, padding_idx=pad_idx)
        self.positional_encoding = nn.Module()
        half = torch.arange(0, d_model, 2) / d_model
        angle = torch.arange(max_len)[:, None] / 10000 ** half[None]
        table = torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1)[:, :d_model]
        self.positional_encoding.register_buffer("pe", table)
        self.positional_encoding.dropout = nn.Dropout(dropout)
        self.encoder = Stack(num_encoder_layers, d_model, nhead, dim_feedforward, dropout, False)
        self.decoder = Stack(num_decoder_layers, d_model, nhead, dim_feedforward, dropout, True)
        self.generator = nn.Linear(d_model, tgt_vocab_size)

    def _vectors(self, table, ids):
        x = table(ids) * math.sqrt(table.embedding_dim)
        return self.positional_encoding.dropout(x + self.positional_encoding.pe[: ids.size(1)])

    def encode(self, src):
        blocked = (src == self.pad_idx)[:, None, None, :]
        x = self._vectors(self.src_embed, src)
        for layer in self.encoder.layers:
            x = layer(x, blocked)
        return self.encoder.norm(x)

    def decode(self, tgt, memory, src):
        t = tgt.size(1)
        future = torch.ones(t, t, dtype=torch.bool, device=tgt.device).triu(1)
        self_blocked = future | (tgt == self.pad_idx)[:, None, None, :]
        memory_blocked = (src == self.pad_idx)[:, None, None, :]
        y = self._vectors(self.tgt_embed, tgt)
        for layer in self.decoder.layers:
            y = layer(y, self_blocked, memory, memory_blocked)
        return self.decoder.norm(y)

    def forward(self, src, tgt):
        return self.generator(self.decode(tgt, self.encode(src), src))


def greedy_decode(model, src, max_len, bos_idx, eos_idx):
    training = model.training
    model.train(False)
    with torch.no_grad():
        memory = model.encode(src)
        ys = src.new_full((src.size(0), 1), bos_idx)
        for _ in range(max_len - 1):
            logits = model.generator(model.decode(ys, memory, src))
            ys = torch.cat([ys, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
            if (ys[:, 1:] == eos_idx).any(dim=1).all():
                break
    model.train(training)
    # Everything after a row's first eos becomes padding.
    after_eos = (ys == eos_idx).long().cumsum(dim=1) - (ys == eos_idx).long() > 0
    after_eos[:, 0] = False
    return ys.masked_fill(after_eos, model.pad_idx)
