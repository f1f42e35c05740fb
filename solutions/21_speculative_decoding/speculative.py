"""Kata 21 (reference): one step of speculative sampling.

A draft model proposes gamma tokens one at a time; the target scores all of them in one
call; each draft token is kept with probability min(1, p/q); the first rejection is
replaced by a token from the residual max(0, p - q), and when every draft token is kept
the target's row after the last one gives a bonus token. The emitted tokens are
distributed exactly as if the target had sampled them alone.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor

ModelFn = Callable[[Tensor], Tensor]  # tokens (L,) int64 -> next-token probabilities (L, V)


def speculative_step(target_fn: ModelFn, draft_fn: ModelFn, prefix: Tensor, gamma: int,
                     generator: torch.Generator | None = None,
                     greedy: bool = False) -> tuple[Tensor, int]:
    """One draft-then-verify step.

    Args:
        target_fn, draft_fn: tokens (L,) int64 -> probabilities (L, V); row j is the
            distribution of the token at position j + 1.
        prefix: (n,) int64, n >= 1; not modified.
        gamma: how many tokens the draft proposes, >= 1.
        generator: the only source of randomness (None: the global RNG).
        greedy: argmax everywhere (temperature 0): no randomness at all.

    Returns:
        tokens: (num_accepted + 1,) int64, the accepted draft tokens then one token of the
            target's (the correction at the first rejection, or the bonus).
        num_accepted: how many draft tokens were kept, 0 ... gamma, a Python int.
    """
    n = prefix.numel()
    sequence = prefix
    drafted, draft_rows = [], []
    for _ in range(gamma):
        q = draft_fn(sequence)[-1]  # (V,): the draft's distribution of the next token
        token = q.argmax() if greedy else torch.multinomial(q, 1, generator=generator)[0]
        drafted.append(int(token))
        draft_rows.append(q)
        sequence = torch.cat([sequence, token.view(1)])
    target_rows = target_fn(sequence)[n - 1:]  # (gamma + 1, V): p_0 ... p_gamma

    accepted: list[int] = []
    for i, (token, q) in enumerate(zip(drafted, draft_rows)):
        p = target_rows[i]
        if greedy:
            keep = token == int(p.argmax())
        else:
            u = torch.rand((), dtype=torch.float64, generator=generator)
            keep = bool(u < p[token] / q[token])  # a ratio above 1 always keeps the token
        if not keep:
            if greedy:
                last = int(p.argmax())
            else:
                residual = (p - q).clamp(min=0)
                last = int(torch.multinomial(residual / residual.sum(), 1, generator=generator))
            return torch.tensor(accepted + [last], dtype=torch.int64), i
        accepted.append(token)

    bonus_row = target_rows[gamma]
    if greedy:
        bonus = int(bonus_row.argmax())
    else:
        bonus = int(torch.multinomial(bonus_row, 1, generator=generator))
    return torch.tensor(accepted + [bonus], dtype=torch.int64), gamma
