"""Reference solution for kata 23: Multi-head latent attention."""

from __future__ import annotations

import torch


def mla(x: torch.Tensor) -> torch.Tensor:
    return x.clone()  # the stub's placeholder: replace with the reference
