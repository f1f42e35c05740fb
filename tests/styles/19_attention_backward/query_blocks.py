"""Kata 19 tiled the other way round: query blocks outside (FlashAttention-2's dQ loop),
key blocks inside, dK and dV accumulated per key block; einsum throughout; D from O; the
Function's backward itself tiles with 16 and checks ctx.needs_input_grad. Half inputs are
computed in float32 on both sides (lse float32), the results cast back."""

import math

import torch

HALF = (torch.float16, torch.bfloat16)


def attention_forward(q, k, v, causal=False):
    dtype = q.dtype
    if dtype in HALF:
        q, k, v = q.float(), k.float(), v.float()
    s = torch.einsum("bhnd,bhmd->bhnm", q, k) * q.shape[-1] ** -0.5
    if causal:
        s = s + torch.full(s.shape[-2:], float("-inf"), dtype=s.dtype, device=s.device).triu(1)
    lse = torch.logsumexp(s, dim=-1)
    return torch.einsum("bhnm,bhmd->bhnd", torch.softmax(s, dim=-1), v).to(dtype), lse


def attention_backward(q, k, v, out, lse, grad_out, causal=False, block_size=None):
    dtype = q.dtype
    if dtype in HALF:
        q, k, v, out, lse, grad_out = (t.float() for t in (q, k, v, out, lse, grad_out))
    n, m, d = q.shape[-2], k.shape[-2], q.shape[-1]
    bq = bk = block_size or max(n, m)
    scale = 1 / math.sqrt(d)
    D = torch.einsum("bhnd,bhnd->bhn", grad_out, out)
    dq = torch.empty_like(q)
    dk = torch.zeros_like(k)
    dv = torch.zeros_like(v)
    for i0 in range(0, n, bq):
        i1 = min(i0 + bq, n)
        q_i, do_i = q[:, :, i0:i1], grad_out[:, :, i0:i1]
        dq_i = torch.zeros_like(q_i)
        for j0 in range(0, (i1 if causal else m), bk):
            j1 = min(j0 + bk, m)
            s = torch.einsum("bhid,bhjd->bhij", q_i, k[:, :, j0:j1]) * scale
            if causal and j1 - 1 > i0:
                qi = torch.arange(i0, i1, device=q.device).view(-1, 1)
                kj = torch.arange(j0, j1, device=q.device).view(1, -1)
                s = torch.where(kj <= qi, s, torch.tensor(float("-inf"), dtype=s.dtype, device=s.device))
            p = torch.exp(s - lse[:, :, i0:i1, None])
            dv[:, :, j0:j1] += torch.einsum("bhij,bhid->bhjd", p, do_i)
            dp = torch.einsum("bhid,bhjd->bhij", do_i, v[:, :, j0:j1])
            ds = p * (dp - D[:, :, i0:i1, None])
            dq_i += torch.einsum("bhij,bhjd->bhid", ds, k[:, :, j0:j1]) * scale
            dk[:, :, j0:j1] += torch.einsum("bhij,bhid->bhjd", ds, q_i) * scale
        dq[:, :, i0:i1] = dq_i
    return dq.to(dtype), dk.to(dtype), dv.to(dtype)


class Attention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, causal=False):
        out, lse = attention_forward(q, k, v, causal)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.causal = causal
        return out

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, out, lse = ctx.saved_tensors
        dq, dk, dv = attention_backward(q, k, v, out, lse, grad_out, ctx.causal, block_size=16)
        needs = ctx.needs_input_grad
        return (dq if needs[0] else None, dk if needs[1] else None, dv if needs[2] else None, None)


def attention(q, k, v, causal=False):
    return Attention.apply(q, k, v, causal)
