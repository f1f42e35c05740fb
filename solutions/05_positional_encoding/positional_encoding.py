"""Reference solution for kata 05: sinusoidal positional encoding."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def sinusoidal_positional_encoding(max_len: int, d_model: int, base: float = 10000.0) -> Tensor:
    """The table of "Attention Is All You Need", shape (max_len, d_model).

    PE[p, 2i] = sin(p / base^(2i/d_model)) and PE[p, 2i+1] = cos(p / base^(2i/d_model));
    an odd d_model has one more sin column than cos columns. Returned in torch's default
    dtype (float32).
    """
    # Angles reach max_len radians: compute them in float64 so that float32 rounding of
    # p * omega does not show in the long tables, then round once at the end.
    position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)  # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(d_model / 2),)
    inv_freq = torch.exp(-math.log(base) * two_i / d_model)  # 1 / base^(2i/d_model)
    angles = position * inv_freq  # (max_len, ceil(d_model / 2))
    table = torch.empty(max_len, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles[:, : d_model // 2])  # odd d_model: one cos fewer
    return table.to(torch.get_default_dtype())


class PositionalEncoding(nn.Module):
    """Adds the sinusoidal table to a sequence of embeddings, then applies dropout.

    x is (seq, batch, d_model), or (batch, seq, d_model) with batch_first=True.
    """

    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000,
                 batch_first: bool = False):
        super().__init__()
        self.max_len = max_len
        self.batch_first = batch_first
        self.dropout = nn.Dropout(dropout)
        # A buffer: moved by .to() and saved with the module, but never trained.
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model))

    def forward(self, x: Tensor) -> Tensor:
        """dropout(x + pe[:seq_len]), added along the sequence axis; x's dtype is kept."""
        seq_len = x.size(1 if self.batch_first else 0)
        if seq_len > self.max_len:
            raise ValueError(
                f"sequence length {seq_len} is longer than max_len={self.max_len}"
            )
        pe = self.pe[:seq_len].to(x.dtype)  # (seq_len, d_model)
        pe = pe.unsqueeze(0) if self.batch_first else pe.unsqueeze(1)
        return self.dropout(x + pe)
