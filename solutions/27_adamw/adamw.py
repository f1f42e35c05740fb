"""AdamW, gradient clipping and the cosine schedule, by hand (the reference solution).

`AdamW` matches `torch.optim.AdamW(..., foreach=False)` step for step, `clip_grad_norm_`
matches `torch.nn.utils.clip_grad_norm_`, `lr_at` is CS336 a1's `get_lr_cosine_schedule`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch
from torch import Tensor


class AdamW(torch.optim.Optimizer):
    """Adam with decoupled weight decay (Loshchilov & Hutter), as PyTorch computes it.

    Per parameter `p` of shape `(*)` with a gradient, state in `self.state[p]`: `step` (an
    int), `exp_avg` and `exp_avg_sq` (both `(*)`, p's dtype).
    """

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            lr, (beta1, beta2) = group["lr"], group["betas"]
            eps, weight_decay = group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:  # no gradient this step: no decay, no count
                    continue
                grad = p.grad
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["step"] += 1
                t = float(state["step"])  # a 0-d tensor after loading PyTorch's state
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]

                p.mul_(1 - lr * weight_decay)  # decoupled: not through the moments
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)

                step_size = lr / (1 - beta1 ** t)
                # eps after the bias correction of sqrt(v), as PyTorch adds it
                denom = exp_avg_sq.sqrt() / math.sqrt(1 - beta2 ** t) + eps
                p.addcdiv_(exp_avg, denom, value=-step_size)
        return loss


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                    norm_type: float = 2.0, error_if_nonfinite: bool = False) -> Tensor:
    """Scale every gradient by min(1, max_norm / (total + 1e-6)) in place; return the total.

    The total is the norm_type norm of all gradients together, a 0-d tensor in their dtype.
    """
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]  # a generator is read once
    if not grads:
        return torch.tensor(0.0)
    norm_type = float(norm_type)
    norms = [torch.linalg.vector_norm(g.detach(), norm_type) for g in grads]
    total = torch.linalg.vector_norm(torch.stack(norms), norm_type)
    if error_if_nonfinite and not bool(torch.isfinite(total)):
        raise RuntimeError(f"the total norm of order {norm_type} of the gradients is {total.item()}")
    coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)  # never scaled up
    for g in grads:
        g.detach().mul_(coef.to(g.dtype))
    return total


def lr_at(step: int, max_lr: float, min_lr: float, warmup_steps: int, cosine_steps: int) -> float:
    """The learning rate at `step`: linear warmup, cosine decay to min_lr, then min_lr."""
    if step < warmup_steps:
        return max_lr * step / warmup_steps
    if step <= cosine_steps:
        progress = (step - warmup_steps) / (cosine_steps - warmup_steps)
        return min_lr + 0.5 * (1 + math.cos(math.pi * progress)) * (max_lr - min_lr)
    return min_lr
