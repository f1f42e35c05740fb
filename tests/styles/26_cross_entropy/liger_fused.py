"""Kata 26 as Liger-Kernel's fused linear cross-entropy does it: the chunked loss is a custom
autograd.Function that, in its forward, computes each chunk's logits, its loss and its
gradients w.r.t. the hidden states and the weight, and keeps only those gradients (the
backward scales them by the incoming gradient). next_token_loss writes the logsumexp out by
hand: the row's maximum subtracted before exp.
"""

from __future__ import annotations

import torch


def _upcast(x):
    return x if x.dtype == torch.float64 else x.float()


def _per_target(x, y, label_smoothing, z_loss):
    """x (T, V) counted rows only, y (T,) -> (loss per target, d loss / d x)."""
    m = x.max(dim=-1, keepdim=True).values
    e = (x - m).exp()
    s = e.sum(dim=-1, keepdim=True)
    lse = (m + s.log()).squeeze(-1)
    picked = x.gather(-1, y[:, None]).squeeze(-1)
    loss = (1 - label_smoothing) * (lse - picked) + label_smoothing * (lse - x.mean(-1))
    loss = loss + z_loss * lse * lse
    p = e / s
    grad = p * (1 + 2 * z_loss * lse[:, None]) - label_smoothing / x.size(-1)
    grad.scatter_add_(-1, y[:, None], torch.full_like(picked[:, None], label_smoothing - 1))
    return loss, grad


def next_token_loss(logits, labels, ignore_index=-100, label_smoothing=0.0, z_loss=0.0,
                    num_items=None):
    x = _upcast(logits[:, :-1]).flatten(0, 1)
    y = labels[:, 1:].flatten()
    keep = y != ignore_index
    xk, yk = x[keep], y[keep]
    m = xk.max(dim=-1, keepdim=True).values.detach()  # a constant shift: no gradient needed
    lse = (m + (xk - m).exp().sum(-1, keepdim=True).log()).squeeze(-1)
    nll = lse - xk.gather(-1, yk[:, None]).squeeze(-1)
    loss = (1 - label_smoothing) * nll + label_smoothing * (lse - xk.mean(-1)) + z_loss * lse ** 2
    divisor = num_items if num_items is not None else max(int(keep.sum()), 1)
    return loss.sum() / divisor


class FusedLinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden, weight, labels, chunk_size, ignore_index, label_smoothing, z_loss,
                num_items):
        b, n, d = hidden.shape
        h = hidden[:, :-1].reshape(-1, d)
        y = labels[:, 1:].reshape(-1)
        keep = y != ignore_index
        divisor = num_items if num_items is not None else keep.sum().clamp(min=1)
        grad_h = torch.zeros_like(h, dtype=_upcast(h).dtype)
        grad_w = torch.zeros_like(weight, dtype=_upcast(weight).dtype)
        total = torch.zeros((), dtype=_upcast(h).dtype, device=h.device)
        for start in range(0, h.size(0), chunk_size):
            rows = torch.arange(start, min(start + chunk_size, h.size(0)), device=h.device)
            rows = rows[keep[rows]]
            if rows.numel() == 0:
                continue
            hc = _upcast(h[rows])
            logits = hc @ _upcast(weight).T
            loss, grad_logits = _per_target(logits, y[rows], label_smoothing, z_loss)
            total += loss.sum()
            grad_h[rows] = grad_logits @ _upcast(weight)
            grad_w += grad_logits.T @ hc
        full_grad_h = torch.zeros((b, n, d), dtype=grad_h.dtype, device=h.device)
        full_grad_h[:, :-1] = grad_h.view(b, n - 1, d)
        ctx.save_for_backward(full_grad_h / divisor, grad_w / divisor)
        ctx.dtypes = (hidden.dtype, weight.dtype)
        return total / divisor

    @staticmethod
    def backward(ctx, grad_output):
        grad_h, grad_w = ctx.saved_tensors
        return ((grad_h * grad_output).to(ctx.dtypes[0]), (grad_w * grad_output).to(ctx.dtypes[1]),
                None, None, None, None, None, None)


def chunked_next_token_loss(hidden, lm_head_weight, labels, chunk_size, ignore_index=-100,
                            label_smoothing=0.0, z_loss=0.0, num_items=None):
    return FusedLinearCrossEntropy.apply(hidden, lm_head_weight, labels, chunk_size, ignore_index,
                                         label_smoothing, z_loss, num_items)
