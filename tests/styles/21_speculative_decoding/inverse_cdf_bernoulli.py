"""Kata 21 in another style: every draw by inverting the cumulative distribution with
torch.rand and torch.searchsorted, the acceptance test as torch.bernoulli of the clipped
ratio, and the sequence in a preallocated buffer."""

from __future__ import annotations

import torch


def draw(probs, generator):
    """One token ~ probs (V,): the first whose cumulative mass exceeds u * total."""
    cdf = probs.double().cumsum(0)
    u = torch.rand((), dtype=torch.float64, generator=generator) * cdf[-1]
    return min(int(torch.searchsorted(cdf, u, right=True)), probs.numel() - 1)


def speculative_step(target_fn, draft_fn, prefix, gamma, generator=None, greedy=False):
    n = prefix.numel()
    buffer = torch.empty(n + gamma, dtype=torch.int64)
    buffer[:n] = prefix
    draft_rows = []
    for i in range(gamma):
        q = draft_fn(buffer[:n + i])[-1]
        buffer[n + i] = int(q.argmax()) if greedy else draw(q, generator)
        draft_rows.append(q)
    rows = target_fn(buffer.clone())
    for i in range(gamma):
        p, q, d = rows[n - 1 + i], draft_rows[i], int(buffer[n + i])
        if greedy:
            if d == int(p.argmax()):
                continue
            return torch.cat([buffer[n:n + i], p.argmax().view(1)]), i
        ratio = (p[d] / q[d]).clamp(max=1.0)
        if torch.bernoulli(ratio, generator=generator) == 1:
            continue
        residual = torch.clamp(p - q, min=0)
        fix = draw(residual / residual.sum(), generator)
        return torch.cat([buffer[n:n + i], torch.tensor([fix])]), i
    last = rows[n - 1 + gamma]
    bonus = int(last.argmax()) if greedy else draw(last, generator)
    return torch.cat([buffer[n:], torch.tensor([bonus])]), gamma
