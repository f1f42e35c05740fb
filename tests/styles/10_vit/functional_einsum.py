"""Kata 10 written functionally: patches by F.unfold and a matmul with the conv's weight,
q, k, v from the thirds of qkv.weight, einsum attention, F.gelu / F.dropout, and a DropPath
mask built with torch.rand(...) < keep and torch.where."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class PatchEmbed(nn.Module):
    def __init__(self, img_size=224, patch_size=16, in_chans=3, embed_dim=768):
        super().__init__()
        self.patch_size = patch_size
        self.proj = nn.Conv2d(in_chans, embed_dim, patch_size, stride=patch_size)

    def forward(self, x):
        p = self.patch_size
        patches = F.unfold(x, kernel_size=p, stride=p)  # (B, C*p*p, N), row-major patches
        weight = self.proj.weight.flatten(1)             # (D, C*p*p)
        return patches.transpose(1, 2) @ weight.T + self.proj.bias


class Attention(nn.Module):
    def __init__(self, dim, num_heads=8, qkv_bias=False, attn_drop=0.0, proj_drop=0.0):
        super().__init__()
        self.h = num_heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        b, n, c = x.shape
        d = c // self.h
        weights = self.qkv.weight.chunk(3)
        biases = self.qkv.bias.chunk(3) if self.qkv.bias is not None else (None,) * 3
        q, k, v = (F.linear(x, w, bias).view(b, n, self.h, d) for w, bias in zip(weights, biases))
        scores = torch.einsum("bnhd,bmhd->bhnm", q, k) / math.sqrt(d)
        attn = self.attn_drop(F.softmax(scores, dim=-1))
        out = torch.einsum("bhnm,bmhd->bnhd", attn, v).reshape(b, n, c)
        return self.proj_drop(self.proj(out))


class Mlp(nn.Module):
    def __init__(self, in_features, hidden_features=None, out_features=None, drop=0.0):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features or in_features)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden_features or in_features, out_features or in_features)
        self.p = drop

    def forward(self, x):
        x = F.dropout(F.gelu(self.fc1(x)), self.p, self.training)
        return F.dropout(self.fc2(x), self.p, self.training)


class DropPath(nn.Module):
    def __init__(self, drop_prob=0.0, scale_by_keep=True):
        super().__init__()
        self.drop_prob, self.scale_by_keep = drop_prob, scale_by_keep

    def forward(self, x):
        if not self.training or self.drop_prob <= 0:
            return x
        keep = 1.0 - self.drop_prob
        mask = torch.rand(x.shape[0], device=x.device) < keep
        mask = mask.view(-1, *([1] * (x.dim() - 1)))
        factor = 1.0 / keep if self.scale_by_keep and keep > 0 else 1.0
        return torch.where(mask, x * factor, torch.zeros_like(x))


class Block(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=False, drop=0.0, attn_drop=0.0,
                 drop_path=0.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = Attention(dim, num_heads, qkv_bias=qkv_bias, attn_drop=attn_drop,
                              proj_drop=drop)
        self.drop_path = DropPath(drop_path)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), drop=drop)

    def forward(self, x):
        x = x + self.drop_path(self.attn(self.norm1(x)))
        x = x + self.drop_path(self.mlp(self.norm2(x)))
        return x
