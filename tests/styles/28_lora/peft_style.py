"""Kata 28 as PEFT writes it (peft/tuners/lora/layer.py and model.py, one adapter): a
``lora_dropout`` module (``nn.Identity`` when p = 0), ``get_delta_weight``, a ``merged``
flag, ``_get_submodules`` + ``setattr`` to replace a target, ``check_target_module_exists``'s
suffix rule, and ``get_peft_model_state_dict``'s filter on ``lora_`` keys."""

from __future__ import annotations

import math
import warnings

import torch
from torch import Tensor, nn


class LoRALinear(nn.Module):
    """base(x) + lora_B(lora_A(lora_dropout(x))) * scaling: x (..., in) -> (..., out)."""

    def __init__(self, base: nn.Linear, r: int, alpha: float, dropout: float = 0.0,
                 use_rslora: bool = False):
        super().__init__()
        self.base = base
        for p in self.base.parameters():
            p.requires_grad = False
        self.r, self.lora_alpha = r, alpha
        self.lora_dropout = nn.Dropout(p=dropout) if dropout > 0.0 else nn.Identity()
        self.lora_A = nn.Linear(base.in_features, r, bias=False)
        self.lora_B = nn.Linear(r, base.out_features, bias=False)
        self.scaling = alpha / math.sqrt(r) if use_rslora else alpha / r
        self.merged = False
        self.reset_lora_parameters()
        self.to(base.weight.device, base.weight.dtype)

    def reset_lora_parameters(self) -> None:
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)

    def get_delta_weight(self) -> Tensor:
        return (self.lora_B.weight @ self.lora_A.weight) * self.scaling

    def merge(self) -> None:
        if self.merged:
            warnings.warn("Already merged. Nothing to do.")
            return
        self.base.weight.data += self.get_delta_weight()
        self.merged = True

    def unmerge(self) -> None:
        if not self.merged:
            warnings.warn("Already unmerged. Nothing to do.")
            return
        self.base.weight.data -= self.get_delta_weight()
        self.merged = False

    def forward(self, x: Tensor) -> Tensor:
        if self.merged:
            return self.base(x)
        result = self.base(x)
        x = x.to(self.lora_A.weight.dtype)
        return result + self.lora_B(self.lora_A(self.lora_dropout(x))) * self.scaling


def check_target_module_exists(target_modules, key: str) -> bool:
    return any(key == target_key or key.endswith(f".{target_key}")
               for target_key in target_modules)


def _get_submodules(model: nn.Module, key: str):
    parent = model.get_submodule(".".join(key.split(".")[:-1]))
    target_name = key.split(".")[-1]
    return parent, model.get_submodule(key), target_name


def apply_lora(model: nn.Module, target_modules, r: int, alpha: float,
               dropout: float = 0.0) -> nn.Module:
    for p in model.parameters():  # _mark_only_adapters_as_trainable
        p.requires_grad = False
    key_list = [key for key, _ in model.named_modules()]
    for key in key_list:
        if not check_target_module_exists(target_modules, key):
            continue
        parent, target, target_name = _get_submodules(model, key)
        if isinstance(target, nn.Linear):
            setattr(parent, target_name, LoRALinear(target, r, alpha, dropout))
    return model


def lora_state_dict(model: nn.Module) -> dict[str, Tensor]:
    state_dict = model.state_dict()
    return {k: state_dict[k] for k in state_dict if "lora_" in k}
