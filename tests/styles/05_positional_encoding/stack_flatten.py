"""Style: outer product, torch.stack((sin, cos), -1).flatten interleave; einsum-free add."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def sinusoidal_positional_encoding(max_len: int, d_model: int, base: float = 10000.0) -> Tensor:
    pairs = (d_model + 1) // 2
    freqs = torch.exp(torch.arange(pairs) * (-2.0 * math.log(base) / d_model))
    angles = torch.outer(torch.arange(max_len, dtype=torch.float32), freqs)
    table = torch.stack((angles.sin(), angles.cos()), dim=-1).flatten(start_dim=1)
    return table[:, :d_model].contiguous()


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=5000, batch_first=False):
        super().__init__()
        self.seq_dim = 1 if batch_first else 0
        self.drop = nn.Dropout(p=dropout)
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model))

    def forward(self, x: Tensor) -> Tensor:
        n = x.size(self.seq_dim)
        if n > self.pe.size(0):
            raise ValueError(f"max_len={self.pe.size(0)} is too short for length {n}")
        shape = [1] * x.dim()
        shape[self.seq_dim], shape[-1] = n, x.size(-1)
        return self.drop(x + self.pe.narrow(0, 0, n).view(shape).to(x.dtype))
