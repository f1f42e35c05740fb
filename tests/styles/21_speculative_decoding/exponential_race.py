"""Kata 21 in another style: draws by an exponential race (argmin of E / p, E ~ Exp(1)),
float32 arithmetic, one uniform per test as a (1,) tensor, num_accepted as a 0-d tensor."""

from __future__ import annotations

import torch


def race(probs, generator):
    clocks = torch.empty(probs.shape, dtype=torch.float32).exponential_(generator=generator)
    return torch.argmin(clocks / probs.float())  # probability 0: clock / 0 = inf, never first


def speculative_step(target_fn, draft_fn, prefix, gamma, generator=None, greedy=False):
    pick = (lambda probs: torch.argmax(probs)) if greedy else (lambda probs: race(probs, generator))
    context, proposals, rows = prefix, [], []
    while len(proposals) < gamma:
        q = draft_fn(context)[-1].float()
        token = pick(q)
        proposals.append(token)
        rows.append(q)
        context = torch.cat((context, token.reshape(1)))
    verdicts = target_fn(context).float()
    start = prefix.shape[0] - 1
    for i, (token, q) in enumerate(zip(proposals, rows)):
        p = verdicts[start + i]
        if greedy:
            agree = bool(token == torch.argmax(p))
        else:
            agree = bool(torch.rand(1, generator=generator) <= p[token] / q[token])
        if not agree:
            fix = torch.argmax(p) if greedy else race(torch.relu(p - q), generator)
            return torch.stack(proposals[:i] + [fix]).long(), torch.tensor(i)
    bonus = pick(verdicts[start + gamma])
    return torch.stack(proposals + [bonus]).long(), torch.tensor(gamma)
