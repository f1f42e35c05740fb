"""Kata 10's learner modules: built under their contract names, called, and their gradients.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

import torch
from torch import Tensor, nn

from graders.core.i18n import N_, _
from graders.core.compare import expect_tensor
from graders.core.implementation import Implementation
from graders.core.modules import expect_module
from graders.core.report import describe_inputs, verdict


# ---------------------------------------------------------------------- learner modules


def build(impl: Implementation, name: str, args: tuple, kwargs: dict[str, Any],
          state: dict[str, Tensor] | None, names_hint: str, dtype=torch.float64,
          device: str | torch.device = "cpu") -> nn.Module:
    """``name(*args, **kwargs)`` from the learner's file, moved to dtype and device, with
    ``state`` (timm's names) loaded strictly; in eval mode."""
    shown = ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()])
    what = f"{name}({shown})"
    module = impl.call(impl.attr(name), *args, **kwargs, what=what, on=_("construction"))
    module = expect_module(module, what)
    module = impl.call(module.to, device=device, dtype=dtype, what=f"{what}.to", on=_("construction"))
    module = expect_module(module, f"{what}.to")
    if state is not None:
        on = _("PyTorch's weights under timm's names")
        theirs = impl.call(module.state_dict, what=f"{what}.state_dict", on=on)
        missing = [k for k in state if k not in theirs]
        unexpected = [k for k in theirs if k not in state]
        resized = [_("{key}: yours {yours}, expected {expected}", key=k,
                       yours=tuple(theirs[k].shape), expected=tuple(v.shape))
                   for k, v in state.items() if k in theirs and theirs[k].shape != v.shape]
        if missing or unexpected or resized:
            details = []
            if missing:
                details.append(_("missing: {names}", names=", ".join(missing[:6])))
            if unexpected:
                details.append(_("unexpected: {names}", names=", ".join(unexpected[:6])))
            details += [_("wrong shape {key}", key=r) for r in resized[:3]]
            details.append(_(names_hint))
            raise verdict(_("loading weights into {module}", module=what), on, details)
        impl.call(module.load_state_dict, state, what=f"{what}.load_state_dict", on=on)
    module.eval()
    return module


def run(impl: Implementation, module: nn.Module, x: Tensor, what: str, on: str) -> Tensor:
    out = impl.call(module, x, what=f"{what}.forward", on=on)
    return expect_tensor(out, f"{what}.forward", on)


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Learner randomness (dropout, DropPath) from a fixed seed: the same verdict twice."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def twin_names(module: nn.Module, mapping: dict[str, str] | None) -> dict[str, Tensor]:
    """The learner's parameters under the twin's names (only those the mapping knows)."""
    theirs = dict(module.named_parameters())
    if mapping is None:
        return theirs
    return {mapping[name]: p for name, p in theirs.items() if name in mapping}


# ------------------------------------------------------------------------------- Attention

ATTENTION_NAMES = N_("Attention has qkv = nn.Linear(dim, 3 * dim, bias=qkv_bias) and proj = "
                     "nn.Linear(dim, dim)")


# ------------------------------------------------------------------------------------- Mlp

MLP_NAMES = N_("Mlp has fc1 = nn.Linear(in_features, hidden_features) and fc2 = "
               "nn.Linear(hidden_features, out_features); both default to in_features")


# ----------------------------------------------------------------------------------- Block

BLOCK_NAMES = N_("Block has norm1, attn (qkv, proj), norm2, mlp (fc1, fc2); "
                 "mlp's hidden width is int(dim * mlp_ratio); LayerNorm(dim, eps=1e-6)")


def block_call(dim: int, num_heads: int, mlp_ratio: float, qkv_bias: bool,
               extra: dict[str, float] | None = None) -> tuple[tuple, dict[str, Any]]:
    kwargs: dict[str, Any] = {"mlp_ratio": mlp_ratio, "qkv_bias": qkv_bias, **(extra or {})}
    return (dim, num_heads), kwargs


def new_block(impl: Implementation, dim: int, num_heads: int, mlp_ratio: float,
              qkv_bias: bool, state: dict[str, Tensor], dtype, device,
              extra: dict[str, float] | None = None) -> nn.Module:
    args, kwargs = block_call(dim, num_heads, mlp_ratio, qkv_bias, extra)
    return build(impl, "Block", args, kwargs, state, BLOCK_NAMES, dtype, device)


def block_on(x: Tensor, dim: int, num_heads: int, mlp_ratio: float, qkv_bias: bool,
             extra: str = "") -> str:
    return _("{inputs} with {module}", inputs=describe_inputs(x=x),
             module=f"Block({dim}, {num_heads}, mlp_ratio={mlp_ratio}, qkv_bias={qkv_bias}{extra})")
