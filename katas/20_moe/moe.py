"""Kata 20: A sparse mixture-of-experts layer.

Read README.md in this folder, fill in the function below, then run
    pytest katas/20_moe
"""

from __future__ import annotations

import torch


def moe(x: torch.Tensor) -> torch.Tensor:
    """Return a tensor of the shape of x (the stub's placeholder task: replace it)."""
    raise NotImplementedError("see katas/20_moe/README.md")
