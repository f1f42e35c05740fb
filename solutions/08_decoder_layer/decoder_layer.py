"""Reference solution for kata 08: a Transformer decoder layer and a stack of them."""

from __future__ import annotations

import copy
from typing import Callable

import torch.nn.functional as F
from torch import Tensor, nn

_ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"relu": F.relu, "gelu": F.gelu}


class TransformerDecoderLayer(nn.Module):
    """Self-attention over the target, cross-attention to the memory, a feed-forward block;
    each with a residual connection and a norm.

    Post-LN (norm_first=False):
        x = norm1(x + sa(x)); x = norm2(x + ca(x, memory)); x = norm3(x + ff(x))
    Pre-LN (norm_first=True):
        x = x + sa(norm1(x)); x = x + ca(norm2(x), memory); x = x + ff(norm3(x))
    tgt is (tgt_len, batch, d_model) and memory (mem_len, batch, d_model), or
    (batch, tgt_len, d_model) and (batch, mem_len, d_model) with batch_first=True.
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
        self.multihead_attn = nn.MultiheadAttention(
            d_model, nhead, dropout=dropout, batch_first=batch_first
        )
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm3 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)
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
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
    ) -> Tensor:
        """tgt_mask (tgt_len, tgt_len) and memory_mask (tgt_len, mem_len): bool (True =
        blocked) or float (added to the logits); tgt_key_padding_mask bool (batch, tgt_len)
        and memory_key_padding_mask bool (batch, mem_len), True at padded positions.
        Returns a tensor shaped like tgt."""
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(
        self, x: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None
    ) -> Tensor:
        # need_weights=False: the weights are not used, and with need_weights=True
        # nn.MultiheadAttention gives NaN for a query whose keys are all blocked.
        attended, _ = self.self_attn(
            x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False
        )
        return self.dropout1(attended)

    def _mha_block(
        self,
        x: Tensor,
        memory: Tensor,
        attn_mask: Tensor | None,
        key_padding_mask: Tensor | None,
    ) -> Tensor:
        # Queries from the target, keys and values from the memory.
        attended, _ = self.multihead_attn(
            x, memory, memory, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
            need_weights=False,
        )
        return self.dropout2(attended)

    def _ff_block(self, x: Tensor) -> Tensor:
        hidden = self.dropout(self.activation(self.linear1(x)))
        return self.dropout3(self.linear2(hidden))


class TransformerDecoder(nn.Module):
    """num_layers independent copies of decoder_layer applied in turn, then norm if given."""

    def __init__(self, decoder_layer: nn.Module, num_layers: int, norm: nn.Module | None = None):
        super().__init__()
        # Deep copies: each layer gets its own weights (the given layer is only a template).
        self.layers = nn.ModuleList(copy.deepcopy(decoder_layer) for _ in range(num_layers))
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
    ) -> Tensor:
        """Inputs as for the layer; every layer gets the same memory and the same masks."""
        output = tgt
        for layer in self.layers:
            output = layer(
                output,
                memory,
                tgt_mask=tgt_mask,
                memory_mask=memory_mask,
                tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
            )
        if self.norm is not None:
            output = self.norm(output)
        return output
