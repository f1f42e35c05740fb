"""Mutant: 2 * i // d_model (integer division) makes every exponent 0: one frequency."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def sinusoidal_positional_encoding(max_len: int, d_model: int, base: float = 10000.0) -> Tensor:
    pe = torch.zeros(max_len, d_model)
    for pos in range(max_len):
        for i in range(0, d_model, 2):
            pe[pos, i] = math.sin(pos / (base ** (2 * (i // 2) // d_model)))
            if i + 1 < d_model:
                pe[pos, i + 1] = math.cos(pos / (base ** (2 * (i // 2) // d_model)))
    return pe


class PositionalEncoding(nn.Module):
    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000,
                 batch_first: bool = False):
        super().__init__()
        self.max_len = max_len
        self.batch_first = batch_first
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model))

    def forward(self, x: Tensor) -> Tensor:
        seq_len = x.size(1 if self.batch_first else 0)
        if seq_len > self.max_len:
            raise ValueError(f"sequence length {seq_len} is longer than max_len={self.max_len}")
        pe = self.pe[:seq_len].to(x.dtype)
        pe = pe.unsqueeze(0) if self.batch_first else pe.unsqueeze(1)
        return self.dropout(x + pe)
