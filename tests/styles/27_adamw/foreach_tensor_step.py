"""Kata 27 with torch._foreach_* ops over each group's parameters, as PyTorch's foreach path
does: a 0-d float32 tensor `step`, the moments updated with lerp_, the clip with
_foreach_norm; the schedule in torch arithmetic, returned as a float."""

import math

import torch


class AdamW(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            for p in params:
                st = self.state[p]
                if not st:
                    st["step"] = torch.tensor(0.0)
                    st["exp_avg"] = torch.zeros_like(p)
                    st["exp_avg_sq"] = torch.zeros_like(p)
            grads = [p.grad for p in params]
            m = [self.state[p]["exp_avg"] for p in params]
            v = [self.state[p]["exp_avg_sq"] for p in params]
            steps = [self.state[p]["step"] for p in params]
            beta1, beta2 = group["betas"]
            torch._foreach_add_(steps, 1)
            torch._foreach_mul_(params, 1 - group["lr"] * group["weight_decay"])
            torch._foreach_lerp_(m, grads, 1 - beta1)
            torch._foreach_mul_(v, beta2)
            torch._foreach_addcmul_(v, grads, grads, 1 - beta2)
            for p, mi, vi, t in zip(params, m, v, steps):
                bc1 = 1 - beta1 ** t.item()
                bc2_sqrt = (1 - beta2 ** t.item()) ** 0.5
                denom = vi.sqrt().div_(bc2_sqrt).add_(group["eps"])
                p.addcdiv_(mi, denom, value=-group["lr"] / bc1)


@torch.no_grad()
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    params = [parameters] if isinstance(parameters, torch.Tensor) else list(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return torch.tensor(0.0)
    norms = torch._foreach_norm(grads, norm_type)
    total = torch.linalg.vector_norm(torch.stack(norms), norm_type)
    if error_if_nonfinite and (total.isnan() or total.isinf()):
        raise RuntimeError(f"non-finite total norm {total}")
    torch._foreach_mul_(grads, (max_norm / (total + 1e-6)).clamp(max=1.0))
    return total


def lr_at(step, max_lr, min_lr, warmup_steps, cosine_steps):
    t = torch.tensor(float(step), dtype=torch.float64)
    if step < warmup_steps:
        return float(max_lr * t / warmup_steps)
    if step > cosine_steps:
        return float(min_lr)
    phase = (t - warmup_steps) / (cosine_steps - warmup_steps)
    return float(min_lr + (max_lr - min_lr) * (1 + torch.cos(math.pi * phase)) / 2)
