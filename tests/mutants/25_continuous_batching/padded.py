"""Every segment padded to the longest: correct values, (B, h, max n, max m) scores."""

from __future__ import annotations

import math

import torch


def varlen_attention(q, k, v, cu_seqlens_q, cu_seqlens_k, causal=False):
    cq, ck = cu_seqlens_q.tolist(), cu_seqlens_k.tolist()
    B, h, d = len(cq) - 1, q.shape[1], q.shape[2]
    n = [cq[j + 1] - cq[j] for j in range(B)]
    m = [ck[j + 1] - ck[j] for j in range(B)]
    N, M = max(n), max(m)
    qp = q.new_zeros(B, N, h, d)
    kp, vp = k.new_zeros(B, M, h, d), v.new_zeros(B, M, h, d)
    allowed = torch.zeros(B, N, M, dtype=torch.bool, device=q.device)
    for j in range(B):
        qp[j, :n[j]] = q[cq[j]:cq[j + 1]]
        kp[j, :m[j]], vp[j, :m[j]] = k[ck[j]:ck[j + 1]], v[ck[j]:ck[j + 1]]
        block = torch.ones(n[j], m[j], dtype=torch.bool, device=q.device)
        allowed[j, :n[j], :m[j]] = block.tril(m[j] - n[j]) if causal else block
    allowed[:, :, 0] |= ~allowed.any(-1)  # padded query rows: anything finite
    scores = torch.einsum("bnhd,bmhd->bhnm", qp, kp) / math.sqrt(d)
    scores = scores.masked_fill(~allowed[:, None], float("-inf"))
    out = torch.einsum("bhnm,bmhd->bnhd", scores.softmax(-1), vp)
    return torch.cat([out[j, :n[j]] for j in range(B)])


def generate_all(model_step, requests, max_batch_size, max_batch_tokens, eos_id=None):
    known = [list(prompt) for prompt, _ in requests]
    seen = [0] * len(requests)
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
                continue
            token = int(logits[row].argmax())
            known[i].append(token)
            out[i].append(token)
            if token == eos_id or len(out[i]) == requests[i][1]:
                done[i] = True
    return out
