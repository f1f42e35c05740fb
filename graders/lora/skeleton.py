"""Kata 28: LoRA adapters.

Read README.md in this folder, fill in the functions and classes below, then run
    pytest katas/28_lora
"""

from __future__ import annotations

import torch
from torch import nn  # noqa: F401


class LoRALinear:  # TODO: the base class the contract names (nn.Module, ...)
    def __init__(self, base, r, alpha, dropout=0.0, use_rslora=False):
        """TODO: what it computes, with every shape, e.g. (batch, seq, dim);
        its attributes and what its methods compute."""
        raise NotImplementedError("see katas/28_lora/README.md")


def apply_lora(model, target_modules, r, alpha, dropout=0.0):
    """TODO: what it computes, with every shape, e.g. (batch, seq, dim);
    returns model."""
    raise NotImplementedError("see katas/28_lora/README.md")
