"""Mutant: the encoder keeps the given layer as a submodule and repeats it in layers."""

from __future__ import annotations

import copy
from typing import Callable

import torch.nn.functional as F
from torch import Tensor, nn

_ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"relu": F.relu, "gelu": F.gelu}


class TransformerEncoderLayer(nn.Module):
    """Self-attention and a feed-forward block, each with a residual connection and a norm.

    Post-LN (norm_first=False): x = norm1(x + sa(x)); x = norm2(x + ff(x)).
    Pre-LN (norm_first=True):   x = x + sa(norm1(x)); x = x + ff(norm2(x)).
    src is (seq, batch, d_model), or (batch, seq, d_model) with batch_first=True.
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
        self.self_attn = nn.MultiheadAttention(
            d_model, nhead, dropout=dropout, batch_first=batch_first
        )
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.norm_first = norm_first
        if isinstance(activation, str):
            if activation not in _ACTIVATIONS:
                raise ValueError(
                    f"activation must be 'relu', 'gelu' or a callable, not {activation!r}"
                )
            activation = _ACTIVATIONS[activation]
        self.activation = activation

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
    ) -> Tensor:
        """src_mask (seq, seq), bool (True = blocked) or float (added to the logits);
        src_key_padding_mask bool (batch, seq), True at padded positions.
        Returns a tensor shaped like src."""
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(
        self, x: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None
    ) -> Tensor:
        attended, _ = self.self_attn(
            x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False
        )
        return self.dropout1(attended)

    def _ff_block(self, x: Tensor) -> Tensor:
        hidden = self.dropout(self.activation(self.linear1(x)))
        return self.dropout2(self.linear2(hidden))


class TransformerEncoder(nn.Module):
    """num_layers independent copies of encoder_layer applied in turn, then norm if given."""

    def __init__(self, encoder_layer: nn.Module, num_layers: int, norm: nn.Module | None = None):
        super().__init__()
        # Deep copies: each layer gets its own weights (the given layer is only a template).
        self.layer = encoder_layer
        self.layers = nn.ModuleList([self.layer for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        src: Tensor,
        mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
    ) -> Tensor:
        """src as for the layer; every layer gets the same mask and src_key_padding_mask."""
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, src_key_padding_mask=src_key_padding_mask)
        if self.norm is not None:
            output = self.norm(output)
        return output
