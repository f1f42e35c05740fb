"""Kata 09 in another style: PyTorch's encoder and decoder stacks with their defaults
(nested tensors allowed), kata 05's module with a batch_first flag and a float32 table,
causal mask passed with tgt_is_causal, and greedy decoding that preallocates the output
with pad_idx and runs the decoder only on the rows still going."""

from __future__ import annotations

import torch
from torch import nn


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=5000, batch_first=False):
        super().__init__()
        self.batch_first = batch_first
        pos = torch.arange(max_len).float().unsqueeze(1)
        freq = torch.pow(10000.0, -torch.arange(0, d_model, 2).float() / d_model)
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(pos * freq)
        pe[:, 1::2] = torch.cos(pos * freq)[:, : d_model // 2]
        self.register_buffer("pe", pe, persistent=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        if self.batch_first:
            return self.dropout(x + self.pe[None, : x.shape[1]].type_as(x))
        return self.dropout(x + self.pe[: x.shape[0], None].type_as(x))


class Seq2SeqTransformer(nn.Module):
    def __init__(self, src_vocab_size, tgt_vocab_size, d_model=512, nhead=8,
                 num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048,
                 dropout=0.1, max_len=5000, pad_idx=0):
        super().__init__()
        self.d_model, self.pad_idx = d_model, pad_idx
        self.src_embed = nn.Embedding(src_vocab_size, d_model, pad_idx)
        self.tgt_embed = nn.Embedding(tgt_vocab_size, d_model, pad_idx)
        self.positional_encoding = PositionalEncoding(d_model, dropout, max_len, batch_first=True)
        self.encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, batch_first=True),
            num_encoder_layers, nn.LayerNorm(d_model))
        self.decoder = nn.TransformerDecoder(
            nn.TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, batch_first=True),
            num_decoder_layers, nn.LayerNorm(d_model))
        self.generator = nn.Linear(d_model, tgt_vocab_size)

    def _embed(self, table, ids):
        return self.positional_encoding(table(ids) * self.d_model ** 0.5)

    def encode(self, src):
        return self.encoder(self._embed(self.src_embed, src),
                            src_key_padding_mask=src == self.pad_idx)

    def decode(self, tgt, memory, src):
        n = tgt.shape[1]
        causal = torch.triu(torch.ones(n, n, device=tgt.device), diagonal=1).bool()
        return self.decoder(self._embed(self.tgt_embed, tgt), memory, tgt_mask=causal,
                            tgt_is_causal=True, tgt_key_padding_mask=tgt == self.pad_idx,
                            memory_key_padding_mask=src == self.pad_idx)

    def forward(self, src, tgt):
        return self.generator(self.decode(tgt, self.encode(src), src))


def greedy_decode(model, src, max_len, bos_idx, eos_idx):
    was_training = model.training
    model.eval()
    b = src.shape[0]
    out = torch.full((b, max_len), model.pad_idx, dtype=torch.long, device=src.device)
    out[:, 0] = bos_idx
    length = 1
    with torch.inference_mode():
        memory = model.encode(src)
        active = torch.arange(b, device=src.device)
        while length < max_len and active.numel() > 0:
            hidden = model.decode(out[active, :length], memory[active], src[active])
            token = model.generator(hidden[:, -1]).argmax(-1)
            out[active, length] = token
            length += 1
            active = active[token != eos_idx]
    model.train(was_training)
    return out[:, :length].clone()
