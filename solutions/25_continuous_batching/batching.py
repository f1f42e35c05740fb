"""Reference solution for kata 25: iteration-level scheduling over a packed, ragged batch."""

from __future__ import annotations

import torch


def batching(x: torch.Tensor) -> torch.Tensor:
    return x.clone()  # the stub's placeholder: replace with the reference
