"""Kata 05: sinusoidal positional encoding.

Read README.md in this folder, fill in the two pieces below, then run
    pytest katas/05_positional_encoding
"""

from __future__ import annotations

import math  # noqa: F401  (math.log may help)

import torch  # noqa: F401
from torch import Tensor, nn


def sinusoidal_positional_encoding(max_len: int, d_model: int, base: float = 10000.0) -> Tensor:
    """The sinusoidal table, shape (max_len, d_model), in torch's default dtype (float32).

    PE[p, 2i]   = sin(p / base^(2i / d_model))
    PE[p, 2i+1] = cos(p / base^(2i / d_model))
    for positions p = 0 .. max_len - 1; an odd d_model has one more sin column than cos.
    """
    raise NotImplementedError("see katas/05_positional_encoding/README.md")


class PositionalEncoding(nn.Module):
    """Adds the table to a sequence of embeddings, then applies dropout.

    Keeps the table as a buffer named ``pe`` of shape (max_len, d_model).
    """

    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000,
                 batch_first: bool = False):
        super().__init__()
        raise NotImplementedError("see katas/05_positional_encoding/README.md")

    def forward(self, x: Tensor) -> Tensor:
        """x (seq, batch, d_model), or (batch, seq, d_model) with batch_first=True.

        Returns dropout(x + pe[:seq]) with the table added along the sequence axis, in x's
        dtype. A sequence longer than max_len raises ValueError.
        """
        raise NotImplementedError("see katas/05_positional_encoding/README.md")
