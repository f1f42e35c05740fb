"""Kata 23: Multi-head latent attention.

Read README.md in this folder, fill in the function below, then run
    pytest katas/23_mla
"""

from __future__ import annotations

import torch


def mla(x: torch.Tensor) -> torch.Tensor:
    """Return a tensor of the shape of x (the stub's placeholder task: replace it)."""
    raise NotImplementedError("see katas/23_mla/README.md")
