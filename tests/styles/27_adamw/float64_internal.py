"""Kata 27 computing every update in float64 and rounding it back into the parameter: the
moments kept in float64 between steps (state in a wider dtype), the paper's bias-corrected
m_hat and v_hat spelt out, the clip's total in float64 and cast to the gradients' dtype."""

import math

import torch


class AdamW(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps,
                                  "weight_decay": weight_decay})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if "step" not in state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros(p.shape, dtype=torch.float64)
                    state["exp_avg_sq"] = torch.zeros(p.shape, dtype=torch.float64)
                state["step"] = t = int(state["step"]) + 1
                g = p.grad.to(torch.float64)
                w = p.to(torch.float64) * (1 - group["lr"] * group["weight_decay"])
                m = state["exp_avg"] = beta1 * state["exp_avg"].to(torch.float64) + (1 - beta1) * g
                v = state["exp_avg_sq"] = (beta2 * state["exp_avg_sq"].to(torch.float64)
                                           + (1 - beta2) * g * g)
                m_hat = m / (1 - beta1 ** t)
                v_hat = v / (1 - beta2 ** t)
                w = w - group["lr"] * m_hat / (v_hat.sqrt() + group["eps"])
                p.copy_(w.to(p.dtype))


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return torch.tensor(0.0)
    flat = torch.cat([g.detach().to(torch.float64).flatten() for g in grads])
    total = torch.linalg.vector_norm(flat, float(norm_type))
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError("non-finite gradient norm")
    scale = min(1.0, max_norm / (total.item() + 1e-6))
    with torch.no_grad():
        for g in grads:
            g.copy_((g.to(torch.float64) * scale).to(g.dtype))
    return total.to(grads[0].dtype)


def lr_at(step, max_lr, min_lr, warmup_steps, cosine_steps):
    if warmup_steps > 0 and step < warmup_steps:
        return max_lr * (step / warmup_steps)
    progress = min(1.0, (step - warmup_steps) / (cosine_steps - warmup_steps))
    return min_lr + (max_lr - min_lr) * 0.5 * (1.0 + math.cos(math.pi * progress))
