"""Kata 21: one step of speculative sampling (a draft proposes, the target verifies).

Read README.md in this folder, fill in the function below, then run
    pytest katas/21_speculative_decoding
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
            distribution of the token at position j + 1, given tokens[0 ... j].
        prefix: (n,) int64, n >= 1; leave it unmodified.
        gamma: how many tokens the draft proposes, >= 1.
        generator: the only source of randomness (None: the global RNG).
        greedy: argmax everywhere (temperature 0): no randomness at all.

    Returns:
        tokens: (num_accepted + 1,) int64, the accepted draft tokens then one token of the
            target's (the correction at the first rejection, or the bonus token).
        num_accepted: how many draft tokens were kept, 0 ... gamma, a Python int.
    """
    raise NotImplementedError("see katas/21_speculative_decoding/README.md")
