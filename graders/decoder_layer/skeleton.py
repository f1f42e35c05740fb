"""Kata 08: a Transformer decoder layer and a stack of them.

Read README.md in this folder, fill in the two classes below, then run
    pytest katas/08_decoder_layer
"""

from __future__ import annotations

import copy  # noqa: F401  (you will want copy.deepcopy)
from typing import Callable

import torch.nn.functional as F  # noqa: F401
from torch import Tensor, nn


class TransformerDecoderLayer(nn.Module):
    """Self-attention over the target, cross-attention to the memory, then a feed-forward
    block; each with a residual connection and a norm (Post-LN or Pre-LN).

    Submodules (PyTorch's names, so that its state dict loads): self_attn and
    multihead_attn (two separate nn.MultiheadAttention), linear1 (d_model ->
    dim_feedforward), dropout, linear2 (dim_feedforward -> d_model), norm1, norm2, norm3
    (nn.LayerNorm(d_model, eps=layer_norm_eps)), dropout1, dropout2, dropout3.
    activation is "relu", "gelu" or a callable.
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
        raise NotImplementedError("see katas/08_decoder_layer/README.md")

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
    ) -> Tensor:
        """tgt (tgt_len, batch, d_model) and memory (mem_len, batch, d_model), or
        (batch, tgt_len, d_model) and (batch, mem_len, d_model) with batch_first=True.

        tgt_mask (tgt_len, tgt_len), for the self-attention, and memory_mask
        (tgt_len, mem_len), for the cross-attention: bool (True = blocked) or float (added
        to the logits). tgt_key_padding_mask bool (batch, tgt_len) and
        memory_key_padding_mask bool (batch, mem_len): True at padded positions.
        Returns a tensor shaped like tgt.
        """
        raise NotImplementedError("see katas/08_decoder_layer/README.md")


class TransformerDecoder(nn.Module):
    """num_layers independent copies of decoder_layer applied in turn, then norm if given.

    Attributes: layers (an nn.ModuleList of num_layers deep copies), norm (or None).
    """

    def __init__(self, decoder_layer: nn.Module, num_layers: int, norm: nn.Module | None = None):
        super().__init__()
        raise NotImplementedError("see katas/08_decoder_layer/README.md")

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
    ) -> Tensor:
        """Inputs as for the layer; every layer gets the same memory and the same four masks.

        Returns a tensor shaped like tgt.
        """
        raise NotImplementedError("see katas/08_decoder_layer/README.md")
