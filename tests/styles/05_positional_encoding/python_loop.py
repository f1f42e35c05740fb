"""Style: plain Python loops with math.sin / math.cos filling a list; movedim in forward."""

from __future__ import annotations

import math

import torch
from torch import nn


def sinusoidal_positional_encoding(max_len, d_model, base=10000.0):
    rows = []
    for pos in range(max_len):
        row = []
        for j in range(d_model):
            i = j // 2
            angle = pos / math.pow(base, 2 * i / d_model)
            row.append(math.sin(angle) if j % 2 == 0 else math.cos(angle))
        rows.append(row)
    return torch.tensor(rows, dtype=torch.float32).reshape(max_len, d_model)


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=5000, batch_first=False):
        super().__init__()
        self.batch_first = batch_first
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model))

    def forward(self, x):
        seq_first = x if not self.batch_first else x.movedim(1, 0)
        length = seq_first.shape[0]
        if length > len(self.pe):
            raise ValueError("input sequence is longer than max_len")
        out = seq_first + self.pe[:length, None, :].to(dtype=x.dtype)
        out = out if not self.batch_first else out.movedim(0, 1)
        return self.dropout(out)
