"""Kata 26: Next-token cross-entropy.

Read README.md in this folder, fill in the two functions below, then run
    pytest katas/26_cross_entropy
"""

from __future__ import annotations

import torch


def next_token_loss(logits: torch.Tensor, labels: torch.Tensor, ignore_index: int = -100,
                    label_smoothing: float = 0.0, z_loss: float = 0.0,
                    num_items: int | torch.Tensor | None = None) -> torch.Tensor:
    """The mean next-token loss, a 0-d tensor (float32 for half-precision or float32 logits).

    logits (batch, seq, vocab); labels (batch, seq) int64, unshifted: position t's logits
    predict labels[:, t + 1], the last position predicts nothing. A target equal to
    ignore_index does not count. Per counted target:
    (1 - eps) * (-log p_y) + eps * mean over the vocab of (-log p_v)   (eps = label_smoothing)
    + z_loss * logsumexp(logits)^2. The sum over counted targets divided by their number, or
    by num_items (an int or a 0-d tensor) when given. No counted target: 0, differentiable.
    F.cross_entropy, F.nll_loss and nn.CrossEntropyLoss are not allowed here.
    """
    raise NotImplementedError("see katas/26_cross_entropy/README.md")


def chunked_next_token_loss(hidden: torch.Tensor, lm_head_weight: torch.Tensor,
                            labels: torch.Tensor, chunk_size: int, ignore_index: int = -100,
                            label_smoothing: float = 0.0, z_loss: float = 0.0,
                            num_items: int | torch.Tensor | None = None) -> torch.Tensor:
    """next_token_loss(hidden @ lm_head_weight.T, labels, ...) and its gradients, without the
    full (batch, seq, vocab) logits ever existing.

    hidden (batch, seq, dim), lm_head_weight (vocab, dim), labels (batch, seq) unshifted;
    chunk_size counts targets of the batch * (seq - 1) flattened positions. Over the call and
    its backward, at most 12 * chunk_size * vocab elements may be alive at once (tensors of
    hidden's or the weight's size aside). F.cross_entropy is allowed here.
    """
    raise NotImplementedError("see katas/26_cross_entropy/README.md")
