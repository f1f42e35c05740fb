"""Kata 21 in another style: draws by Gumbel-max, the gamma acceptance tests at once
(u <= ratio, the first rejection found with cumprod), the sequence grown with torch.cat."""

from __future__ import annotations

import torch


def gumbel_draw(probs, generator):
    u = torch.rand(probs.shape, dtype=torch.float64, generator=generator)
    return int(torch.argmax(torch.log(probs.double()) - torch.log(-torch.log1p(-u))))


def speculative_step(target_fn, draft_fn, prefix, gamma, generator=None, greedy=False):
    n = prefix.size(0)
    seq = prefix.clone()
    qs = []
    for _ in range(gamma):
        q = draft_fn(seq)[-1].double()
        token = int(q.argmax()) if greedy else gumbel_draw(q, generator)
        qs.append(q)
        seq = torch.cat([seq, torch.tensor([token])])
    P = target_fn(seq).double()[n - 1:]  # (gamma + 1, V)
    Q = torch.stack(qs)  # (gamma, V)
    drafted = seq[n:]
    p_d = P[:-1].gather(1, drafted[:, None]).squeeze(1)
    q_d = Q.gather(1, drafted[:, None]).squeeze(1)
    if greedy:
        ok = drafted == P[:-1].argmax(-1)
    else:
        u = torch.rand(gamma, dtype=torch.float64, generator=generator)
        ok = u <= p_d / q_d
    accepted = int(ok.long().cumprod(0).sum())
    if accepted == gamma:
        row = P[gamma]
    else:
        row = (P[accepted] - Q[accepted]).clamp_min(0)
        row = row / row.sum()
    last = int(row.argmax()) if greedy and accepted == gamma else (
        int(P[accepted].argmax()) if greedy else gumbel_draw(row, generator))
    return torch.cat([drafted[:accepted], torch.tensor([last])]), accepted
