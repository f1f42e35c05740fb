"""Reference solution for kata 09: the whole encoder-decoder Transformer and greedy decoding."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


class PositionalEncoding(nn.Module):
    """Kata 05's sinusoidal positional encoding, batch-first: dropout(x + pe[:seq]).

    x is (batch, seq, d_model). The table is a buffer ``pe`` of shape (max_len, d_model).
    """

    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000):
        super().__init__()
        self.max_len = max_len
        self.dropout = nn.Dropout(dropout)
        # Angles reach max_len radians: compute in float64, round once at the end.
        position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)  # (max_len, 1)
        two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(d_model / 2),)
        angles = position / 10000.0 ** (two_i / d_model)  # (max_len, ceil(d_model / 2))
        table = torch.empty(max_len, d_model, dtype=torch.float64)
        table[:, 0::2] = torch.sin(angles)
        table[:, 1::2] = torch.cos(angles[:, : d_model // 2])  # odd d_model: one cos fewer
        self.register_buffer("pe", table.to(torch.get_default_dtype()))

    def forward(self, x: Tensor) -> Tensor:
        """x (batch, seq, d_model) -> dropout(x + pe[:seq]), in x's dtype."""
        seq_len = x.size(1)
        if seq_len > self.max_len:
            raise ValueError(f"sequence length {seq_len} is longer than max_len={self.max_len}")
        return self.dropout(x + self.pe[:seq_len].to(x.dtype).unsqueeze(0))


class Seq2SeqTransformer(nn.Module):
    """The encoder-decoder of "Attention Is All You Need", batch-first.

    Token ids: src (batch, src_len) and tgt (batch, tgt_len), int64; ``pad_idx`` marks
    padding in both. forward returns logits (batch, tgt_len, tgt_vocab_size), no softmax.
    """

    def __init__(
        self,
        src_vocab_size: int,
        tgt_vocab_size: int,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        max_len: int = 5000,
        pad_idx: int = 0,
    ):
        super().__init__()
        self.d_model = d_model
        self.pad_idx = pad_idx
        self.src_embed = nn.Embedding(src_vocab_size, d_model, padding_idx=pad_idx)
        self.tgt_embed = nn.Embedding(tgt_vocab_size, d_model, padding_idx=pad_idx)
        self.positional_encoding = PositionalEncoding(d_model, dropout, max_len)
        encoder_layer = nn.TransformerEncoderLayer(
            d_model, nhead, dim_feedforward, dropout, batch_first=True)
        # No nested tensors: padded positions keep ordinary values in every mode.
        self.encoder = nn.TransformerEncoder(
            encoder_layer, num_encoder_layers, norm=nn.LayerNorm(d_model),
            enable_nested_tensor=False)
        decoder_layer = nn.TransformerDecoderLayer(
            d_model, nhead, dim_feedforward, dropout, batch_first=True)
        self.decoder = nn.TransformerDecoder(
            decoder_layer, num_decoder_layers, norm=nn.LayerNorm(d_model))
        self.generator = nn.Linear(d_model, tgt_vocab_size)

    def embed(self, embedding: nn.Embedding, tokens: Tensor) -> Tensor:
        """tokens (batch, seq) -> dropout(embedding * sqrt(d_model) + pe), (batch, seq, d_model)."""
        return self.positional_encoding(embedding(tokens) * math.sqrt(self.d_model))

    def encode(self, src: Tensor) -> Tensor:
        """src (batch, src_len) -> memory (batch, src_len, d_model)."""
        return self.encoder(self.embed(self.src_embed, src),
                            src_key_padding_mask=src == self.pad_idx)

    def decode(self, tgt: Tensor, memory: Tensor, src: Tensor) -> Tensor:
        """tgt (batch, tgt_len), memory (batch, src_len, d_model), src (batch, src_len)
        -> (batch, tgt_len, d_model). src only supplies the memory's padding mask."""
        tgt_len = tgt.size(1)
        # True above the diagonal: position i may not look at positions after i.
        causal = torch.ones(tgt_len, tgt_len, dtype=torch.bool, device=tgt.device).triu(1)
        return self.decoder(
            self.embed(self.tgt_embed, tgt), memory, tgt_mask=causal,
            tgt_key_padding_mask=tgt == self.pad_idx,
            memory_key_padding_mask=src == self.pad_idx)

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        """src (batch, src_len), tgt (batch, tgt_len) -> logits (batch, tgt_len, tgt_vocab)."""
        return self.generator(self.decode(tgt, self.encode(src), src))


def greedy_decode(model: nn.Module, src: Tensor, max_len: int, bos_idx: int,
                  eos_idx: int) -> Tensor:
    """Greedy decoding: src (batch, src_len) -> tokens int64 (batch, <= max_len).

    Every row starts with bos_idx; each step appends the argmax of the last position's
    logits; once a row has produced eos_idx its later positions are model.pad_idx. Stops
    when every row has produced eos_idx or the length reaches max_len (bos included).
    Runs in eval mode without gradients; the model's training flag is restored.
    """
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            memory = model.encode(src)
            batch = src.size(0)
            ys = torch.full((batch, 1), bos_idx, dtype=torch.long, device=src.device)
            finished = torch.zeros(batch, dtype=torch.bool, device=src.device)
            while ys.size(1) < max_len and not bool(finished.all()):
                out = model.decode(ys, memory, src)  # (batch, len, d_model)
                next_token = model.generator(out[:, -1]).argmax(dim=-1)  # (batch,)
                next_token = next_token.masked_fill(finished, model.pad_idx)
                ys = torch.cat([ys, next_token.unsqueeze(1)], dim=1)
                finished = finished | (next_token == eos_idx)
            return ys
    finally:
        model.train(was_training)
