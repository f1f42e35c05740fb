"""Kata 01: single-head scaled dot-product attention.

Read README.md in this folder, fill in the two pieces below, then run
    pytest katas/01_attention
"""

from __future__ import annotations

import math  # noqa: F401  (you will want math.sqrt)

import torch  # noqa: F401
from torch import Tensor, nn


def scaled_dot_product_attention(
    query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """softmax(query @ key^T / sqrt(d_k) + mask) @ value.

    query (..., n, d_k), key (..., m, d_k), value (..., m, d_v); attn_mask bool (True =
    blocked) or float (added to the logits), broadcastable to (..., n, m).
    Returns output (..., n, d_v) and weights (..., n, m); a query whose keys are all
    blocked gets all-zero weights.
    """
    raise NotImplementedError("see katas/01_attention/README.md")


class SingleHeadAttention(nn.Module):
    """One attention head with input and output projections.

    Submodules q_proj, k_proj, v_proj, out_proj: nn.Linear(d_model, d_model, bias=bias).
    """

    def __init__(self, d_model: int, bias: bool = True, batch_first: bool = False):
        super().__init__()
        raise NotImplementedError("see katas/01_attention/README.md")

    def forward(
        self, query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """query (n, b, d) and key/value (m, b, d), or batch first with batch_first=True.

        attn_mask (n, m) or (b, n, m). Returns output shaped like query and weights (b, n, m).
        """
        raise NotImplementedError("see katas/01_attention/README.md")
