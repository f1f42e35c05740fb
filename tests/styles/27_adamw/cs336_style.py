"""Kata 27 as a CS336 assignment 1 student writes it: a state dict per parameter with an
int step, the bias corrections in math.sqrt, a plain sum of squares for the clip and the
schedule as three ifs (PyTorch's order: decay first, eps after the correction)."""

import math
from typing import Iterable

import torch


class AdamW(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        if lr < 0:
            raise ValueError(f"Invalid learning rate: {lr}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay}
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = None if closure is None else closure()
        for group in self.param_groups:
            lr = group["lr"]
            beta1, beta2 = group["betas"]
            eps = group["eps"]
            lam = group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                t = state.get("step", 0) + 1
                m = state.get("exp_avg", torch.zeros_like(p.data))
                v = state.get("exp_avg_sq", torch.zeros_like(p.data))
                g = p.grad.data
                p.data -= lr * lam * p.data
                m = beta1 * m + (1 - beta1) * g
                v = beta2 * v + (1 - beta2) * g**2
                m_hat_scale = 1 - beta1**t
                v_hat = v / (1 - beta2**t)
                p.data -= lr / m_hat_scale * m / (torch.sqrt(v_hat) + eps)
                state["step"] = t
                state["exp_avg"] = m
                state["exp_avg_sq"] = v
        return loss


def clip_grad_norm_(parameters: Iterable[torch.nn.Parameter], max_norm: float,
                    norm_type: float = 2.0, error_if_nonfinite: bool = False) -> torch.Tensor:
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    params = [p for p in parameters if p.grad is not None]
    if len(params) == 0:
        return torch.tensor(0.0)
    if norm_type == math.inf:
        total_norm = max(p.grad.abs().max() for p in params)
    else:
        total_norm = sum((p.grad.abs() ** norm_type).sum() for p in params) ** (1.0 / norm_type)
    if error_if_nonfinite and not torch.isfinite(total_norm):
        raise RuntimeError("The total norm of gradients is non-finite")
    eps = 1e-6
    if total_norm > max_norm:
        for p in params:
            p.grad.data *= max_norm / (total_norm + eps)
    return total_norm


def lr_at(step, max_lr, min_lr, warmup_steps, cosine_steps):
    if step < warmup_steps:
        return step / warmup_steps * max_lr
    if step <= cosine_steps:
        return min_lr + 0.5 * (1 + math.cos((step - warmup_steps) / (cosine_steps - warmup_steps) * math.pi)) * (max_lr - min_lr)
    return min_lr
