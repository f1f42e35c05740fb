"""Kata 14 in another style: the output is kept normalised after every block and the
running statistic is the log-sum-exp itself, merged with logaddexp (FlashAttention-1's
bookkeeping, in the log domain). Scores are taken in the input's dtype and the statistics
and output kept in float32 at least (lse float32 for half inputs)."""

import math

import torch


def flash_attention(q, k, v, block_size=64, causal=False):
    n, m = q.shape[-2], k.shape[-2]
    scale = q.shape[-1] ** -0.5
    stats = torch.promote_types(q.dtype, torch.float32)  # float32 for half, else q's dtype
    lse = torch.full(q.shape[:-1], -math.inf, dtype=stats, device=q.device)  # (b, h, n)
    out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=stats, device=q.device)
    for start in range(0, m, block_size):
        stop = min(start + block_size, m)
        s = (torch.matmul(q, k[:, :, start:stop].transpose(2, 3)) * scale).to(stats)
        if causal:
            future = torch.arange(start, stop, device=q.device)[None, :] > torch.arange(n, device=q.device)[:, None]
            s = s.masked_fill(future, -math.inf)
        block_lse = torch.logsumexp(s, dim=-1)  # -inf where the block is fully masked
        new_lse = torch.logaddexp(lse, block_lse)
        keep = torch.exp(lse - new_lse).unsqueeze(-1)  # share of the old output
        out = out * keep + torch.exp(s - new_lse.unsqueeze(-1)) @ v[:, :, start:stop].to(stats)
        lse = new_lse
    return out.to(q.dtype), lse
