"""Kata 14 in another style: q pre-scaled (a copy), k and v split with torch.split, einsum
per block, the causal mask built per block with torch.where; half inputs upcast to float32
up front (lse stays float32, the output is cast back)."""

import math

import torch


def flash_attention(q, k, v, block_size=64, causal=False):
    b, h, n, d = q.shape
    out_dtype = q.dtype
    if out_dtype in (torch.float16, torch.bfloat16):
        q, k, v = q.float(), k.float(), v.float()  # copies: allowed
    q = q.clone() * (1.0 / math.sqrt(d))  # a scaled copy of q: allowed
    m_i = torch.full((b, h, n), -math.inf, dtype=q.dtype, device=q.device)
    l_i = torch.zeros((b, h, n), dtype=q.dtype, device=q.device)
    o_i = torch.zeros((b, h, n, v.shape[-1]), dtype=q.dtype, device=q.device)
    rows = torch.arange(n, device=q.device).unsqueeze(1)
    start = 0
    for k_j, v_j in zip(torch.split(k, block_size, dim=2), torch.split(v, block_size, dim=2)):
        s = torch.einsum("bhnd,bhmd->bhnm", q, k_j)
        if causal:
            cols = start + torch.arange(k_j.shape[2], device=q.device).unsqueeze(0)
            s = torch.where(cols <= rows, s, torch.tensor(-math.inf, dtype=s.dtype, device=s.device))
        m_new = torch.maximum(m_i, s.max(dim=-1).values)
        p = torch.exp(s - m_new.unsqueeze(-1))
        alpha = torch.exp(m_i - m_new)
        l_i = alpha * l_i + p.sum(-1)
        o_i = alpha.unsqueeze(-1) * o_i + torch.einsum("bhnm,bhmd->bhnd", p, v_j)
        m_i = m_new
        start += k_j.shape[2]
    return (o_i / l_i.unsqueeze(-1)).to(out_dtype), m_i + torch.log(l_i)
