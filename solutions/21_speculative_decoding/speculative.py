"""Reference solution for kata 21: Speculative decoding."""

from __future__ import annotations

import torch


def speculative(x: torch.Tensor) -> torch.Tensor:
    return x.clone()  # the stub's placeholder: replace with the reference
