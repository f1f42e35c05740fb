"""Kata 09: the whole encoder-decoder Transformer, and greedy decoding with it.

Read README.md in this folder, fill in the class and the function below, then run
    pytest katas/09_transformer
"""

from __future__ import annotations

import math  # noqa: F401  (you will want math.sqrt)

import torch  # noqa: F401
from torch import Tensor, nn


class Seq2SeqTransformer(nn.Module):
    """Embeddings, positions, an encoder, a decoder and a generator, batch-first.

    Submodules: src_embed, tgt_embed (nn.Embedding(vocab, d_model, padding_idx=pad_idx)),
    positional_encoding (kata 05's, batch-first: a buffer ``pe`` of shape
    (max_len, d_model), dropout after the sum), encoder and decoder (the state-dict layout
    of nn.TransformerEncoder / nn.TransformerDecoder: batch_first, Post-LN, ReLU, each with
    a final LayerNorm ``norm``), generator (nn.Linear(d_model, tgt_vocab_size)).
    Attribute: pad_idx. Token ids src (batch, src_len) and tgt (batch, tgt_len) are int64.
    """

    def __init__(
        self,
        src_vocab_size: int,
        tgt_vocab_size: int,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        max_len: int = 5000,
        pad_idx: int = 0,
    ):
        super().__init__()
        raise NotImplementedError("see katas/09_transformer/README.md")

    def encode(self, src: Tensor) -> Tensor:
        """src (batch, src_len) -> memory (batch, src_len, d_model).

        Embeddings times sqrt(d_model), plus positions, through the encoder with
        src_key_padding_mask = src == pad_idx.
        """
        raise NotImplementedError("see katas/09_transformer/README.md")

    def decode(self, tgt: Tensor, memory: Tensor, src: Tensor) -> Tensor:
        """tgt (batch, tgt_len), memory (batch, src_len, d_model), src (batch, src_len)
        -> (batch, tgt_len, d_model).

        The same embedding path for tgt, then the decoder with a causal tgt_mask,
        tgt_key_padding_mask = tgt == pad_idx and memory_key_padding_mask = src == pad_idx.
        """
        raise NotImplementedError("see katas/09_transformer/README.md")

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        """src (batch, src_len), tgt (batch, tgt_len) -> logits (batch, tgt_len,
        tgt_vocab_size): the generator's output, no softmax."""
        raise NotImplementedError("see katas/09_transformer/README.md")


def greedy_decode(model: nn.Module, src: Tensor, max_len: int, bos_idx: int,
                  eos_idx: int) -> Tensor:
    """src (batch, src_len) -> tokens, int64 (batch, <= max_len).

    Row i starts with bos_idx; each step appends the argmax of the last position's logits;
    after a row has produced eos_idx its later positions are model.pad_idx. Stops when
    every row has produced eos_idx or the length reaches max_len (bos_idx counts). Runs in
    eval mode without gradients and restores the model's training flag.
    """
    raise NotImplementedError("see katas/09_transformer/README.md")
