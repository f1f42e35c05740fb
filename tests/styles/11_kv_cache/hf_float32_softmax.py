"""Style: Hugging Face's eager attention - bmm over (batch * heads), the blocked scores
filled with torch.finfo(dtype).min (causal attention has no fully masked query), and the
softmax taken in float32 then cast back (`softmax(..., dtype=torch.float32).to(dtype)`),
which is float32-precise in float64."""

from __future__ import annotations

import torch
from torch import nn


class CausalSelfAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, bias=True):
        super().__init__()
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)

    def forward(self, x, cache=None):
        bsz, tgt, _ = x.shape
        H, D = self.num_heads, self.head_dim
        q = self.q_proj(x) * self.scaling
        kk = self.k_proj(x).view(bsz, tgt, H, D).transpose(1, 2).contiguous()
        vv = self.v_proj(x).view(bsz, tgt, H, D).transpose(1, 2).contiguous()
        if cache is not None and cache[0].shape[2] > 0:
            kk = torch.cat([cache[0], kk], dim=2)
            vv = torch.cat([cache[1], vv], dim=2)
        src = kk.shape[2]
        past = src - tgt
        q = q.view(bsz, tgt, H, D).transpose(1, 2).reshape(bsz * H, tgt, D)
        k2 = kk.reshape(bsz * H, src, D)
        v2 = vv.reshape(bsz * H, src, D)
        w = torch.bmm(q, k2.transpose(1, 2))
        i = torch.arange(tgt, device=x.device).unsqueeze(1) + past
        j = torch.arange(src, device=x.device).unsqueeze(0)
        w = w.masked_fill((j > i).unsqueeze(0), torch.finfo(w.dtype).min)
        w = torch.softmax(w, dim=-1, dtype=torch.float32).to(w.dtype)
        o = torch.bmm(w, v2).view(bsz, H, tgt, D).transpose(1, 2).reshape(bsz, tgt, H * D)
        return self.out_proj(o), (kk, vv)
