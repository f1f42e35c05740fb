"""Style: one block-diagonal computation over the whole pack (no loop, no padding), int64
cumulative lengths, and a shortest-ready-first scheduler that reorders the batch."""

from __future__ import annotations

import math

import torch


def varlen_attention(q, k, v, cu_seqlens_q, cu_seqlens_k, causal=False):
    t_q, t_k = q.shape[0], k.shape[0]
    cu_q, cu_k = cu_seqlens_q.long(), cu_seqlens_k.long()
    n, m = cu_q.diff(), cu_k.diff()
    seg_q = torch.repeat_interleave(torch.arange(len(n), device=q.device), n)  # query segments
    seg_k = torch.repeat_interleave(torch.arange(len(m), device=q.device), m)
    allowed = seg_q[:, None] == seg_k[None, :]
    if causal:
        # the position of each query, and of each key, in its own segment
        local_q = torch.arange(t_q, device=q.device) - cu_q[seg_q] + (m - n)[seg_q]
        local_k = torch.arange(t_k, device=q.device) - cu_k[seg_k]
        allowed &= local_k[None, :] <= local_q[:, None]
    scores = torch.einsum("ahd,bhd->hab", q, k) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.einsum("hab,bhd->ahd", torch.softmax(scores, dim=-1), v)


def generate_all(model_step, requests, max_batch_size, max_batch_tokens, eos_id=None):
    tokens = {i: list(p) for i, (p, _) in enumerate(requests)}
    seen = {i: 0 for i in tokens}
    outputs = {i: [] for i in tokens}
    running = set(tokens)
    while running:
        order = sorted(running, key=lambda i: (len(tokens[i]) - seen[i], -i))
        batch, budget = [], max_batch_tokens
        for i in order[:max_batch_size]:
            if budget == 0:
                break
            take = min(len(tokens[i]) - seen[i], budget)
            batch.append((i, take))
            budget -= take
        ids = torch.tensor([t for i, n in batch for t in tokens[i][seen[i]:seen[i] + n]])
        positions = torch.tensor([p for i, n in batch for p in range(seen[i], seen[i] + n)])
        lengths = torch.tensor([0] + [n for _, n in batch])
        logits = model_step(ids, positions, lengths.cumsum(0), [i for i, _ in batch])
        for row, (i, n) in enumerate(batch):
            seen[i] += n
            if seen[i] == len(tokens[i]):
                token = logits[row].argmax().item()
                tokens[i].append(token)
                outputs[i].append(token)
                if token == eos_id or len(outputs[i]) == requests[i][1]:
                    running.discard(i)
    return [outputs[i] for i in range(len(requests))]
