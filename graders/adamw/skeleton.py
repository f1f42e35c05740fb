"""Kata 27: AdamW, gradient clipping and the cosine schedule.

Read README.md in this folder, fill in the class and the two functions below, then run
    pytest katas/27_adamw
"""

from __future__ import annotations

import math  # noqa: F401
from collections.abc import Iterable

import torch
from torch import Tensor


class AdamW(torch.optim.Optimizer):
    """Adam with decoupled weight decay, step for step as torch.optim.AdamW(foreach=False).

    `params`: parameters or param groups (dicts with their own options), as for any
    torch.optim.Optimizer. For each parameter p of shape (*) that has a gradient, step() keeps
    in self.state[p]: "step" (a number or a 0-d tensor), "exp_avg" and "exp_avg_sq" (both (*)).
    """

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2):
        raise NotImplementedError("see katas/27_adamw/README.md")

    @torch.no_grad()
    def step(self, closure=None):
        """One update of every parameter with a gradient, with each group's current lr."""
        raise NotImplementedError("see katas/27_adamw/README.md")


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                    norm_type: float = 2.0, error_if_nonfinite: bool = False) -> Tensor:
    """Scale every gradient in place by min(1, max_norm / (total + 1e-6)) and return total.

    total: the norm_type norm of all the gradients together, a 0-d tensor in their dtype.
    """
    raise NotImplementedError("see katas/27_adamw/README.md")


def lr_at(step: int, max_lr: float, min_lr: float, warmup_steps: int, cosine_steps: int) -> float:
    """The learning rate at `step`: linear warmup, cosine decay to min_lr, then min_lr."""
    raise NotImplementedError("see katas/27_adamw/README.md")
