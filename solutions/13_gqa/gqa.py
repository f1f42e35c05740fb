"""Reference solution for kata 13: grouped-query (and multi-query) attention."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


class GroupedQueryAttention(nn.Module):
    """Self-attention whose num_heads query heads share num_kv_heads key/value heads.

    Query head j reads key/value head j // (num_heads // num_kv_heads): consecutive query
    heads form a group (Llama's repeat_kv, F.scaled_dot_product_attention(enable_gqa=True)).
    num_kv_heads = 1 is multi-query attention, num_kv_heads = num_heads multi-head attention.

    Submodules: q_proj (E -> E), k_proj and v_proj (E -> num_kv_heads * head_dim),
    o_proj (E -> E), all nn.Linear with bias=bias; head_dim = E // num_heads.
    """

    def __init__(self, embed_dim: int, num_heads: int, num_kv_heads: int, bias: bool = False):
        super().__init__()
        if embed_dim % num_heads != 0:
            raise ValueError(f"embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        if num_heads % num_kv_heads != 0:
            raise ValueError(f"num_heads {num_heads} is not divisible by num_kv_heads {num_kv_heads}")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = embed_dim // num_heads
        kv_dim = num_kv_heads * self.head_dim
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.k_proj = nn.Linear(embed_dim, kv_dim, bias=bias)
        self.v_proj = nn.Linear(embed_dim, kv_dim, bias=bias)
        self.o_proj = nn.Linear(embed_dim, embed_dim, bias=bias)

    def forward(self, x: Tensor, attn_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        """x (b, n, E) -> (b, n, E).

        attn_mask: bool (True = blocked) or float (added to the logits), broadcastable to
        (b, num_heads, n, n). is_causal: query i sees keys 0..i only (on top of attn_mask).
        """
        b, n, _ = x.shape
        q = self.q_proj(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)  # (b, h, n, d)
        k = self.k_proj(x).view(b, n, self.num_kv_heads, self.head_dim).transpose(1, 2)  # (b, kv, n, d)
        v = self.v_proj(x).view(b, n, self.num_kv_heads, self.head_dim).transpose(1, 2)  # (b, kv, n, d)

        # Each kv head serves num_heads // num_kv_heads consecutive query heads:
        # (b, kv, n, d) -> (b, h, n, d) with kv head g copied into heads g*group ... g*group+group-1.
        group = self.num_heads // self.num_kv_heads
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)

        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # (b, h, n, n)
        if attn_mask is not None:
            if attn_mask.dtype == torch.bool:
                scores = scores.masked_fill(attn_mask, float("-inf"))
            else:
                scores = scores + attn_mask
        if is_causal:
            future = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(diagonal=1)
            scores = scores.masked_fill(future, float("-inf"))

        # A query whose keys are all blocked attends to nothing: zero weights, and no NaN
        # forward or backward (the softmax of an all -inf row is NaN, so it never sees one).
        all_blocked = torch.isneginf(scores).all(dim=-1, keepdim=True)
        scores = scores.masked_fill(all_blocked, 0.0)
        weights = torch.softmax(scores, dim=-1).masked_fill(all_blocked, 0.0)

        attended = (weights @ v).transpose(1, 2).reshape(b, n, self.embed_dim)  # (b, n, E)
        return self.o_proj(attended)


def kv_cache_bytes(batch_size: int, seq_len: int, num_layers: int, embed_dim: int,
                   num_heads: int, num_kv_heads: int, dtype: torch.dtype = torch.float16) -> int:
    """Bytes of the key/value cache: keys and values of every layer, for every token.

    Per layer and token: 2 (keys and values) * num_kv_heads * head_dim numbers of dtype,
    head_dim = embed_dim // num_heads. A plain Python int (exact for any size).
    """
    head_dim = embed_dim // num_heads
    itemsize = torch.empty((), dtype=dtype).element_size()
    return 2 * batch_size * seq_len * num_layers * num_kv_heads * head_dim * itemsize
