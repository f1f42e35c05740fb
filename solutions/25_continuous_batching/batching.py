"""Reference solution for kata 25: iteration-level scheduling over a packed, ragged batch."""

from __future__ import annotations

import math

import torch


def varlen_attention(q, k, v, cu_seqlens_q, cu_seqlens_k, causal=False):
    """Attention over a packed ragged batch: a loop over segments, no padding."""
    out = torch.empty_like(q)
    cu_q = [int(x) for x in cu_seqlens_q.tolist()]
    cu_k = [int(x) for x in cu_seqlens_k.tolist()]
    scale = 1.0 / math.sqrt(q.shape[-1])
    for j in range(len(cu_q) - 1):
        qs, ks, vs = q[cu_q[j]:cu_q[j + 1]], k[cu_k[j]:cu_k[j + 1]], v[cu_k[j]:cu_k[j + 1]]
        n, m = qs.shape[0], ks.shape[0]
        scores = torch.einsum("ahd,bhd->hab", qs, ks) * scale
        if causal:  # bottom-right: query a sits at position m - n + a of its segment
            allowed = torch.ones(n, m, dtype=torch.bool, device=q.device).tril(m - n)
            scores = scores.masked_fill(~allowed, float("-inf"))
        out[cu_q[j]:cu_q[j + 1]] = torch.einsum("hab,bhd->ahd", scores.softmax(-1), vs)
    return out


def generate_all(model_step, requests, max_batch_size, max_batch_tokens, eos_id=None):
    """First come first served, chunked prefill, every call maximal."""
    known = [list(prompt) for prompt, _ in requests]  # prompt, then the tokens generated
    seen = [0] * len(requests)  # how many of them the model has seen
    out = [[] for _ in requests]
    done = [False] * len(requests)
    while not all(done):
        budget, seq_ids, ids, pos, cu = max_batch_tokens, [], [], [], [0]
        for i in range(len(requests)):
            if done[i] or len(seq_ids) == max_batch_size or budget == 0:
                continue
            take = min(len(known[i]) - seen[i], budget)
            seq_ids.append(i)
            ids += known[i][seen[i]:seen[i] + take]
            pos += range(seen[i], seen[i] + take)
            cu.append(cu[-1] + take)
            budget -= take
        logits = model_step(torch.tensor(ids, dtype=torch.int64),
                            torch.tensor(pos, dtype=torch.int64),
                            torch.tensor(cu, dtype=torch.int32), seq_ids)
        for row, i in enumerate(seq_ids):
            seen[i] += cu[row + 1] - cu[row]
            if seen[i] < len(known[i]):
                continue  # a prompt chunk that does not finish the prompt
            token = int(logits[row].argmax())
            known[i].append(token)
            out[i].append(token)
            if token == eos_id or len(out[i]) == requests[i][1]:
                done[i] = True
    return out
