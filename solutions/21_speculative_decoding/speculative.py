"""Reference solution for kata 21: one step of speculative sampling: a draft proposes, the target verifies, the output distributed exactly as the target's."""

from __future__ import annotations

import torch


def speculative(x: torch.Tensor) -> torch.Tensor:
    return x.clone()  # the stub's placeholder: replace with the reference
