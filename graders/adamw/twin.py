"""Kata 27's reference with one switch per catalogued mistake: what each mistake computes.

``TwinAdamW(..., mistake=switch)`` is an optimizer that makes one of ADAMW_MISTAKES' mistakes
(None: the right step); ``clip_grad_norm_`` and ``lr_at`` take a switch of CLIP_MISTAKES and
LR_MISTAKES. The grader runs them through the same training, gradients and steps as the
learner's code to name what a wrong result is.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch
from torch import Tensor

# switch -> slug; several switches may be ways of making one mistake.
ADAMW_MISTAKES = {
    "l2": "l2-not-decoupled",
    "decay-after-update": "decay-after-update",
    "decay-without-lr": "decay-not-scaled-by-lr",
    "no-bias-correction": "no-bias-correction",
    "t-from-0": "bias-correction-off-by-one",
    "t-from-2": "bias-correction-off-by-one",
    "eps-before-bias-correction": "eps-before-bias-correction",
    "eps-inside-sqrt": "eps-inside-sqrt",
    "betas-swapped": "betas-swapped",
    "gradless-zero-grad": "gradless-param-updated",
    "gradless-decayed": "gradless-param-updated",
    "shared-counter": "state-not-per-parameter",
    "own-attributes": "state-not-per-parameter",
}
CLIP_MISTAKES = {
    "per-parameter": "clip-per-parameter",
    "scales-up": "clip-scales-up",
    "sum-of-norms": "clip-norm-wrong",
    "norms-not-squared": "clip-norm-wrong",
}
LR_MISTAKES = {
    "warmup-plus-one": "warmup-off-by-one",
    "warmup-over-plus-one": "warmup-off-by-one",
    "offset-missing": "cosine-wrong-phase",
    "length-not-reduced": "cosine-wrong-phase",
    "quarter-period": "cosine-wrong-phase",
    "whole-period": "cosine-wrong-phase",
}
# A switch of the reference -> the catalogued mistake it reproduces.
MISTAKE_OF: dict[str, str] = {**ADAMW_MISTAKES, **CLIP_MISTAKES, **LR_MISTAKES}


class TwinAdamW(torch.optim.Optimizer):
    """torch.optim.AdamW(foreach=False), or one of its mistakes (``mistake``, a switch of
    ADAMW_MISTAKES). Parameters of shape (*): exp_avg and exp_avg_sq of shape (*)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 mistake: str | None = None):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))
        self.mistake = mistake
        self.shared_t = 0  # "shared-counter": one count for every parameter, never saved
        self.own: dict[int, dict] = {}  # "own-attributes": moments outside self.state

    @torch.no_grad()
    def step(self, closure=None):
        mistake = self.mistake
        self.shared_t += 1
        for group in self.param_groups:
            lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
            beta1, beta2 = group["betas"]
            if mistake == "betas-swapped":
                beta1, beta2 = beta2, beta1
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    if mistake == "gradless-decayed":
                        p.mul_(1 - lr * wd)
                        continue
                    if mistake != "gradless-zero-grad":
                        continue
                    grad = torch.zeros_like(p)
                state = self.own.setdefault(id(p), {}) if mistake == "own-attributes" \
                    else self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                t = self.shared_t if mistake == "shared-counter" else float(state["step"])
                t = {"t-from-0": t - 1, "t-from-2": t + 1}.get(mistake, t)
                m, v = state["exp_avg"], state["exp_avg_sq"]
                if mistake == "l2":
                    grad = grad + wd * p
                elif mistake == "decay-without-lr":
                    p.mul_(1 - wd)
                elif mistake != "decay-after-update":
                    p.mul_(1 - lr * wd)
                m.mul_(beta1).add_(grad, alpha=1 - beta1)
                v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                bc1, bc2 = 1 - beta1 ** t, 1 - beta2 ** t
                if mistake == "no-bias-correction":
                    bc1 = bc2 = 1.0
                if mistake == "eps-before-bias-correction":
                    denom = (v.sqrt() + eps) / math.sqrt(bc2)
                elif mistake == "eps-inside-sqrt":
                    denom = (v / bc2 + eps).sqrt()
                else:
                    denom = v.sqrt() / math.sqrt(bc2) + eps
                # lr / 0 is inf for "t-from-0" (a tensor learner's inf, not Python's error)
                step_size = lr / bc1 if bc1 else math.inf
                p.sub_(step_size * (m / denom))
                if mistake == "decay-after-update":
                    p.mul_(1 - lr * wd)
        return None


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                    norm_type: float = 2.0, mistake: str | None = None) -> Tensor:
    """torch.nn.utils.clip_grad_norm_ (without error_if_nonfinite), or one of CLIP_MISTAKES."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return torch.tensor(0.0)
    norm_type = float(norm_type)
    norms = torch.stack([torch.linalg.vector_norm(g, norm_type) for g in grads])
    if mistake == "sum-of-norms":
        total = norms.sum()
    elif mistake == "norms-not-squared" and norm_type != math.inf:
        total = norms.sum() ** (1 / norm_type)
    else:
        total = torch.linalg.vector_norm(norms, norm_type)
    for g, own in zip(grads, norms):
        coef = max_norm / ((own if mistake == "per-parameter" else total) + 1e-6)
        if mistake != "scales-up":
            coef = coef.clamp(max=1.0)
        g.mul_(coef.to(g.dtype))
    return total


def lr_at(step: int, max_lr: float, min_lr: float, warmup_steps: int, cosine_steps: int,
          mistake: str | None = None) -> float:
    """CS336 a1's get_lr_cosine_schedule, or one of LR_MISTAKES."""
    if step < warmup_steps:
        if mistake == "warmup-plus-one":
            return max_lr * (step + 1) / warmup_steps
        if mistake == "warmup-over-plus-one":
            return max_lr * (step + 1) / (warmup_steps + 1)
        return max_lr * step / warmup_steps
    if step > cosine_steps:
        return min_lr
    progress = (step - warmup_steps) / (cosine_steps - warmup_steps)
    if mistake == "offset-missing":
        progress = step / (cosine_steps - warmup_steps)
    elif mistake == "length-not-reduced":
        progress = (step - warmup_steps) / cosine_steps
    if mistake == "quarter-period":
        return min_lr + math.cos(math.pi / 2 * progress) * (max_lr - min_lr)
    if mistake == "whole-period":
        return min_lr + 0.5 * (1 + math.cos(2 * math.pi * progress)) * (max_lr - min_lr)
    return min_lr + 0.5 * (1 + math.cos(math.pi * progress)) * (max_lr - min_lr)
