"""Kata 28 with F.linear on the factors' weights, an explicit inverted-dropout mask, merge and
unmerge by ``addmm_`` (alpha = ±scaling), and a recursive walk over ``named_children`` that
replaces targets on their parent as it goes."""

from __future__ import annotations

import math
import warnings

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class LoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, r: int, alpha: float, dropout: float = 0.0,
                 use_rslora: bool = False):
        super().__init__()
        self.base = base.requires_grad_(False)
        kw = {"dtype": base.weight.dtype, "device": base.weight.device}
        self.lora_A = nn.Linear(base.in_features, r, bias=False, **kw)  # kaiming_uniform_(a=sqrt(5))
        self.lora_B = nn.Linear(r, base.out_features, bias=False, **kw)
        with torch.no_grad():
            self.lora_B.weight.zero_()
        self.p = dropout
        self.scaling = alpha / (r ** 0.5 if use_rslora else r)
        self.is_merged = False

    def forward(self, x: Tensor) -> Tensor:
        out = F.linear(x, self.base.weight, self.base.bias)
        if self.is_merged:
            return out
        if self.training and self.p > 0:
            keep = torch.rand_like(x) >= self.p
            x = x * keep / (1 - self.p)
        return out + self.scaling * F.linear(F.linear(x, self.lora_A.weight), self.lora_B.weight)

    @torch.no_grad()
    def merge(self) -> None:
        if self.is_merged:
            warnings.warn("LoRALinear.merge: already merged", RuntimeWarning)
        else:
            self.base.weight.addmm_(self.lora_B.weight, self.lora_A.weight, alpha=self.scaling)
            self.is_merged = True

    @torch.no_grad()
    def unmerge(self) -> None:
        if not self.is_merged:
            warnings.warn("LoRALinear.unmerge: not merged", RuntimeWarning)
        else:
            self.base.weight.addmm_(self.lora_B.weight, self.lora_A.weight, alpha=-self.scaling)
            self.is_merged = False


def apply_lora(model: nn.Module, target_modules, r: int, alpha: float,
               dropout: float = 0.0) -> nn.Module:
    model.requires_grad_(False)

    def walk(module: nn.Module, prefix: str) -> None:
        for child_name, child in list(module.named_children()):
            name = f"{prefix}.{child_name}" if prefix else child_name
            hit = any(name == t or name.endswith("." + t) for t in target_modules)
            if isinstance(child, nn.Linear) and hit:
                setattr(module, child_name, LoRALinear(child, r, alpha, dropout))
            else:
                walk(child, name)

    walk(model, "")
    return model


def lora_state_dict(model: nn.Module) -> dict[str, Tensor]:
    out = {}
    for name, module in model.named_modules():
        if isinstance(module, LoRALinear):
            prefix = f"{name}." if name else ""
            out[prefix + "lora_A.weight"] = module.lora_A.weight.detach().clone()
            out[prefix + "lora_B.weight"] = module.lora_B.weight.detach().clone()
    return out
