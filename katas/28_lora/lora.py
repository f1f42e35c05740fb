"""Kata 28: LoRA adapters.

Read README.md in this folder, fill in the class and the two functions below, then run
    pytest katas/28_lora
"""

from __future__ import annotations

import math
import warnings

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class LoRALinear(nn.Module):
    """A frozen ``nn.Linear`` plus a trainable low-rank update, as PEFT's ``LoraLayer``.

    x (..., in_features) -> (..., out_features):
        base(x) + lora_B(lora_A(dropout(x))) * scaling
    with ``scaling = alpha / r`` (``alpha / sqrt(r)`` when ``use_rslora``) and dropout in
    training mode only, on the adapter's input only.

    Attributes: ``base`` (the wrapped layer; its weight and bias frozen), ``lora_A``
    (``nn.Linear(in_features, r, bias=False)``, kaiming_uniform_(a=sqrt(5))) and ``lora_B``
    (``nn.Linear(r, out_features, bias=False)``, zeros), both in base's dtype and device.
    """

    def __init__(self, base: nn.Linear, r: int, alpha: float, dropout: float = 0.0,
                 use_rslora: bool = False):
        super().__init__()
        raise NotImplementedError("see katas/28_lora/README.md")

    def forward(self, x: Tensor) -> Tensor:
        """x (..., in_features) -> (..., out_features)."""
        raise NotImplementedError("see katas/28_lora/README.md")

    def merge(self) -> None:
        """Fold scaling * B @ A (out, in) into base.weight; the forward then uses base alone.
        A second merge() changes nothing and warns (warnings.warn)."""
        raise NotImplementedError("see katas/28_lora/README.md")

    def unmerge(self) -> None:
        """Take scaling * B @ A back out of base.weight. On an unmerged layer: nothing
        changes, and it warns."""
        raise NotImplementedError("see katas/28_lora/README.md")


def apply_lora(model: nn.Module, target_modules, r: int, alpha: float,
               dropout: float = 0.0) -> nn.Module:
    """Replace, in place, every nn.Linear whose qualified name equals a target or ends with
    "." + target by a LoRALinear wrapping it; freeze every other parameter; return model."""
    raise NotImplementedError("see katas/28_lora/README.md")


def lora_state_dict(model: nn.Module) -> dict[str, Tensor]:
    """Exactly the adapters' tensors ("<name>.lora_A.weight", "<name>.lora_B.weight")."""
    raise NotImplementedError("see katas/28_lora/README.md")
