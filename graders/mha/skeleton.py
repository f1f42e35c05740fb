"""Kata 03: a minimal multi-head attention, the interview template.

Read README.md in this folder, fill in the class below, then run
    pytest katas/03_mha
"""

from __future__ import annotations

import math  # noqa: F401  (you will want math.sqrt)

import torch  # noqa: F401
import torch.nn.functional as F  # noqa: F401
from torch import Tensor, nn


class MultiheadAttention(nn.Module):
    """Multi-head attention with nn.MultiheadAttention's parameters and layout.

    Parameters (names as in PyTorch, so its state dict loads as it is):
      in_proj_weight (3E, E): W_q, W_k, W_v stacked in that order;
      in_proj_bias (3E), or None when bias=False;
      out_proj = nn.Linear(E, E, bias=bias).
    embed_dim E is split into num_heads heads of width E // num_heads. dropout acts on the
    attention weights, in training mode only.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 batch_first: bool = False):
        super().__init__()
        raise NotImplementedError("see katas/03_mha/README.md")

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                need_weights: bool = True) -> tuple[Tensor, Tensor | None]:
        """query (n, b, E), key and value (m, b, E); (b, n, E) and (b, m, E) with batch_first.

        Returns attn_output shaped like query and the per-head attention weights
        (b, h, n, m) after dropout, or None when need_weights is False.
        """
        raise NotImplementedError("see katas/03_mha/README.md")
