"""Kata 13 in another style: one query head at a time, its kv head picked by index, a
hand-written softmax that leaves fully masked rows at zero."""

import math

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, num_kv_heads, bias=False):
        super().__init__()
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        head_dim = embed_dim // num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias)
        self.k_proj = nn.Linear(embed_dim, num_kv_heads * head_dim, bias)
        self.v_proj = nn.Linear(embed_dim, num_kv_heads * head_dim, bias)
        self.o_proj = nn.Linear(embed_dim, embed_dim, bias)

    def forward(self, x, attn_mask=None, is_causal=False):
        b, n, _ = x.shape
        d = self.embed_dim // self.num_heads
        group = self.num_heads // self.num_kv_heads
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        mask = None
        if attn_mask is not None:
            mask = torch.broadcast_to(attn_mask, (b, self.num_heads, n, n))
        causal = torch.arange(n, device=x.device)[None, :] > torch.arange(n, device=x.device)[:, None]
        outputs = []
        for j in range(self.num_heads):
            g = j // group
            qj = q[..., j * d:(j + 1) * d]
            kj = k[..., g * d:(g + 1) * d]
            vj = v[..., g * d:(g + 1) * d]
            s = torch.bmm(qj, kj.transpose(1, 2)) / math.sqrt(d)  # (b, n, n)
            if mask is not None:
                mj = mask[:, j]
                s = s.masked_fill(mj, -math.inf) if mj.dtype == torch.bool else s + mj
            if is_causal:
                s = s.masked_fill(causal, -math.inf)
            top = s.amax(dim=-1, keepdim=True)
            top = torch.where(torch.isinf(top), torch.zeros_like(top), top)
            e = torch.exp(s - top)
            total = e.sum(dim=-1, keepdim=True)
            w = e / torch.where(total == 0, torch.ones_like(total), total)
            outputs.append(torch.bmm(w, vj))
        return self.o_proj(torch.cat(outputs, dim=-1))


def kv_cache_bytes(batch_size, seq_len, num_layers, embed_dim, num_heads, num_kv_heads,
                   dtype=torch.float16):
    one_layer = torch.empty(0, dtype=dtype).element_size() * batch_size * seq_len * (
        embed_dim // num_heads) * num_kv_heads
    return int(2 * num_layers * one_layer)
