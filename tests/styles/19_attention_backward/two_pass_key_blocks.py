"""Kata 19 over key blocks only (all queries per block), in two passes: the first sums
D = Σ_j P_ij dP_ij block by block, the second forms dS and the gradients; the forward is
an online softmax (kata 14's), so it never builds (n, m) either. Half inputs: every tile
upcast to float32 (lse float32), the results cast back."""

import math

import torch


def _tile_scores(q, k_j, start, causal, scale):
    s = q.float() @ k_j.float().transpose(-2, -1) * scale if q.dtype in (torch.float16, torch.bfloat16) \
        else q @ k_j.transpose(-2, -1) * scale  # (b, h, n, B), float32 for half inputs
    if causal:
        i = torch.arange(q.shape[-2], device=q.device)[:, None]
        j = torch.arange(start, start + k_j.shape[-2], device=q.device)[None, :]
        s = s.masked_fill(j > i, float("-inf"))
    return s


def attention_forward(q, k, v, causal=False, block_size=32):
    scale = 1 / math.sqrt(q.shape[-1])
    stats = torch.promote_types(q.dtype, torch.float32)
    m_i = torch.full(q.shape[:-1], float("-inf"), dtype=stats, device=q.device)
    l_i = torch.zeros_like(m_i)
    acc = torch.zeros_like(q, dtype=stats)
    for start in range(0, k.shape[-2], block_size):
        s = _tile_scores(q, k[..., start:start + block_size, :], start, causal, scale)
        new_m = torch.maximum(m_i, s.amax(-1))
        alpha = torch.exp(m_i - new_m)
        p = torch.exp(s - new_m[..., None])
        l_i = alpha * l_i + p.sum(-1)
        acc = alpha[..., None] * acc + p @ v[..., start:start + block_size, :].to(stats)
        m_i = new_m
    return (acc / l_i[..., None]).to(q.dtype), m_i + torch.log(l_i)


def attention_backward(q, k, v, out, lse, grad_out, causal=False, block_size=None):
    dtype = q.dtype
    q, k, v, out, lse, grad_out = (t.to(torch.promote_types(dtype, torch.float32))
                                   for t in (q, k, v, out, lse, grad_out))
    B = block_size or k.shape[-2]
    scale = 1 / math.sqrt(q.shape[-1])
    starts = range(0, k.shape[-2], B)
    D = torch.zeros_like(lse)
    for start in starts:  # first pass: D_i = sum over every key block of P ∘ dP
        p = torch.exp(_tile_scores(q, k[..., start:start + B, :], start, causal, scale) - lse[..., None])
        D = D + (p * (grad_out @ v[..., start:start + B, :].transpose(-2, -1))).sum(-1)
    dq, dks, dvs = torch.zeros_like(q), [], []
    for start in starts:
        k_j, v_j = k[..., start:start + B, :], v[..., start:start + B, :]
        p = torch.exp(_tile_scores(q, k_j, start, causal, scale) - lse[..., None])
        ds = p * (grad_out @ v_j.transpose(-2, -1) - D[..., None])
        dq = dq + scale * ds @ k_j
        dks.append(scale * ds.transpose(-2, -1) @ q)
        dvs.append(p.transpose(-2, -1) @ grad_out)
    return dq.to(dtype), torch.cat(dks, -2).to(dtype), torch.cat(dvs, -2).to(dtype)


class Attention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, causal):
        out, lse = attention_forward(q, k, v, causal)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.causal = causal
        return out

    @staticmethod
    def backward(ctx, grad_out):
        return (*attention_backward(*ctx.saved_tensors, grad_out, ctx.causal, 64), None)


def attention(q, k, v, causal=False):
    return Attention.apply(q, k, v, causal)
