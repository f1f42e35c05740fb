"""A learner's ``nn.Module``, built, loaded and differentiated under the guard: construction,
the state dict's exact keys and shapes, ``load_state_dict(strict=True)`` of the grader's
weights (katas whose classes must load a published checkpoint's names: 15's Llama block, 20's
Mixtral MoE), the gradients of its output, its parameters under the twin's names, and the
dropout-in-eval suspect. The references these are compared with live in graders/twins/ and
each kata's twin.py."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from typing import Any, Callable

from graders.core.compare import expect_tracks_grad, tolerance
from graders.core.i18n import _
from graders.core.implementation import Implementation
from graders.core.inputs import grads_of, weighted_sum
from graders.core.mistakes import Suspect
from graders.core.report import describe_value, verdict


def expect_module(value: Any, what: str) -> nn.Module:
    """``value``, which must be an nn.Module (what a learner's constructor returned)."""
    if not isinstance(value, nn.Module):
        raise verdict(what, _("construction"),
                      [_("expected an nn.Module, got {value}", value=describe_value(value))])
    return value


def construct(impl: Implementation, cls_name: str, args: tuple, kwargs: dict, what: str) -> nn.Module:
    """``cls_name(*args, **kwargs)`` from the learner's file; it must be an nn.Module."""
    module = impl.call(impl.attr(cls_name), *args, what=what, on=_("construction"), **kwargs)
    return expect_module(module, what)


def new_layer(impl: Implementation, args: Any, dtype=torch.float32,
              device: str | torch.device = "cpu", *, name: str) -> nn.Module:
    """The learner's layer ``name`` (TransformerEncoderLayer, TransformerDecoderLayer) built
    with ``args`` (a graders.twins.layers.LayerArgs: d_model, nhead, kwargs(), call_text()),
    in ``dtype`` on ``device``."""
    layer = construct(impl, name, (args.d_model, args.nhead), args.kwargs(), args.call_text())
    return layer.to(device=device, dtype=dtype)


def expect_state_dict(impl: Implementation, module: nn.Module, expected: dict[str, tuple],
                      what: str, unexpected: str | None = None, names: str | None = None) -> None:
    """The module's state dict holds exactly ``expected``'s keys, with those shapes, and its
    parameters are exactly those tensors. ``unexpected``: the line for keys it should not
    have (``{keys}`` filled in), e.g. where such a table belongs; ``names``: whose names
    these are, for the closing line."""
    got = impl.call(lambda: {k: tuple(t.shape) for k, t in module.state_dict().items()},
                    what=f"{what}.state_dict", on=_("construction"))
    params = impl.call(lambda: {k: tuple(p.shape) for k, p in module.named_parameters()},
                       what=f"{what}.named_parameters", on=_("construction"))
    check = _("the state dict of {module}", module=what)
    details = []
    extra = ", ".join(sorted(set(got) - set(expected)))
    if extra:
        details.append(unexpected.format(keys=extra) if unexpected
                       else _("unexpected keys: {keys}", keys=extra))
    if set(expected) - set(got):
        details.append(_("missing keys: {keys}", keys=", ".join(sorted(set(expected) - set(got)))))
    details += [_("{key} has shape {got}, expected {expected}", key=k, got=got[k], expected=shape)
                for k, shape in expected.items() if k in got and got[k] != shape]
    if not details and set(params) != set(expected):
        details.append(_("its parameters are {got}; expected exactly {expected}",
                         got=", ".join(sorted(params)) or "()", expected=", ".join(expected)))
    if details:
        details.append(names.format(keys=", ".join(expected)) if names
                       else _("expected exactly Hugging Face's keys: {keys}", keys=", ".join(expected)))
        raise verdict(check, _("construction"), details)


def load(impl: Implementation, module: nn.Module, state: dict[str, Tensor], what: str,
         dtype: torch.dtype, device: str) -> nn.Module:
    """``module`` moved to dtype and device with ``state`` loaded, strict=True."""
    module = impl.call(module.to, device=device, dtype=dtype, what=f"{what}.to",
                       on=_("construction"))
    typed = {k: t.to(device=device, dtype=dtype) for k, t in state.items()}
    impl.call(module.load_state_dict, typed, strict=True, what=f"{what}.load_state_dict",
              on=_("random weights (strict=True)"))
    return module


def learner_grads(out: Tensor, named: dict[str, Tensor], seed: int, check: str,
                  on: str) -> dict[str, Tensor | None]:
    """Gradients of a fixed weighted sum of the learner's output ``out`` with respect to each
    named tensor (None where unused); a verdict when ``out`` does not track gradients."""
    expect_tracks_grad({_("the output"): out}, check, on)
    return grads_of(weighted_sum([out], seed=seed), named, on=on)


def matched_params(module: nn.Module, twin: nn.Module) -> dict[str, Tensor]:
    """The learner's parameters under the twin's names (a missing one gets no gradient)."""
    theirs = dict(module.named_parameters())
    return {name: theirs[name] for name, _ in twin.named_parameters() if name in theirs}


def differs_on_rerun(rerun: Callable[[], Any]) -> Suspect:
    """dropout-in-eval: in eval mode a second call on the same input gives another output."""

    def matches(got: Tensor) -> bool:
        again = rerun()
        rtol, atol = tolerance(got.dtype)
        return isinstance(again, Tensor) and again.shape == got.shape and not torch.allclose(
            again.detach(), got.detach(), rtol=rtol, atol=atol, equal_nan=True)

    return Suspect("dropout-in-eval", matches=matches)
