"""Reference solution for kata 22: A paged KV cache."""

from __future__ import annotations

import torch


def paged_kv_cache(x: torch.Tensor) -> torch.Tensor:
    return x.clone()  # the stub's placeholder: replace with the reference
