"""Kata 06: a Transformer encoder layer and a stack of them.

Read README.md in this folder, fill in the two classes below, then run
    pytest katas/06_encoder_layer
"""

from __future__ import annotations

import copy  # noqa: F401  (you will want copy.deepcopy)
from typing import Callable

import torch.nn.functional as F  # noqa: F401
from torch import Tensor, nn


class TransformerEncoderLayer(nn.Module):
    """Self-attention and a feed-forward block, each with a residual connection and a norm.

    Submodules (PyTorch's names, so that its state dict loads): self_attn (an
    nn.MultiheadAttention), linear1 (d_model -> dim_feedforward), dropout, linear2
    (dim_feedforward -> d_model), norm1, norm2 (nn.LayerNorm(d_model, eps=layer_norm_eps)),
    dropout1, dropout2. activation is "relu", "gelu" or a callable.
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = "relu",
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
    ):
        super().__init__()
        raise NotImplementedError("see katas/06_encoder_layer/README.md")

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
    ) -> Tensor:
        """src (seq, batch, d_model), or (batch, seq, d_model) with batch_first=True.

        src_mask (seq, seq): bool (True = blocked) or float (added to the logits).
        src_key_padding_mask bool (batch, seq): True at padded positions.
        Returns a tensor shaped like src.
        """
        raise NotImplementedError("see katas/06_encoder_layer/README.md")


class TransformerEncoder(nn.Module):
    """num_layers independent copies of encoder_layer applied in turn, then norm if given.

    Attributes: layers (an nn.ModuleList of num_layers deep copies), norm (or None).
    """

    def __init__(self, encoder_layer: nn.Module, num_layers: int, norm: nn.Module | None = None):
        super().__init__()
        raise NotImplementedError("see katas/06_encoder_layer/README.md")

    def forward(
        self,
        src: Tensor,
        mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
    ) -> Tensor:
        """src as for the layer; every layer gets mask (as src_mask) and src_key_padding_mask.

        Returns a tensor shaped like src.
        """
        raise NotImplementedError("see katas/06_encoder_layer/README.md")
