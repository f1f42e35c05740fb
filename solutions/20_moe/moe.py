"""Reference solution for kata 20: A sparse mixture-of-experts layer."""

from __future__ import annotations

import torch


def moe(x: torch.Tensor) -> torch.Tensor:
    return x.clone()  # the stub's placeholder: replace with the reference
