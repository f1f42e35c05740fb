"""Style: torch.pow in float32 throughout, position / base^(2i/d); forward via transposes."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def sinusoidal_positional_encoding(max_len: int, d_model: int, base: float = 10000.0) -> Tensor:
    position = torch.arange(max_len).float()[:, None]
    div = torch.pow(torch.tensor(base), torch.arange(0, d_model, 2).float() / d_model)
    angles = position / div
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)[:, : d_model // 2]
    return pe


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=5000, batch_first=False):
        super().__init__()
        self.p = dropout
        self.max_len = max_len
        self.batch_first = batch_first
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model),
                             persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        if not self.batch_first:
            x = x.transpose(0, 1)  # (batch, seq, d)
        if x.shape[1] > self.max_len:
            raise ValueError(f"got {x.shape[1]} positions but max_len is {self.max_len}")
        out = x + self.pe[: x.shape[1]].type_as(x)
        out = F.dropout(out, self.p, training=self.training)
        return out if self.batch_first else out.transpose(0, 1)
