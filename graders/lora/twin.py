"""Kata 28's twin: LoRA's arithmetic as functions of the weights (float64 on the CPU), each
with one switch per catalogued mistake, so that a check can compute what a mistake produces
on its own inputs and name it by matching; and PEFT's target-name rule with the rules
learners write instead.

The graded models (kata 15's Llama block as an nn.Module, the small stack) are in
graders/lora/models.py; their expected outputs come from kata 15's functional twin
(graders.twins.llama.llama_reference) with the effective weights W + scaling · B A.
"""

from __future__ import annotations

import math
from typing import Iterable

import torch
import torch.nn.functional as F
from torch import Tensor

# scaling switches -> slug
SCALING_MISTAKES = {"inverted": "scaling-inverted", "missing": "scaling-missing"}
# merge() switches -> slug: the weight after one merge()
MERGE_MISTAKES = {"no-scaling": "merge-without-scaling", "transposed": "merge-transposed",
                  "twice": "merge-twice-applied"}
# unmerge() switches -> slug: the weight after merge() then unmerge()
UNMERGE_MISTAKES = {"no-scaling": "unmerge-wrong", "adds": "unmerge-wrong",
                    "kept": "unmerge-wrong"}
# target-matching rules -> slug (PEFT's is "peft")
TARGET_MISTAKES = {"every": "targets-every-linear", "substring": "targets-every-linear",
                   "suffix-no-dot": "targets-every-linear"}
# Every switch of the twin -> the catalogued mistake it reproduces (the tables above, and
# the mistakes graded by a property rather than a switch: initialisation, freezing, dropout).
MISTAKE_OF: dict[str, str] = {
    **{f"scaling:{m}": s for m, s in SCALING_MISTAKES.items()},
    **{f"merge:{m}": s for m, s in MERGE_MISTAKES.items()},
    **{f"unmerge:{m}": s for m, s in UNMERGE_MISTAKES.items()},
    **{f"targets:{m}": s for m, s in TARGET_MISTAKES.items()},
}


def scaling(r: int, alpha: float, use_rslora: bool = False, mistake: str | None = None) -> float:
    """alpha / r, or alpha / sqrt(r) with rsLoRA; "inverted" r / alpha (sqrt(r) / alpha),
    "missing" 1."""
    rank = math.sqrt(r) if use_rslora else r
    if mistake == "inverted":
        return rank / alpha
    if mistake == "missing":
        return 1.0
    return alpha / rank


def delta(A: Tensor, B: Tensor, s: float) -> Tensor:
    """scaling · B @ A: (out, r) @ (r, in) -> (out, in), the update of base.weight."""
    return (B @ A) * s


def lora_forward(x: Tensor, weight: Tensor, bias: Tensor | None, A: Tensor, B: Tensor,
                 s: float) -> Tensor:
    """base(x) + x Aᵀ Bᵀ · s: x (..., in) -> (..., out)."""
    return F.linear(x, weight, bias) + F.linear(F.linear(x, A), B) * s


def adapter_term(x: Tensor, A: Tensor, B: Tensor, s: float) -> Tensor:
    """The adapter's part alone, x Aᵀ Bᵀ · s."""
    return F.linear(F.linear(x, A), B) * s


def merged_weight(weight: Tensor, A: Tensor, B: Tensor, s: float,
                  mistake: str | None = None) -> Tensor:
    """base.weight after one merge(); the switches of MERGE_MISTAKES."""
    d = delta(A, B, s)
    if mistake == "no-scaling":
        return weight + B @ A
    if mistake == "transposed":
        return weight + d.T  # only defined for a square layer
    if mistake == "twice":
        return weight + 2 * d
    return weight + d


def unmerged_weight(weight: Tensor, A: Tensor, B: Tensor, s: float,
                    mistake: str | None = None) -> Tensor:
    """base.weight after merge() then unmerge(), from the original weight; the switches of
    UNMERGE_MISTAKES ("kept": unmerge() leaves the merged weight)."""
    d = delta(A, B, s)
    if mistake == "no-scaling":
        return weight + d - B @ A
    if mistake == "adds":
        return weight + 2 * d
    if mistake == "kept":
        return weight + d
    return weight.clone()


def is_target(name: str, targets: Iterable[str], rule: str = "peft") -> bool:
    """Whether a module's qualified name is a target: PEFT's rule (the name itself, or a
    suffix after a dot), or a learner's: "every" Linear, "substring", "suffix-no-dot"."""
    targets = list(targets)
    if rule == "every":
        return True
    if rule == "substring":
        return any(t in name for t in targets)
    if rule == "suffix-no-dot":
        return any(name.endswith(t) for t in targets)
    return any(name == t or name.endswith("." + t) for t in targets)


def targeted(linear_names: Iterable[str], targets: Iterable[str], rule: str = "peft"
             ) -> list[str]:
    """The nn.Linear names a rule wraps, in model order."""
    targets = list(targets)
    return [n for n in linear_names if is_target(n, targets, rule)]


def effective_state(state: dict[str, Tensor], adapters: dict[str, tuple[Tensor, Tensor]],
                    s: float) -> dict[str, Tensor]:
    """The state dict with every adapted layer's weight W + s · B A (the merged model);
    ``adapters`` maps a layer's name to its (A, B)."""
    out = dict(state)
    for name, (A, B) in adapters.items():
        out[f"{name}.weight"] = state[f"{name}.weight"] + delta(A, B, s)
    return out


def is_mask_of(values: Tensor, full: Tensor, keep: float, atol: float = 1e-8) -> bool:
    """Whether every entry of ``values`` is 0 or full / keep (an inverted-dropout draw of
    ``full``), with at least one entry dropped where ``full`` is non-zero."""
    scaled = full / keep
    zero = values.abs() <= atol
    kept = (values - scaled).abs() <= atol + 1e-6 * scaled.abs()
    return bool((zero | kept).all()) and bool((zero & (full.abs() > 10 * atol)).any())


def recovered_input(delta_out: Tensor, A: Tensor, B: Tensor, s: float) -> tuple[Tensor, float]:
    """The adapter's input z with z Aᵀ Bᵀ · s = delta_out, by least squares (B A injective),
    and the relative residual of that fit."""
    M = delta(A, B, s)  # (out, in)
    flat = delta_out.reshape(-1, M.shape[0])
    z = torch.linalg.lstsq(M, flat.T).solution.T
    residual = (flat - z @ M.T).abs().max() / flat.abs().max().clamp_min(1e-30)
    return z.reshape(*delta_out.shape[:-1], M.shape[1]), float(residual)
