"""Reference solution for kata 24: A quantised KV cache."""

from __future__ import annotations

import torch


def kv_quant(x: torch.Tensor) -> torch.Tensor:
    return x.clone()  # the stub's placeholder: replace with the reference
