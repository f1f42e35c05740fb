"""Kata 26: next-token cross-entropy, as LLMs are trained on it (reference solution)."""

from __future__ import annotations

import torch


def _work_dtype(dtype: torch.dtype) -> torch.dtype:
    """float64 stays float64; everything else (float16, bfloat16, float32) is computed in float32."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def _summed_loss(logits: torch.Tensor, targets: torch.Tensor, ignore_index: int,
                 label_smoothing: float, z_loss: float) -> torch.Tensor:
    """The loss summed over the counted targets: logits (T, V) already shifted, targets (T,)."""
    counted = targets != ignore_index
    x = logits[counted].to(_work_dtype(logits.dtype))  # ignored rows never enter the sum
    y = targets[counted]
    lse = torch.logsumexp(x, dim=-1)  # subtracts the row's max: stable at logits of 1e4
    nll = lse - x.gather(-1, y[:, None]).squeeze(-1)
    per_target = (1 - label_smoothing) * nll + label_smoothing * (lse - x.mean(dim=-1))
    if z_loss:
        per_target = per_target + z_loss * lse.square()
    return per_target.sum()


def _divided(total: torch.Tensor, counted: torch.Tensor, num_items) -> torch.Tensor:
    """total / num_items, or / the number of counted targets (at least 1: no target gives 0)."""
    denominator = counted.clamp_min(1) if num_items is None else num_items
    return total / denominator


def next_token_loss(logits: torch.Tensor, labels: torch.Tensor, ignore_index: int = -100,
                    label_smoothing: float = 0.0, z_loss: float = 0.0,
                    num_items: int | torch.Tensor | None = None) -> torch.Tensor:
    """logits (b, n, V), labels (b, n) unshifted -> the mean next-token loss, a 0-d tensor."""
    vocab = logits.size(-1)
    shifted = logits[:, :-1].reshape(-1, vocab)  # position t predicts labels[:, t + 1]
    targets = labels[:, 1:].reshape(-1)
    total = _summed_loss(shifted, targets, ignore_index, label_smoothing, z_loss)
    return _divided(total, (targets != ignore_index).sum(), num_items)


class _ChunkedSum(torch.autograd.Function):
    """The loss summed over the counted targets of h (T, d) @ weight.T (V, d) against targets
    (T,), chunk_size targets at a time. The forward also computes each chunk's gradients (as
    Liger-Kernel's fused linear cross-entropy does), so that a chunk's (chunk_size, V) logits
    are freed before the next chunk's are built; the backward only scales them."""

    @staticmethod
    def forward(ctx, h, weight, targets, chunk_size, ignore_index, label_smoothing, z_loss):
        grad_h = torch.zeros_like(h)
        grad_weight = torch.zeros_like(weight)
        total = h.new_zeros((), dtype=_work_dtype(h.dtype))
        for start in range(0, targets.numel(), chunk_size):
            stop = start + chunk_size
            with torch.enable_grad():  # a small graph per chunk, differentiated at once
                h_chunk = h[start:stop].detach().requires_grad_(True)
                w = weight.detach().requires_grad_(True)
                loss = _summed_loss(h_chunk @ w.T, targets[start:stop], ignore_index,
                                    label_smoothing, z_loss)
                d_h, d_w = torch.autograd.grad(loss, (h_chunk, w))
            total = total + loss.detach()
            grad_h[start:stop] = d_h
            grad_weight += d_w
        ctx.save_for_backward(grad_h, grad_weight)
        return total

    @staticmethod
    def backward(ctx, grad_total):
        grad_h, grad_weight = ctx.saved_tensors
        return grad_h * grad_total, grad_weight * grad_total, None, None, None, None, None


def chunked_next_token_loss(hidden: torch.Tensor, lm_head_weight: torch.Tensor,
                            labels: torch.Tensor, chunk_size: int, ignore_index: int = -100,
                            label_smoothing: float = 0.0, z_loss: float = 0.0,
                            num_items: int | torch.Tensor | None = None) -> torch.Tensor:
    """hidden (b, n, d), lm_head_weight (V, d), labels (b, n) -> next_token_loss of
    hidden @ lm_head_weight.T, never holding more than one chunk's (chunk_size, V) logits."""
    h = hidden[:, :-1].reshape(-1, hidden.size(-1))
    targets = labels[:, 1:].reshape(-1)
    total = _ChunkedSum.apply(h, lm_head_weight, targets, chunk_size, ignore_index,
                              label_smoothing, z_loss)
    return _divided(total, (targets != ignore_index).sum(), num_items)
