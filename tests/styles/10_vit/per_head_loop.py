"""Kata 10 spelled out: patches cut by reshape/permute and projected with the conv's
weight, one head at a time with bmm and a hand-written softmax, GELU by its erf formula,
and DropPath from one bernoulli draw per sample."""

import math

import torch
from torch import nn


class PatchEmbed(nn.Module):
    def __init__(self, img_size=224, patch_size=16, in_chans=3, embed_dim=768):
        super().__init__()
        self.p = patch_size
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        B, C, H, W = x.shape
        p = self.p
        gh, gw = H // p, W // p
        patches = x.reshape(B, C, gh, p, gw, p).permute(0, 2, 4, 1, 3, 5)  # (B, gh, gw, C, p, p)
        patches = patches.reshape(B, gh * gw, C * p * p)
        return torch.matmul(patches, self.proj.weight.reshape(self.proj.out_channels, -1).t()) \
            + self.proj.bias


class Attention(nn.Module):
    def __init__(self, dim, num_heads=8, qkv_bias=False, attn_drop=0.0, proj_drop=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        B, N, C = x.shape
        d = C // self.num_heads
        qkv = self.qkv(x)
        q_all, k_all, v_all = qkv[..., :C], qkv[..., C:2 * C], qkv[..., 2 * C:]
        heads = []
        for i in range(self.num_heads):
            cols = slice(i * d, (i + 1) * d)
            q, k, v = q_all[..., cols], k_all[..., cols], v_all[..., cols]
            scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(d)
            scores = scores - scores.max(dim=-1, keepdim=True).values
            weights = scores.exp()
            weights = weights / weights.sum(dim=-1, keepdim=True)
            heads.append(torch.bmm(self.attn_drop(weights), v))
        return self.proj_drop(self.proj(torch.cat(heads, dim=-1)))


class Mlp(nn.Module):
    def __init__(self, in_features, hidden_features=None, out_features=None, drop=0.0):
        super().__init__()
        hidden = hidden_features if hidden_features is not None else in_features
        out = out_features if out_features is not None else in_features
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, out)
        self.drop = nn.Dropout(drop)

    def forward(self, x):
        h = self.fc1(x)
        h = 0.5 * h * (1.0 + torch.erf(h / math.sqrt(2.0)))
        return self.drop(self.fc2(self.drop(h)))


class DropPath(nn.Module):
    def __init__(self, drop_prob=0.0, scale_by_keep=True):
        super().__init__()
        self.drop_prob = float(drop_prob)
        self.scale_by_keep = scale_by_keep

    def forward(self, x):
        if self.drop_prob == 0.0 or not self.training:
            return x
        keep = 1.0 - self.drop_prob
        probs = torch.full((x.size(0),), keep, dtype=x.dtype, device=x.device)
        mask = torch.bernoulli(probs)
        if self.scale_by_keep and keep > 0.0:
            mask = mask / keep
        return x * mask.reshape((-1,) + (1,) * (x.dim() - 1))


class Block(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=False, drop=0.0, attn_drop=0.0,
                 drop_path=0.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = Attention(dim, num_heads=num_heads, qkv_bias=qkv_bias, attn_drop=attn_drop,
                              proj_drop=drop)
        self.drop_path = DropPath(drop_path)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = Mlp(in_features=dim, hidden_features=int(dim * mlp_ratio), drop=drop)

    def forward(self, x):
        attn_branch = self.drop_path(self.attn(self.norm1(x)))
        x = x + attn_branch
        mlp_branch = self.drop_path(self.mlp(self.norm2(x)))
        return x + mlp_branch
