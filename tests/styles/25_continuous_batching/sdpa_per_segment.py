"""Style: F.scaled_dot_product_attention per segment with a bool mask (bottom-right), and a
scheduler that serves the newest requests first, with a small request class."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F


def varlen_attention(q, k, v, cu_seqlens_q, cu_seqlens_k, causal=False):
    outs = []
    for (a, b), (c, d) in zip(zip(cu_seqlens_q[:-1].tolist(), cu_seqlens_q[1:].tolist()),
                              zip(cu_seqlens_k[:-1].tolist(), cu_seqlens_k[1:].tolist())):
        qs, ks, vs = (t.transpose(0, 1) for t in (q[a:b], k[c:d], v[c:d]))  # (h, n, d)
        mask = None
        if causal:
            n, m = b - a, d - c
            mask = torch.ones(n, m, dtype=torch.bool, device=q.device).tril(m - n)  # True: may attend
        outs.append(F.scaled_dot_product_attention(qs, ks, vs, attn_mask=mask).transpose(0, 1))
    return torch.cat(outs)


@dataclass
class Request:
    index: int
    known: list
    limit: int
    seen: int = 0
    out: list = field(default_factory=list)

    @property
    def ready(self):
        return len(self.known) - self.seen


def generate_all(model_step, requests, max_batch_size, max_batch_tokens, eos_id=None):
    pending = [Request(i, list(p), n) for i, (p, n) in enumerate(requests)]
    results = [None] * len(requests)
    while pending:
        chosen, used = [], 0
        for r in reversed(pending):
            if len(chosen) == max_batch_size or used == max_batch_tokens:
                break
            take = min(r.ready, max_batch_tokens - used)
            chosen.append((r, take))
            used += take
        ids, pos, cu = [], [], [0]
        for r, take in chosen:
            ids.extend(r.known[r.seen:r.seen + take])
            pos.extend(range(r.seen, r.seen + take))
            cu.append(cu[-1] + take)
        logits = model_step(torch.tensor(ids, dtype=torch.long),
                            torch.tensor(pos, dtype=torch.long),
                            torch.tensor(cu, dtype=torch.int32), [r.index for r, _ in chosen])
        for row, (r, take) in enumerate(chosen):
            r.seen += take
            if r.ready == 0:
                r.known.append(int(torch.argmax(logits[row])))
                r.out.append(r.known[-1])
                if r.out[-1] == eos_id or len(r.out) == r.limit:
                    results[r.index] = r.out
                    pending.remove(r)
    return results
