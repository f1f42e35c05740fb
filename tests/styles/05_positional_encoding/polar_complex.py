"""Style: complex exponentials e^(i p w) via torch.polar; (cos, sin) pairs flipped to (sin, cos)."""

from __future__ import annotations

import torch
from torch import nn


def sinusoidal_positional_encoding(max_len, d_model, base=10000.0):
    exponents = torch.arange(0, d_model, 2, dtype=torch.float32) / d_model
    omega = base ** -exponents
    theta = torch.arange(max_len, dtype=torch.float32)[:, None] * omega[None, :]
    unit = torch.polar(torch.ones_like(theta), theta)  # cos + i sin
    pairs = torch.view_as_real(unit).flip(-1)  # (..., 2) = (sin, cos)
    return pairs.reshape(max_len, -1)[:, :d_model]


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=5000, batch_first=False):
        super().__init__()
        self.batch_first = batch_first
        self.max_len = max_len
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model).clone())

    def forward(self, x):
        if self.batch_first:
            n = x.shape[1]
            pattern = "bnd,nd->bnd"
        else:
            n = x.shape[0]
            pattern = "nbd,nd->nbd"
        if n > self.max_len:
            raise ValueError(f"length {n} > max_len {self.max_len}")
        ones = torch.ones_like(x)
        pe = torch.einsum(pattern, ones, self.pe[:n].to(x.dtype))
        return self.dropout(x + pe)
