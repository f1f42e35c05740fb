"""Reference solution for kata 10: the Vision Transformer's block, in timm's names."""

from __future__ import annotations

from torch import Tensor, nn


def _pair(value: int | tuple[int, int]) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else (int(value[0]), int(value[1]))


class PatchEmbed(nn.Module):
    """Cut an image into p x p patches and project each one to embed_dim.

    x (B, C, H, W), H and W multiples of p -> (B, N, D) with N = (H/p)(W/p) patches in
    row-major order (left to right, then top to bottom) and D = embed_dim.
    """

    def __init__(self, img_size: int | tuple[int, int] = 224, patch_size: int = 16,
                 in_chans: int = 3, embed_dim: int = 768):
        super().__init__()
        self.img_size = _pair(img_size)
        self.patch_size = _pair(patch_size)
        self.grid_size = (self.img_size[0] // self.patch_size[0],
                          self.img_size[1] // self.patch_size[1])
        self.num_patches = self.grid_size[0] * self.grid_size[1]
        # A convolution whose kernel equals its stride is one linear map per patch.
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x: Tensor) -> Tensor:
        x = self.proj(x)                     # (B, D, H/p, W/p)
        return x.flatten(2).transpose(1, 2)  # (B, D, N) -> (B, N, D)


class Attention(nn.Module):
    """Multi-head self-attention with one fused qkv projection.

    x (B, N, dim) -> (B, N, dim). qkv's output features are all of q, then all of k, then
    all of v, each num_heads heads of head_dim = dim // num_heads.
    """

    def __init__(self, dim: int, num_heads: int = 8, qkv_bias: bool = False,
                 attn_drop: float = 0.0, proj_drop: float = 0.0):
        super().__init__()
        if dim % num_heads:
            raise ValueError(f"dim ({dim}) must be divisible by num_heads ({num_heads})")
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x: Tensor) -> Tensor:
        B, N, C = x.shape
        # (B, N, 3*C) -> (B, N, 3, h, d) -> (3, B, h, N, d): the 3 is the outer factor.
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)                          # each (B, h, N, d)
        attn = (q * self.scale) @ k.transpose(-2, -1)   # (B, h, N, N)
        attn = self.attn_drop(attn.softmax(dim=-1))
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)  # (B, h, N, d) -> (B, N, h*d)
        return self.proj_drop(self.proj(x))


class Mlp(nn.Module):
    """fc1 -> GELU (exact) -> dropout -> fc2 -> dropout, on each token: (..., in) -> (..., out)."""

    def __init__(self, in_features: int, hidden_features: int | None = None,
                 out_features: int | None = None, drop: float = 0.0):
        super().__init__()
        hidden_features = hidden_features or in_features
        out_features = out_features or in_features
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden_features, out_features)
        self.drop = nn.Dropout(drop)

    def forward(self, x: Tensor) -> Tensor:
        x = self.drop(self.act(self.fc1(x)))
        return self.drop(self.fc2(x))


def drop_path(x: Tensor, drop_prob: float = 0.0, training: bool = False,
              scale_by_keep: bool = True) -> Tensor:
    """Zero each sample's x (the whole of x[i]) with probability drop_prob while training,
    and divide the kept samples by 1 - drop_prob when scale_by_keep."""
    if drop_prob == 0.0 or not training:
        return x
    keep_prob = 1.0 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)  # one draw per sample, broadcast over the rest
    keep = x.new_empty(shape).bernoulli_(keep_prob)
    if keep_prob > 0.0 and scale_by_keep:
        keep = keep / keep_prob
    return x * keep


class DropPath(nn.Module):
    """Stochastic depth: drop a residual branch for whole samples (x (B, ...) -> same shape)."""

    def __init__(self, drop_prob: float = 0.0, scale_by_keep: bool = True):
        super().__init__()
        self.drop_prob = drop_prob
        self.scale_by_keep = scale_by_keep

    def forward(self, x: Tensor) -> Tensor:
        return drop_path(x, self.drop_prob, self.training, self.scale_by_keep)


class Block(nn.Module):
    """A Pre-LN Transformer block: x (B, N, dim) -> (B, N, dim).

    x = x + drop_path(attn(norm1(x))); x = x + drop_path(mlp(norm2(x))).
    """

    def __init__(self, dim: int, num_heads: int, mlp_ratio: float = 4.0, qkv_bias: bool = False,
                 drop: float = 0.0, attn_drop: float = 0.0, drop_path: float = 0.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = Attention(dim, num_heads=num_heads, qkv_bias=qkv_bias, attn_drop=attn_drop,
                              proj_drop=drop)
        self.drop_path = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = Mlp(dim, hidden_features=int(dim * mlp_ratio), drop=drop)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.drop_path(self.attn(self.norm1(x)))
        return x + self.drop_path(self.mlp(self.norm2(x)))
