"""Kata 26 in the shape of Hugging Face transformers' ForCausalLMLoss (loss/loss_utils.py):
pad the labels with ignore_index, shift them left, flatten, then fixed_cross_entropy's
reduction="sum" divided by num_items_in_batch. F.cross_entropy is not allowed in
next_token_loss, so its nll is written with log_softmax and gather; the chunked loss, where
it is allowed, recomputes each chunk with torch.utils.checkpoint.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


def cross_entropy_sum(source, target, ignore_index, label_smoothing):
    """F.cross_entropy(source, target, ignore_index, label_smoothing, reduction="sum")."""
    logprobs = source.log_softmax(dim=-1)
    keep = target != ignore_index
    safe = target.masked_fill(~keep, 0)
    nll = -logprobs.gather(1, safe.unsqueeze(1)).squeeze(1)
    smooth = -logprobs.mean(dim=-1)
    loss = (1.0 - label_smoothing) * nll + label_smoothing * smooth
    return torch.where(keep, loss, torch.zeros_like(loss)).sum()


def fixed_cross_entropy(source, target, num_items_in_batch=None, ignore_index=-100,
                        label_smoothing=0.0, z_loss=0.0):
    loss = cross_entropy_sum(source, target, ignore_index, label_smoothing)
    if z_loss:
        keep = target != ignore_index
        loss = loss + z_loss * torch.logsumexp(source[keep], dim=-1).pow(2).sum()
    if num_items_in_batch is None:  # "mean", but 0 rather than NaN with nothing to count
        num_items_in_batch = (target != ignore_index).sum().clamp(min=1)
    return loss / num_items_in_batch


def next_token_loss(logits, labels, ignore_index=-100, label_smoothing=0.0, z_loss=0.0,
                    num_items=None):
    logits = logits if logits.dtype == torch.float64 else logits.float()
    labels = labels.to(logits.device)
    labels = F.pad(labels, (0, 1), value=ignore_index)  # the last position predicts nothing
    shift_labels = labels[..., 1:].contiguous()
    vocab_size = logits.size(-1)
    logits = logits.view(-1, vocab_size)
    shift_labels = shift_labels.view(-1)
    return fixed_cross_entropy(logits, shift_labels, num_items, ignore_index, label_smoothing,
                               z_loss)


def _chunk_sum(hidden, weight, target, ignore_index, label_smoothing, z_loss):
    logits = hidden @ weight.T
    logits = logits if logits.dtype == torch.float64 else logits.float()
    loss = F.cross_entropy(logits, target, ignore_index=ignore_index,
                           label_smoothing=label_smoothing, reduction="sum")
    if z_loss:
        keep = target != ignore_index
        loss = loss + z_loss * torch.logsumexp(logits[keep], dim=-1).pow(2).sum()
    return loss


def chunked_next_token_loss(hidden, lm_head_weight, labels, chunk_size, ignore_index=-100,
                            label_smoothing=0.0, z_loss=0.0, num_items=None):
    labels = F.pad(labels, (0, 1), value=ignore_index)
    shift_labels = labels[..., 1:].reshape(-1)
    hidden = hidden.reshape(-1, hidden.size(-1))  # every position; the last ones are ignored
    total = 0.0
    for start in range(0, hidden.size(0), chunk_size):
        sl = slice(start, start + chunk_size)
        total = total + checkpoint(_chunk_sum, hidden[sl], lm_head_weight, shift_labels[sl],
                                   ignore_index, label_smoothing, z_loss, use_reentrant=False)
    if num_items is None:
        num_items = (shift_labels != ignore_index).sum().clamp(min=1)
    return total / num_items
