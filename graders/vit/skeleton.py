"""Kata 10: the Vision Transformer's block, in timm's names.

Read README.md in this folder, fill in the five classes below, then run
    pytest katas/10_vit
"""

from __future__ import annotations

import math  # noqa: F401

import torch  # noqa: F401
import torch.nn.functional as F  # noqa: F401
from torch import Tensor, nn


class PatchEmbed(nn.Module):
    """Cut an image into patch_size x patch_size patches and project each to embed_dim.

    Submodule: proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size,
    stride=patch_size). img_size is an int or (H, W).
    """

    def __init__(self, img_size: int | tuple[int, int] = 224, patch_size: int = 16,
                 in_chans: int = 3, embed_dim: int = 768):
        super().__init__()
        raise NotImplementedError("see katas/10_vit/README.md")

    def forward(self, x: Tensor) -> Tensor:
        """x (B, C, H, W), H and W multiples of patch_size p (not necessarily img_size).

        Returns (B, N, D): N = (H/p)(W/p) patches in row-major order (patch (i, j) of the
        grid is token i * (W/p) + j), D = embed_dim.
        """
        raise NotImplementedError("see katas/10_vit/README.md")


class Attention(nn.Module):
    """Multi-head self-attention with one fused qkv projection.

    Submodules: qkv = nn.Linear(dim, 3 * dim, bias=qkv_bias) (output features: all of q,
    then all of k, then all of v; each num_heads heads of dim // num_heads), attn_drop
    (dropout on the attention weights), proj = nn.Linear(dim, dim), proj_drop.
    """

    def __init__(self, dim: int, num_heads: int = 8, qkv_bias: bool = False,
                 attn_drop: float = 0.0, proj_drop: float = 0.0):
        super().__init__()
        raise NotImplementedError("see katas/10_vit/README.md")

    def forward(self, x: Tensor) -> Tensor:
        """x (B, N, dim) -> (B, N, dim)."""
        raise NotImplementedError("see katas/10_vit/README.md")


class Mlp(nn.Module):
    """fc1 -> act (nn.GELU(), the exact erf form) -> drop -> fc2 -> drop, on each token.

    Submodules: fc1 = nn.Linear(in_features, hidden_features), act, fc2 =
    nn.Linear(hidden_features, out_features), drop = nn.Dropout(drop). hidden_features and
    out_features default to in_features.
    """

    def __init__(self, in_features: int, hidden_features: int | None = None,
                 out_features: int | None = None, drop: float = 0.0):
        super().__init__()
        raise NotImplementedError("see katas/10_vit/README.md")

    def forward(self, x: Tensor) -> Tensor:
        """x (..., in_features) -> (..., out_features)."""
        raise NotImplementedError("see katas/10_vit/README.md")


class DropPath(nn.Module):
    """Stochastic depth: in training mode, drop a residual branch for whole samples.

    Each sample x[i] is kept with probability 1 - drop_prob (one draw per index of dim 0)
    and, when scale_by_keep, divided by 1 - drop_prob; dropped samples are zeros. The
    identity in eval mode and at drop_prob = 0; zeros (never NaN) at drop_prob = 1.
    """

    def __init__(self, drop_prob: float = 0.0, scale_by_keep: bool = True):
        super().__init__()
        raise NotImplementedError("see katas/10_vit/README.md")

    def forward(self, x: Tensor) -> Tensor:
        """x (B, ...) -> the same shape."""
        raise NotImplementedError("see katas/10_vit/README.md")


class Block(nn.Module):
    """A Pre-LN Transformer block, as in the Vision Transformer.

    Submodules: norm1, norm2 (nn.LayerNorm(dim, eps=1e-6)), attn (your Attention, with
    proj_drop=drop), drop_path (your DropPath, or nn.Identity() at 0), mlp (your Mlp with
    hidden_features=int(dim * mlp_ratio) and drop=drop).
    """

    def __init__(self, dim: int, num_heads: int, mlp_ratio: float = 4.0, qkv_bias: bool = False,
                 drop: float = 0.0, attn_drop: float = 0.0, drop_path: float = 0.0):
        super().__init__()
        raise NotImplementedError("see katas/10_vit/README.md")

    def forward(self, x: Tensor) -> Tensor:
        """x (B, N, dim) -> (B, N, dim):
        x = x + drop_path(attn(norm1(x))), then x = x + drop_path(mlp(norm2(x)))."""
        raise NotImplementedError("see katas/10_vit/README.md")
