"""Kata 28 as an interview answer writes it (TorchCode / LeetGPU style): ``nn.Dropout``
always present, ``math.sqrt`` for rsLoRA, the merge by assigning a new weight tensor, the
parent found by ``getattr`` along the dotted name, and the state dict filtered by
``requires_grad``."""

from __future__ import annotations

import math
import warnings

import torch
from torch import Tensor, nn


class LoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, r: int, alpha: float, dropout: float = 0.0,
                 use_rslora: bool = False):
        super().__init__()
        self.base = base
        base.weight.requires_grad = False
        if base.bias is not None:
            base.bias.requires_grad = False
        d_in, d_out = base.in_features, base.out_features
        self.lora_A = nn.Linear(d_in, r, bias=False).to(base.weight)
        self.lora_B = nn.Linear(r, d_out, bias=False).to(base.weight)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)
        self.drop = nn.Dropout(dropout)
        self.scaling = alpha / (math.sqrt(r) if use_rslora else r)
        self.merged = False

    def forward(self, x: Tensor) -> Tensor:
        y = self.base(x)
        if not self.merged:
            y = y + self.scaling * self.lora_B(self.lora_A(self.drop(x)))
        return y

    def merge(self) -> None:
        if self.merged:
            warnings.warn("already merged")
            return
        with torch.no_grad():
            w = self.base.weight + self.scaling * (self.lora_B.weight @ self.lora_A.weight)
            self.base.weight.copy_(w)
        self.merged = True

    def unmerge(self) -> None:
        if not self.merged:
            warnings.warn("not merged")
            return
        with torch.no_grad():
            w = self.base.weight - self.scaling * (self.lora_B.weight @ self.lora_A.weight)
            self.base.weight.copy_(w)
        self.merged = False


def apply_lora(model: nn.Module, target_modules, r: int, alpha: float,
               dropout: float = 0.0) -> nn.Module:
    for param in model.parameters():
        param.requires_grad = False
    names = [n for n, m in model.named_modules() if isinstance(m, nn.Linear)
             and any(n == t or n.endswith("." + t) for t in target_modules)]
    for name in names:
        *path, last = name.split(".")
        parent = model
        for part in path:
            parent = getattr(parent, part)
        setattr(parent, last, LoRALinear(getattr(parent, last), r, alpha, dropout))
    return model


def lora_state_dict(model: nn.Module) -> dict[str, Tensor]:
    return {n: p for n, p in model.named_parameters() if p.requires_grad}
