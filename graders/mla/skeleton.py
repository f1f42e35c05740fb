"""Kata 23: Multi-head latent attention (DeepSeek-V2's MLA), naive and absorbed.

Read README.md in this folder, fill in the class below, then run
    pytest katas/23_mla
"""

from __future__ import annotations

import torch
from torch import nn


class MultiHeadLatentAttention(nn.Module):
    """DeepSeek-V2/V3 attention in Hugging Face's names; no biases anywhere.

    h = num_heads, r = kv_lora_rank, d_n = qk_nope_head_dim, d_r = qk_rope_head_dim,
    d_v = v_head_dim, d_qk = d_n + d_r.

    Parameters (the state dict of DeepseekV3Attention):
      q_lora_rank None: q_proj            nn.Linear(hidden_size, h * d_qk)
      q_lora_rank int:  q_a_proj          nn.Linear(hidden_size, q_lora_rank)
                        q_a_layernorm     RMSNorm(q_lora_rank, eps)
                        q_b_proj          nn.Linear(q_lora_rank, h * d_qk)
      kv_a_proj_with_mqa  nn.Linear(hidden_size, r + d_r)
      kv_a_layernorm      RMSNorm(r, eps)
      kv_b_proj           nn.Linear(r, h * (d_n + d_v))
      o_proj              nn.Linear(h * d_v, hidden_size)
    """

    def __init__(self, hidden_size: int, num_heads: int, kv_lora_rank: int,
                 qk_nope_head_dim: int, qk_rope_head_dim: int, v_head_dim: int,
                 q_lora_rank: int | None = None, rope_base: float = 10000.0,
                 eps: float = 1e-6) -> None:
        super().__init__()
        raise NotImplementedError("see katas/23_mla/README.md")

    def forward(self, x: torch.Tensor, cache=None, absorbed: bool = False):
        """x (b, t, hidden_size) at positions s ... s+t-1; cache None or (c_kv (b, s, r),
        k_rope (b, s, d_r)).

        Returns (output (b, t, hidden_size), (c_kv (b, s + t, r), k_rope (b, s + t, d_r))):
        the normalised latent and the rotated shared key of every position so far.
        absorbed=True attends in latent space (W_UK folded into the query, W_UV into the
        output) and never builds per-head keys or values of the cached positions.
        """
        raise NotImplementedError("see katas/23_mla/README.md")
