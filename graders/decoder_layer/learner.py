"""Kata 08's learner modules: built, loaded with the twin's state (naming a state-dict
mismatch), run under the guard, and an unexplained error rerun on equal lengths.
"""

from __future__ import annotations

from functools import partial

import torch
from torch import Tensor, nn

from graders.core.i18n import N_, _
from graders.core.compare import MISTAKE_SLACK, StateDictDiff, expect_tensor, tolerance
from graders.core.implementation import Implementation
from graders.core.inputs import grads_of, weighted_sum
from graders.core import modules
from graders.core.mistakes import identify
from graders.core.report import GradingFailure, mistake_lines, verdict
from graders.twins import layers
from graders.twins.layers import quiet_mask_types
from graders.decoder_layer.twin import (
    Inputs, LayerArgs, call_shapes, lengths, slug_for_shape_error)


# ------------------------------------------------------------------- learner's modules

SUBMODULES = N_("self_attn and multihead_attn (two nn.MultiheadAttention), linear1, dropout, "
                "linear2, norm1, norm2, norm3, dropout1, dropout2, dropout3")


def load_twin_state(impl: Implementation, module: nn.Module, twin: nn.Module, what: str,
                    probe: Inputs | None = None) -> None:
    """Load the twin's state dict into the learner's module, explaining any name or shape
    mismatch (the contract fixes PyTorch's submodule names).

    When exactly the cross-attention's weights are missing, ``probe`` tells the two ways
    that happens apart: the output still depends on memory (one attention module used for
    both: shared-attention-weights) or it does not (cross-attention-missing).
    """
    on = _("the state dict of {module}", module=type(twin).__name__)
    theirs = impl.call(module.state_dict, what=f"{what}.state_dict", on=on)
    ours = twin.state_dict()
    diff = StateDictDiff.of(theirs, ours)
    if not diff:
        impl.call(module.load_state_dict, ours, what=f"{what}.load_state_dict", on=on)
        return
    details = diff.lines()
    slug = None
    hidden = [name for name, value in vars(module).items() if isinstance(value, (list, tuple))
              and any(isinstance(item, nn.Module) for item in value)]
    if probe is not None and any(".multihead_attn." in "." + k for k in diff.missing):
        only_cross = (not diff.unexpected and not diff.resized
                      and all(".multihead_attn." in "." + k for k in diff.missing))
        use = _probe_memory_use(impl, module, ours, probe)
        if use == "none":
            slug = "cross-attention-missing"
            details.append(_("your layer has no multihead_attn, and its output does not "
                             "depend on memory at all"))
        elif use == "self_attn" and only_cross:
            slug = "shared-attention-weights"
            details.append(_("your layer has no multihead_attn, yet its output depends on "
                             "memory: one attention module is doing both jobs"))
        elif use == "unregistered" and not hidden:
            details.append(_("your layer reads memory with weights that are not in its state "
                             "dict: a module kept in a plain Python list or dict is not "
                             "registered (state_dict(), parameters() and .to() miss it); make "
                             "it an attribute, or use nn.ModuleList / nn.ModuleDict"))
    if hidden and diff.missing:
        details.append(_("{names}: a plain Python list holds modules there, which are not "
                         "registered (state_dict(), parameters() and .to() miss them): use "
                         "nn.ModuleList", names=", ".join(hidden)))
    details.append(_("name the submodules like PyTorch's: {names}", names=_(SUBMODULES)))
    raise verdict(_("loading PyTorch's weights into {module}", module=what), on, details, slug)


def _probe_memory_use(impl: Implementation, module: nn.Module, state: dict[str, Tensor],
                      probe: Inputs) -> str | None:
    """How the layer's output depends on memory, with what fits of ``state`` loaded: "none"
    (it does not: the cross-attention is missing), "self_attn" (it does, and no longer
    once self_attn's weights are zeroed: self_attn reads memory too), "unregistered" (it
    still does: weights outside the state dict, e.g. a module kept in a plain list read
    memory). Runs under the guard; None when that fails (the failure itself is not this
    check's verdict)."""
    what, on = "TransformerDecoderLayer.forward", _("a probe: does the output depend on memory?")
    zeroed = {k: torch.zeros_like(v) if k.startswith("self_attn.") else v
              for k, v in state.items()}

    def reads_memory(weights: dict[str, Tensor]) -> bool | None:
        try:
            impl.call(module.load_state_dict, weights, strict=False, what="load_state_dict",
                      on=on)
            module.eval()
            outs = []
            for memory in (probe.memory, probe.memory * -2.0 + 1.0):
                # The same random draws for both calls: a module that eval() does not reach
                # (kept in a plain list) still drops out, alike on both.
                with torch.random.fork_rng(devices=[]):
                    torch.manual_seed(0)
                    outs.append(impl.call(module, probe.tgt, memory, what=what, on=on))
        except GradingFailure:
            return None
        if not all(isinstance(out, Tensor) and out.is_floating_point()
                   and bool(out.isfinite().all()) for out in outs) or outs[0].shape != outs[1].shape:
            return None
        return not torch.allclose(outs[0].detach(), outs[1].detach(), rtol=1e-5, atol=1e-6)

    reads = reads_memory(state)
    if reads is None:
        return None
    if not reads:
        return "none"
    reads_without_self_attn = reads_memory(zeroed)
    impl.call(module.load_state_dict, state, strict=False, what="load_state_dict", on=on)
    if reads_without_self_attn is None:
        return None
    return "unregistered" if reads_without_self_attn else "self_attn"


new_layer = partial(modules.new_layer, name="TransformerDecoderLayer")
layer_twin = partial(layers.layer_twin, twin=nn.TransformerDecoderLayer)


def build_layer(impl: Implementation, args: LayerArgs, twin: nn.Module,
                probe: Inputs | None = None) -> nn.Module:
    """The learner's layer with the twin's weights, in eval mode."""
    weight = twin.linear1.weight
    layer = new_layer(impl, args, weight.dtype, weight.device)
    load_twin_state(impl, layer, twin, "TransformerDecoderLayer", probe)
    return layer.eval()


def run(impl: Implementation, module: nn.Module, what: str, tgt: Tensor, inputs: Inputs,
        args: LayerArgs, on: str, memory: Tensor | None = None) -> Tensor:
    """module(tgt, memory, **masks) under the guard; a shape error it raises is read with
    this call's lengths (:func:`slug_for_shape_error`, handed over for this call only)."""
    shapes = call_shapes(module, inputs, args)
    with quiet_mask_types():
        out = impl.call(module, tgt, inputs.memory if memory is None else memory,
                        what=what, on=on, **inputs.given,
                        exception_slugs=lambda exc: slug_for_shape_error(exc, shapes))
    return expect_tensor(out, what, on)


def named_on_equal_lengths(failure: GradingFailure, impl: Implementation, module: nn.Module,
                           what: str, twin: nn.Module, args: LayerArgs, inputs: Inputs,
                           equal_inputs, suspects_for, slack: float = 1.0) -> GradingFailure:
    """The learner's code raised on a target and memory of different lengths, and the error
    named no mistake. Mixing up the two sequences (a mask or an input given to the wrong
    attention) raises on such inputs, in ways that depend on how the attention is written.
    Run the same kind of input with equal lengths, where such a mix-up computes: if the
    output then matches a mistake, the failure names it. Otherwise it is returned as is.
    """
    n, m = lengths(inputs, args)
    if type(failure) is not GradingFailure or failure.slug or n == m:
        return failure
    probe = equal_inputs(inputs)
    try:
        got = run(impl, module, what, probe.tgt, probe, args, _("the same kind of input, m = n"))
    except GradingFailure:
        return failure
    expected = twin_output(twin, probe.tgt, probe)
    rtol, atol = tolerance(expected.dtype, slack * MISTAKE_SLACK)
    if got.shape == expected.shape and torch.allclose(
            got.detach().double(), expected.detach().double(), rtol=rtol, atol=atol):
        return failure
    slug = identify(got, expected, suspects_for(probe), rtol, atol)
    if slug is None:
        return failure
    first, *rest = str(failure).splitlines()
    note = "  " + _("with the memory as long as the target ({n}), your code runs, and gives "
                    "what this mistake gives", n=n)
    return GradingFailure("\n".join([first, *mistake_lines(slug), *rest, note]), slug=slug)


def twin_output(twin: nn.Module, tgt: Tensor, inputs: Inputs, memory: Tensor | None = None):
    with quiet_mask_types():
        return twin(tgt, inputs.memory if memory is None else memory, **inputs.given)


def pytorch_grads(expected: Tensor, named_inputs: dict[str, Tensor], twin: nn.Module,
                  seed: int) -> dict:
    return grads_of(weighted_sum([expected], seed=seed),
                    {**named_inputs, **dict(twin.named_parameters())})
