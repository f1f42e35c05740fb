"""Kata 13: grouped-query and multi-query attention, and the size of the key/value cache.

Read README.md in this folder, fill in the class and the function below, then run
    pytest katas/13_gqa
"""

from __future__ import annotations

import math  # noqa: F401  (you will want math.sqrt)

import torch
import torch.nn.functional as F  # noqa: F401
from torch import Tensor, nn


class GroupedQueryAttention(nn.Module):
    """Self-attention whose num_heads query heads share num_kv_heads key/value heads.

    Submodules (nn.Linear, bias=bias): q_proj (E -> E), k_proj and v_proj
    (E -> num_kv_heads * head_dim), o_proj (E -> E); head_dim = E // num_heads.
    Query head j uses key/value head j // (num_heads // num_kv_heads).
    num_kv_heads = 1 is multi-query attention; num_kv_heads = num_heads is multi-head attention.
    """

    def __init__(self, embed_dim: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        raise NotImplementedError("see katas/13_gqa/README.md")

    def forward(self, x: Tensor, attn_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        """x (b, n, E) -> output (b, n, E).

        attn_mask: bool (True = blocked) or float (added to the logits), broadcastable to
        (b, num_heads, n, n). is_causal=True: query i sees keys 0..i (with attn_mask too,
        both apply). A query whose keys are all blocked gets zero attention weights.
        """
        raise NotImplementedError("see katas/13_gqa/README.md")


def kv_cache_bytes(batch_size: int, seq_len: int, num_layers: int, embed_dim: int,
                   num_heads: int, num_kv_heads: int, dtype: torch.dtype = torch.float16) -> int:
    """Bytes of the key/value cache of seq_len tokens: the keys and values of every layer.

    head_dim is embed_dim // num_heads. Return a plain Python int.
    """
    raise NotImplementedError("see katas/13_gqa/README.md")
