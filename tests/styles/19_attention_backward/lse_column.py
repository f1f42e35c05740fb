"""Kata 19 with lse kept as a column: the Function saves lse[..., None], (b, h, n, 1),
as a kernel that broadcasts it against each tile might: n numbers per (batch, head),
not an (n, m) matrix, so what the ctx keeps is within the rule."""

from __future__ import annotations

import math

import torch
from torch import Tensor


def causal_blocked(q_start: int, q_len: int, k_start: int, k_len: int, device) -> Tensor:
    """(q_len, k_len) bool, True where key k_start + j comes after query q_start + i."""
    queries = torch.arange(q_start, q_start + q_len, device=device)[:, None]
    keys = torch.arange(k_start, k_start + k_len, device=device)[None, :]
    return keys > queries


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """float32 for half inputs (lse, D and the tiles' arithmetic, as FlashAttention keeps
    them), the input's own dtype otherwise."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def attention_forward(q: Tensor, k: Tensor, v: Tensor, causal: bool = False) -> tuple[Tensor, Tensor]:
    """softmax(q kᵀ / sqrt(d)) v and each query's log-sum-exp.

    q (b, h, n, d), k and v (b, h, m, d). Returns out (b, h, n, d) in q's dtype and lse
    (b, h, n): in q's dtype for float32 and float64, in float32 for float16 and bfloat16
    (as FlashAttention returns it: rounded to a half type, exp(S - lse) would give rows
    of P that sum to 1 ± 7 %). causal=True (n == m): query i sees keys 0 .. i.
    """
    n, m = q.size(-2), k.size(-2)
    dtype = q.dtype
    q, k, v = (t.to(compute_dtype(dtype)) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (b, h, n, m)
    if causal:
        scores = scores.masked_fill(causal_blocked(0, n, 0, m, q.device), float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)  # (b, h, n)
    out = torch.exp(scores - lse[..., None]) @ v  # (b, h, n, d)
    return out.to(dtype), lse


def attention_backward(q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor, grad_out: Tensor,
                       causal: bool = False, block_size: int | None = None
                       ) -> tuple[Tensor, Tensor, Tensor]:
    """The gradients (dq, dk, dv) of sum(out * grad_out), from the forward's out and lse.

    q, out, grad_out (b, h, n, d); k, v (b, h, m, d); lse (b, h, n), float32 for half
    inputs. Keys in blocks of block_size (all at once when None), queries in blocks of
    block_size inside them: no tile holds more than block_size x block_size scores per
    (batch, head). Half inputs are computed in float32 and the gradients cast back.
    """
    dtype = q.dtype
    q, k, v, out, lse, grad_out = (t.to(compute_dtype(dtype)) for t in (q, k, v, out, lse, grad_out))
    n, m = q.size(-2), k.size(-2)
    scale = 1.0 / math.sqrt(q.size(-1))
    block = block_size or max(n, m, 1)
    delta = (grad_out * out).sum(dim=-1, keepdim=True)  # (b, h, n, 1): D = rowsum(dO ∘ O)
    lse = lse[..., None]  # (b, h, n, 1)
    dq = torch.zeros_like(q)
    dk, dv = [], []
    for k_start in range(0, m, block):
        k_j, v_j = k[..., k_start:k_start + block, :], v[..., k_start:k_start + block, :]
        dk_j, dv_j = torch.zeros_like(k_j), torch.zeros_like(v_j)  # (b, h, Bk, d)
        for q_start in range(0, n, block):
            if causal and k_start > q_start + block - 1:
                continue  # every key of this block comes after every query of this one
            rows = slice(q_start, q_start + block)
            q_i, do_i = q[..., rows, :], grad_out[..., rows, :]
            s = q_i @ k_j.transpose(-2, -1) * scale  # (b, h, Bq, Bk)
            if causal:
                s = s.masked_fill(causal_blocked(q_start, q_i.size(-2), k_start, k_j.size(-2),
                                                 q.device), float("-inf"))
            p = torch.exp(s - lse[..., rows, :])  # (b, h, Bq, Bk): the forward's probabilities
            dv_j = dv_j + p.transpose(-2, -1) @ do_i
            dp = do_i @ v_j.transpose(-2, -1)  # (b, h, Bq, Bk)
            ds = p * (dp - delta[..., rows, :])
            dq[..., rows, :] += ds @ k_j * scale
            dk_j = dk_j + ds.transpose(-2, -1) @ q_i * scale
        dk.append(dk_j)
        dv.append(dv_j)
    return dq.to(dtype), torch.cat(dk, dim=-2).to(dtype), torch.cat(dv, dim=-2).to(dtype)


class Attention(torch.autograd.Function):
    """Softmax attention whose backward is attention_backward: the ctx keeps q, k, v, out
    and lse, never the (n, m) probabilities."""

    @staticmethod
    def forward(ctx, q: Tensor, k: Tensor, v: Tensor, causal: bool = False) -> Tensor:
        out, lse = attention_forward(q, k, v, causal)
        ctx.save_for_backward(q, k, v, out, lse[..., None])  # (b, h, n, 1)
        ctx.causal = causal
        return out

    @staticmethod
    def backward(ctx, grad_out: Tensor):
        q, k, v, out, lse = ctx.saved_tensors
        lse = lse.squeeze(-1)
        dq, dk, dv = attention_backward(q, k, v, out, lse, grad_out, ctx.causal)
        return dq, dk, dv, None


def attention(q: Tensor, k: Tensor, v: Tensor, causal: bool = False) -> Tensor:
    """softmax(q kᵀ / sqrt(d)) v through Attention: q (b, h, n, d), k, v (b, h, m, d)."""
    return Attention.apply(q, k, v, causal)
