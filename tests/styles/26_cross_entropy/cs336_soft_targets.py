"""Kata 26 as a CS336-style run_cross_entropy grows into the training loss: log_softmax, then
the smoothed target distribution written out, q = (1 - eps) * one_hot(y) + eps / V, and
-sum(q * log p) per position, masked by a float mask. The chunked loss walks each row in
chunks (never across rows), each chunk recomputed in the backward by torch.utils.checkpoint.
"""

from __future__ import annotations

import torch
from torch.utils.checkpoint import checkpoint


def _position_losses(logits, targets, ignore_index, label_smoothing, z_loss):
    """logits (..., V), targets (...) -> (loss per position, mask as floats)."""
    logits = logits if logits.dtype == torch.float64 else logits.to(torch.float32)
    mask = (targets != ignore_index).to(logits.dtype)
    vocab = logits.shape[-1]
    log_probs = torch.log_softmax(logits, dim=-1)
    safe = torch.where(targets == ignore_index, torch.zeros_like(targets), targets)
    q = torch.nn.functional.one_hot(safe, vocab).to(logits.dtype) * (1 - label_smoothing)
    q = q + label_smoothing / vocab
    loss = -(q * log_probs).sum(dim=-1)
    if z_loss:
        loss = loss + z_loss * torch.logsumexp(logits, dim=-1) ** 2
    return loss * mask, mask


def next_token_loss(logits, labels, ignore_index=-100, label_smoothing=0.0, z_loss=0.0,
                    num_items=None):
    loss, mask = _position_losses(logits[:, :-1, :], labels[:, 1:], ignore_index,
                                  label_smoothing, z_loss)
    denominator = mask.sum().clamp(min=1.0) if num_items is None else num_items
    return loss.sum() / denominator


def _chunk(hidden, weight, targets, ignore_index, label_smoothing, z_loss):
    return _position_losses(hidden @ weight.T, targets, ignore_index, label_smoothing,
                            z_loss)[0].sum()


def chunked_next_token_loss(hidden, lm_head_weight, labels, chunk_size, ignore_index=-100,
                            label_smoothing=0.0, z_loss=0.0, num_items=None):
    batch, seq, _ = hidden.shape
    total = 0
    for row in range(batch):
        for start in range(0, seq - 1, chunk_size):
            stop = min(start + chunk_size, seq - 1)
            total = total + checkpoint(_chunk, hidden[row, start:stop], lm_head_weight,
                                       labels[row, start + 1:stop + 1], ignore_index,
                                       label_smoothing, z_loss, use_reentrant=False)
    count = (labels[:, 1:] != ignore_index).sum()
    return total / (count.clamp(min=1) if num_items is None else num_items)
