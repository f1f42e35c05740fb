"""Reference solution for kata 28: LoRA adapters."""

from __future__ import annotations

import math
import warnings

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class LoRALinear(nn.Module):
    """A frozen nn.Linear plus a trainable low-rank update: x (..., in) -> (..., out)."""

    def __init__(self, base: nn.Linear, r: int, alpha: float, dropout: float = 0.0,
                 use_rslora: bool = False):
        super().__init__()
        self.base = base
        self.base.weight.requires_grad_(False)
        if self.base.bias is not None:
            self.base.bias.requires_grad_(False)
        weight = base.weight
        self.lora_A = nn.Linear(base.in_features, r, bias=False, dtype=weight.dtype,
                                device=weight.device)
        self.lora_B = nn.Linear(r, base.out_features, bias=False, dtype=weight.dtype,
                                device=weight.device)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)
        self.dropout = dropout
        self.scaling = alpha / math.sqrt(r) if use_rslora else alpha / r
        self.merged = False

    def delta_weight(self) -> Tensor:
        """scaling · B @ A, shaped like base.weight (out, in)."""
        return (self.lora_B.weight @ self.lora_A.weight) * self.scaling

    def forward(self, x: Tensor) -> Tensor:
        result = self.base(x)
        if self.merged:
            return result
        dropped = F.dropout(x, self.dropout, training=self.training)
        return result + self.lora_B(self.lora_A(dropped)) * self.scaling

    @torch.no_grad()
    def merge(self) -> None:
        if self.merged:
            warnings.warn("merge(): the adapter is already merged; nothing changed")
            return
        self.base.weight += self.delta_weight()
        self.merged = True

    @torch.no_grad()
    def unmerge(self) -> None:
        if not self.merged:
            warnings.warn("unmerge(): the adapter is not merged; nothing changed")
            return
        self.base.weight -= self.delta_weight()
        self.merged = False


def matches(name: str, target_modules) -> bool:
    """PEFT's rule: the qualified name is a target, or ends with "." + a target."""
    return any(name == t or name.endswith("." + t) for t in target_modules)


def apply_lora(model: nn.Module, target_modules, r: int, alpha: float,
               dropout: float = 0.0) -> nn.Module:
    for p in model.parameters():
        p.requires_grad_(False)
    # The list first: replacing while named_modules() walks would visit the new modules.
    targets = [(name, module) for name, module in model.named_modules()
               if isinstance(module, nn.Linear) and matches(name, target_modules)]
    for name, module in targets:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name)
        setattr(parent, child, LoRALinear(module, r, alpha, dropout))
    return model


def lora_state_dict(model: nn.Module) -> dict[str, Tensor]:
    return {k: v for k, v in model.state_dict().items()
            if ".lora_A." in f".{k}" or ".lora_B." in f".{k}"}
