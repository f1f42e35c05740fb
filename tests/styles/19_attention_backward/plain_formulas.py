"""Kata 19 in the plain formulas: the whole (n, m) matrices when no block size is given,
D as rowsum(P ∘ dP), a query-block tiling (each block of queries against every key) when
one is; the Function keeps its tensors as ctx attributes; attention is Attention.apply.
Half inputs: the forward's statistics in float32 (lse float32), the backward in the input's
dtype with a fresh softmax (it never reads lse)."""

import math

import torch


def attention_forward(q, k, v, causal=False):
    half = q.dtype in (torch.float16, torch.bfloat16)
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    scores = scores.float() if half else scores
    if causal:
        n, m = scores.shape[-2:]
        future = torch.ones(n, m, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
    row_max = scores.amax(-1, keepdim=True)
    weights = torch.exp(scores - row_max)
    total = weights.sum(-1, keepdim=True)
    out = torch.matmul(weights / total, v.to(weights.dtype)).to(q.dtype)
    lse = (row_max + torch.log(total)).squeeze(-1)
    return out, lse


def _rows_backward(q, k, v, out, lse, do, causal, first_row):
    """The formulas for the queries first_row .. first_row + len(q) against every key."""
    d = q.shape[-1]
    s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
    if causal:
        rows = torch.arange(first_row, first_row + q.shape[-2], device=q.device)
        cols = torch.arange(k.shape[-2], device=q.device)
        s = s.masked_fill(cols[None, :] > rows[:, None], float("-inf"))
    p = torch.softmax(s, dim=-1)
    dv = torch.matmul(p.transpose(-1, -2), do)
    dp = torch.matmul(do, v.transpose(-1, -2))
    D = (p * dp).sum(-1, keepdim=True)
    ds = p * (dp - D)
    dq = torch.matmul(ds, k) / math.sqrt(d)
    dk = torch.matmul(ds.transpose(-1, -2), q) / math.sqrt(d)
    return dq, dk, dv


def attention_backward(q, k, v, out, lse, grad_out, causal=False, block_size=None):
    if block_size is None:
        return _rows_backward(q, k, v, out, lse, grad_out, causal, 0)
    dqs = []
    dk = torch.zeros_like(k)
    dv = torch.zeros_like(v)
    for start in range(0, q.shape[-2], block_size):
        end = start + block_size
        dq_i, dk_i, dv_i = _rows_backward(q[..., start:end, :], k, v, out[..., start:end, :],
                                          lse[..., start:end], grad_out[..., start:end, :],
                                          causal, start)
        dqs.append(dq_i)
        dk = dk + dk_i
        dv = dv + dv_i
    return torch.cat(dqs, dim=-2), dk, dv


class Attention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, causal=False):
        out, lse = attention_forward(q, k, v, causal)
        ctx.tensors = {"q": q, "k": k, "v": v, "out": out, "lse": lse}
        ctx.causal = causal
        return out

    @staticmethod
    def backward(ctx, grad_out):
        t = ctx.tensors
        dq, dk, dv = attention_backward(t["q"], t["k"], t["v"], t["out"], t["lse"], grad_out,
                                        ctx.causal)
        return dq, dk, dv, None


attention = Attention.apply
