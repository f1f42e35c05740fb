"""Kata 15: a Llama decoder block (RMSNorm, RoPE, grouped-query causal attention, SwiGLU).

Read README.md in this folder, fill in the four classes below, then run
    pytest katas/15_llama_block
"""

from __future__ import annotations

import math  # noqa: F401  (you will want math.sqrt)

import torch  # noqa: F401
import torch.nn.functional as F  # noqa: F401
from torch import Tensor, nn


class RMSNorm(nn.Module):
    """x / sqrt(mean(x², dim=-1) + eps) * weight, over the last axis of x (..., dim).

    One parameter: weight (dim,), initialised to ones. float16/bfloat16 inputs are computed
    in float32 and cast back. nn.RMSNorm and F.rms_norm are forbidden here.
    """

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        raise NotImplementedError("see katas/15_llama_block/README.md")

    def forward(self, x: Tensor) -> Tensor:
        """x (..., dim) -> (..., dim), x's dtype."""
        raise NotImplementedError("see katas/15_llama_block/README.md")


class SwiGLU(nn.Module):
    """Llama's MLP: down_proj(silu(gate_proj(x)) * up_proj(x)).

    gate_proj, up_proj: nn.Linear(dim, hidden_dim, bias=False);
    down_proj: nn.Linear(hidden_dim, dim, bias=False).
    """

    def __init__(self, dim: int, hidden_dim: int):
        super().__init__()
        raise NotImplementedError("see katas/15_llama_block/README.md")

    def forward(self, x: Tensor) -> Tensor:
        """x (..., dim) -> (..., dim)."""
        raise NotImplementedError("see katas/15_llama_block/README.md")


class LlamaAttention(nn.Module):
    """Causal grouped-query self-attention with RoPE on the queries and keys.

    head_dim = dim // num_heads. q_proj, o_proj: nn.Linear(dim, dim, bias=False); k_proj,
    v_proj: nn.Linear(dim, num_kv_heads * head_dim, bias=False). Query head j reads
    key/value head j // (num_heads // num_kv_heads).
    """

    def __init__(self, dim: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0):
        super().__init__()
        raise NotImplementedError("see katas/15_llama_block/README.md")

    def forward(self, x: Tensor, positions: Tensor | None = None) -> Tensor:
        """x (b, n, dim) -> (b, n, dim).

        positions: None (= 0 ... n-1), or an integer tensor (n,) shared by the batch or
        (b, n), one row per sequence; they set the RoPE angles only. The causal mask follows
        the sequence index: query i sees keys 0 ... i.
        """
        raise NotImplementedError("see katas/15_llama_block/README.md")


class LlamaBlock(nn.Module):
    """The pre-norm decoder block, with LlamaDecoderLayer's submodule names:
    input_layernorm, self_attn, post_attention_layernorm, mlp."""

    def __init__(self, dim: int, num_heads: int, num_kv_heads: int, hidden_dim: int,
                 rope_base: float = 10000.0, eps: float = 1e-6):
        super().__init__()
        raise NotImplementedError("see katas/15_llama_block/README.md")

    def forward(self, x: Tensor, positions: Tensor | None = None) -> Tensor:
        """x (b, n, dim) -> (b, n, dim):
        h = x + self_attn(input_layernorm(x), positions); out = h + mlp(post_attention_layernorm(h))."""
        raise NotImplementedError("see katas/15_llama_block/README.md")
