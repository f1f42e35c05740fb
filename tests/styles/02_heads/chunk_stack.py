"""Style: one head at a time: chunk the columns, stack the heads; cat them back to merge."""

from __future__ import annotations

import torch
from torch import Tensor


def split_heads(x: Tensor, num_heads: int) -> Tensor:
    heads = x.chunk(num_heads, dim=-1)  # h tensors (b, n, d): columns i*d:(i+1)*d
    return torch.stack(heads, dim=1)


def merge_heads(x: Tensor) -> Tensor:
    return torch.cat(x.unbind(dim=1), dim=-1)


def split_heads_seq_first(x: Tensor, num_heads: int) -> Tensor:
    rows = []
    for batch in x.unbind(dim=1):  # (n, h*d) per batch element, batch-major
        rows.extend(batch.chunk(num_heads, dim=-1))
    return torch.stack(rows, dim=0)


def merge_heads_seq_first(x: Tensor, batch_size: int) -> Tensor:
    num_heads = x.size(0) // batch_size
    batches = [torch.cat(list(x[i * num_heads:(i + 1) * num_heads]), dim=-1)
               for i in range(batch_size)]
    return torch.stack(batches, dim=1)
