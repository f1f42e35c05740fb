"""Grader for kata 08: ``TransformerDecoderLayer`` and ``TransformerDecoder``.

Expected numbers come from PyTorch's twins, ``nn.TransformerDecoderLayer`` and
``nn.TransformerDecoder``, with randomized weights (nonzero biases, LayerNorm gains away
from 1) loaded into the learner's modules through the state dict, in eval mode with grad
enabled, so that PyTorch takes its ordinary path rather than its fused one (which gives NaN
for a fully masked row). :func:`layer_reference` and :func:`decoder_reference` compute the
same thing from the state dict with one switch per catalogued mistake; the grader flips a
switch to recognise that mistake.

Inputs are chosen so that each mistake shows: the target and memory lengths differ (most
mask and query/key mix-ups then raise: :func:`slug_for_shape_error` reads nn.MultiheadAttention's
shape errors, and :func:`named_on_equal_lengths` reruns any other unexplained error on equal
lengths, where the mix-up computes and is named by value), some checks use equal lengths
from the start, every position is compared (a missing causal mask hardly changes the last one),
and key padding masks have holes in the middle that differ per batch element (with
right-padding the causal mask would hide a missing target padding mask). Fully masked
rows are kept out of the comparisons with PyTorch and checked on their own against the
contract's rule. Dropout is checked by behaviour only, never seed for seed.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graders.core.i18n import N_, _
from graders.core.compare import (
    NEARLY_ONE, expect_branches_dropped, expect_close, expect_grads_close, tolerance)
from graders.core.implementation import Implementation
from graders.core.inputs import drawn_cases, leaf_copies, randomize_
from graders.core.mistakes import Suspect
from graders.twins.reference import additive_mask
from graders.core.report import GradingFailure, describe_value, title, verdict
from graders.core.modules import differs_on_rerun, expect_module, learner_grads, matched_params
from graders.twins.layers import silu_like
from graders.decoder_layer.twin import (
    ALL_MASKS, Inputs, LayerArgs, MEMORY_MASKS, MaskSpec, NO_MASKS, TGT_MASKS,
    decoder_suspects, describe, layer_reference, layer_suspects, lengths, make_inputs)
from graders.decoder_layer.learner import (
    build_layer, layer_twin, load_twin_state, named_on_equal_lengths, new_layer, pytorch_grads,
    run, twin_output)


__all__ = [
    "test_layer_post_ln_matches_pytorch",
    "test_layer_pre_ln_matches_pytorch",
    "test_layer_activations",
    "test_layer_masks",
    "test_layer_batch_first",
    "test_layer_equal_lengths",
    "test_layer_random_shapes",
    "test_decoder_layers_are_independent",
    "test_decoder_matches_pytorch",
    "test_decoder_masks_reach_every_layer",
    "test_decoder_without_final_norm",
    "test_layer_float64",
    "test_layer_norm_eps",
    "test_layer_gradients",
    "test_decoder_gradients",
    "test_fully_masked_rows",
    "test_dropout_only_in_training",
    "test_half_precision_on_cuda",
]

# -------------------------------------------------------------------------- layer checks


def check_layer(impl: Implementation, args: LayerArgs, *, n: int = 5, m: int = 7, b: int = 3,
                masks: MaskSpec = NO_MASKS, seed: int = 0, dtype=torch.float32,
                device: str | torch.device = "cpu", check_grads: bool = False,
                weight_scale: float = 0.5, slack: float = 1.0) -> None:
    """The learner's layer against nn.TransformerDecoderLayer with the same weights."""
    twin = layer_twin(args, seed, dtype, device, weight_scale)
    inputs = make_inputs(args, n, m, b, masks, seed, dtype, device)
    layer = build_layer(impl, args, twin, probe=inputs)
    on = describe(inputs, args)
    what = "TransformerDecoderLayer.forward"
    tgt, memory = leaf_copies(inputs.tgt, inputs.memory)
    state = {k: v.detach() for k, v in twin.state_dict().items()}
    try:
        out = run(impl, layer, what, tgt, inputs, args, on, memory)
    except GradingFailure as failure:
        raise named_on_equal_lengths(
            failure, impl, layer, what, twin, args, inputs,
            lambda _: make_inputs(args, n, n, b, masks, seed, dtype, device),
            lambda probe: layer_suspects(state, probe, args), slack) from None

    ref_tgt, ref_memory = leaf_copies(inputs.tgt, inputs.memory)
    expected = twin_output(twin, ref_tgt, inputs, ref_memory)
    suspects = layer_suspects(state, inputs, args)
    suspects.append(differs_on_rerun(lambda: run(impl, layer, what, inputs.tgt, inputs, args, on)))
    expect_close(out, expected, _("the output"), on, suspects, slack=slack)
    if not check_grads:
        return
    check = _("backward through {module}", module="TransformerDecoderLayer")
    got = learner_grads(out, {"tgt": tgt, "memory": memory, **matched_params(layer, twin)},
                        seed + 3, check, on)
    expect_grads_close(got, pytorch_grads(expected, {"tgt": ref_tgt, "memory": ref_memory},
                                          twin, seed + 3), check, on)


@title(N_("Post-LN decoder layer against PyTorch"))
@pytest.mark.core
def test_layer_post_ln_matches_pytorch(impl):
    """Post-LN (the default), (seq, batch, d_model) inputs, relu, target length 5 and
    memory length 7; two widths."""
    check_layer(impl, LayerArgs(), seed=100)
    check_layer(impl, LayerArgs(d_model=12, nhead=3, dim_feedforward=20), n=4, m=6, b=2, seed=110)


@title(N_("Pre-LN decoder layer against PyTorch"))
@pytest.mark.core
def test_layer_pre_ln_matches_pytorch(impl):
    """Pre-LN (norm_first=True): each residual adds the un-normalised input."""
    check_layer(impl, LayerArgs(norm_first=True), seed=200)
    check_layer(impl, LayerArgs(d_model=12, nhead=3, dim_feedforward=20, norm_first=True),
                n=6, m=3, b=2, seed=210)


@title(N_("the decoder layer's activations"))
@pytest.mark.core
def test_layer_activations(impl):
    """activation="gelu", and callables (F.silu, a plain function) given to both modules."""
    for i, activation in enumerate(("gelu", F.silu, silu_like)):
        for norm_first in (False, True):
            check_layer(impl, LayerArgs(activation=activation, norm_first=norm_first),
                        seed=300 + 10 * i + norm_first)


# Both attention masks first, then both padding masks: with target length != memory length,
# a mask given to the wrong attention then raises (and is named) before a mask alone could
# look like a mask left out.
LAYER_MASK_CASES = (
    MaskSpec(tgt="causal", memory="bool"),
    MaskSpec(tgt_padding=True, memory_padding=True),
    MaskSpec(tgt="causal-bool", memory="float", tgt_padding=True, memory_padding=True),
    MaskSpec(tgt="float", memory_padding=True),
    MaskSpec(tgt="bool", tgt_padding=True),
    MaskSpec(memory="bool", memory_padding=True),
)


@title(N_("the decoder layer's masks"))
@pytest.mark.core
def test_layer_masks(impl):
    """tgt_mask (causal float and bool, random bool and float), memory_mask (bool, float),
    tgt_key_padding_mask and memory_key_padding_mask, alone and together; every position
    compared."""
    for i, spec in enumerate(LAYER_MASK_CASES):
        for norm_first in (False, True):
            check_layer(impl, LayerArgs(norm_first=norm_first), masks=spec,
                        seed=400 + 10 * i + norm_first)


@title(N_("the decoder layer with batch_first=True"))
@pytest.mark.core
def test_layer_batch_first(impl):
    """batch_first=True: tgt is (batch, tgt_len, d_model), memory (batch, mem_len, d_model)."""
    for norm_first in (False, True):
        check_layer(impl, LayerArgs(batch_first=True, norm_first=norm_first), seed=500 + norm_first)
        check_layer(impl, LayerArgs(batch_first=True, norm_first=norm_first, activation="gelu"),
                    masks=ALL_MASKS, n=4, m=6, seed=510 + norm_first)


@title(N_("target and memory of equal length"))
@pytest.mark.core
def test_layer_equal_lengths(impl):
    """Target and memory of the same length, all four masks: a mask or an input given to
    the wrong attention computes instead of raising, and must still give the wrong numbers."""
    for norm_first in (False, True):
        check_layer(impl, LayerArgs(norm_first=norm_first), n=6, m=6, masks=ALL_MASKS,
                    seed=550 + norm_first)
        check_layer(impl, LayerArgs(norm_first=norm_first, batch_first=True), n=5, m=5,
                    masks=MaskSpec("float", "float", True, True), seed=560 + norm_first)


def layer_case(rng):
    nhead, head_dim = rng.randint(1, 3), rng.randint(2, 4)
    head_dim = max(head_dim, -(-4 // nhead))  # d_model >= 4: LayerNorm stays well-conditioned
    args = LayerArgs(
        d_model=nhead * head_dim, nhead=nhead, dim_feedforward=rng.randint(1, 10),
        activation=rng.choice(["relu", "gelu", F.silu]),
        batch_first=rng.random() < 0.5, norm_first=rng.random() < 0.5,
    )
    spec = MaskSpec(rng.choice((None,) + TGT_MASKS), rng.choice((None,) + MEMORY_MASKS),
                    rng.random() < 0.5, rng.random() < 0.5)
    return args, rng.randint(1, 6), rng.randint(1, 6), rng.randint(1, 3), spec, rng.randint(0, 9999)


@title(N_("the decoder layer on random shapes"))
@pytest.mark.core
def test_layer_random_shapes(impl):
    """Random widths, heads, lengths, layouts, norm orders, activations and masks."""
    for args, n, m, b, spec, seed in drawn_cases(layer_case):
        check_layer(impl, args, n=n, m=m, b=b, masks=spec, seed=seed)


@title(N_("the decoder layer in float64"))
@pytest.mark.followup
def test_layer_float64(impl):
    """float64 in, float64 out, at float64 precision."""
    for norm_first in (False, True):
        check_layer(impl, LayerArgs(norm_first=norm_first, activation="gelu"), masks=ALL_MASKS,
                    dtype=torch.float64, seed=600 + norm_first)


@title(N_("the LayerNorms' eps"))
@pytest.mark.followup
def test_layer_norm_eps(impl):
    """layer_norm_eps reaches all three norms (a large eps, so that it shows)."""
    for norm_first in (False, True):
        check_layer(impl, LayerArgs(norm_first=norm_first, layer_norm_eps=0.5),
                    seed=700 + norm_first)


@title(N_("the decoder layer's gradients"))
@pytest.mark.followup
def test_layer_gradients(impl):
    """Gradients of tgt, memory and every weight and bias equal PyTorch's, Post-LN and Pre-LN."""
    for norm_first in (False, True):
        check_layer(impl, LayerArgs(norm_first=norm_first, activation="gelu"), masks=ALL_MASKS,
                    seed=800 + norm_first, check_grads=True)
    check_layer(impl, LayerArgs(batch_first=True, norm_first=True),
                masks=MaskSpec("float", "float", True, True), dtype=torch.float64, seed=810,
                check_grads=True)


# ------------------------------------------------------------------------ decoder checks


def decoder_twin(args: LayerArgs, num_layers: int, with_norm: bool, seed: int, dtype=torch.float32,
                 device: str | torch.device = "cpu", weight_scale: float = 0.5,
                 ) -> nn.TransformerDecoder:
    layer = nn.TransformerDecoderLayer(args.d_model, args.nhead, **args.kwargs(),
                                       dtype=dtype, device=device)
    norm = nn.LayerNorm(args.d_model, dtype=dtype, device=device) if with_norm else None
    twin = nn.TransformerDecoder(layer, num_layers, norm=norm)
    return randomize_(twin, seed, scale=weight_scale).eval()  # different weights per layer


def build_decoder(impl: Implementation, args: LayerArgs, num_layers: int, with_norm: bool,
                  dtype=torch.float32, device: str | torch.device = "cpu",
                  ) -> tuple[nn.Module, nn.Module, str]:
    """The learner's decoder around the learner's layer (not yet loaded), the layer given to
    it, and how it was built."""
    layer = new_layer(impl, args, dtype, device)
    cls = impl.attr("TransformerDecoder")
    kwargs = {"norm": nn.LayerNorm(args.d_model, dtype=dtype, device=device)} if with_norm else {}
    what = (f"TransformerDecoder(<your layer>, {num_layers}"
            + (", norm=nn.LayerNorm(d_model))" if with_norm else ")"))
    decoder = impl.call(cls, layer, num_layers, **kwargs, what=what, on=_("construction"))
    return expect_module(decoder, what).to(device=device, dtype=dtype), layer, what


def check_decoder(impl: Implementation, args: LayerArgs, *, num_layers: int = 3,
                  with_norm: bool = True, n: int = 5, m: int = 7, b: int = 3,
                  masks: MaskSpec = NO_MASKS, seed: int = 0, dtype=torch.float32,
                  device: str | torch.device = "cpu", check_grads: bool = False,
                  weight_scale: float = 0.5, slack: float = 1.0) -> None:
    """The learner's decoder against nn.TransformerDecoder with the same weights."""
    twin = decoder_twin(args, num_layers, with_norm, seed, dtype, device, weight_scale)
    decoder, _layer, what = build_decoder(impl, args, num_layers, with_norm, dtype, device)
    inputs = make_inputs(args, n, m, b, masks, seed, dtype, device)
    load_twin_state(impl, decoder, twin, "TransformerDecoder")
    decoder.eval()
    final = _("given") if with_norm else "None"
    on = describe(inputs, args, "; " + _("{num_layers} layers, final norm {final}",
                                         num_layers=num_layers, final=final))
    call = "TransformerDecoder.forward"
    tgt, memory = leaf_copies(inputs.tgt, inputs.memory)
    state = {k: v.detach() for k, v in twin.state_dict().items()}
    try:
        out = run(impl, decoder, call, tgt, inputs, args, on, memory)
    except GradingFailure as failure:
        raise named_on_equal_lengths(
            failure, impl, decoder, call, twin, args, inputs,
            lambda _: make_inputs(args, n, n, b, masks, seed, dtype, device),
            lambda probe: decoder_suspects(state, probe, args, num_layers), slack) from None

    ref_tgt, ref_memory = leaf_copies(inputs.tgt, inputs.memory)
    expected = twin_output(twin, ref_tgt, inputs, ref_memory)
    suspects = decoder_suspects(state, inputs, args, num_layers)
    suspects.append(differs_on_rerun(
        lambda: run(impl, decoder, call, inputs.tgt, inputs, args, on)))
    expect_close(out, expected, _("the output"), on, suspects, slack=slack)
    if not check_grads:
        return
    check = _("backward through {module}", module="TransformerDecoder")
    got = learner_grads(out, {"tgt": tgt, "memory": memory, **matched_params(decoder, twin)},
                        seed + 3, check, on)
    expect_grads_close(got, pytorch_grads(expected, {"tgt": ref_tgt, "memory": ref_memory},
                                          twin, seed + 3), check, on)


@title(N_("the decoder's layers are independent copies"))
@pytest.mark.core
def test_decoder_layers_are_independent(impl):
    """decoder.layers is an nn.ModuleList of independent deep copies: changing one layer's
    weights leaves the others unchanged, and editing the layer given to the constructor
    afterwards leaves the decoder unchanged."""
    args, num_layers = LayerArgs(), 3
    decoder, prototype, what = build_decoder(impl, args, num_layers, with_norm=False)
    on = _("{module} with {layer}", module=what, layer=args.call_text())
    layers = getattr(decoder, "layers", None)
    if not isinstance(layers, nn.ModuleList) or len(layers) != num_layers:
        raise verdict("TransformerDecoder.layers", on, [
            _("expected an nn.ModuleList of {count} layers, got {value}", count=num_layers,
              value=describe_value(layers))])
    before = [{k: v.detach().clone() for k, v in layer.state_dict().items()} for layer in layers]
    with torch.no_grad():
        for param in prototype.parameters():
            param.add_(1.0)
    for i in range(num_layers):
        for name, value in layers[i].state_dict().items():
            if name in before[i] and not torch.equal(value, before[i][name]):
                raise verdict(_("that the layers are copies of the given layer"), on, [
                    _("adding 1 to every weight of the layer given to the constructor changed "
                      "{parameter}: the decoder must hold deep copies",
                      parameter=f"layers[{i}].{name}")],
                    "shared-layer-weights")
    with torch.no_grad():
        for param in layers[0].parameters():
            param.add_(1.0)
    for i in range(1, num_layers):
        for name, value in layers[i].state_dict().items():
            if name in before[i] and not torch.equal(value, before[i][name]):
                raise verdict(_("that the layers are independent copies"), on, [
                    _("adding 1 to every weight of layers[0] also changed {parameter}",
                      parameter=f"layers[{i}].{name}")],
                    "shared-layer-weights")


@title(N_("the decoder against nn.TransformerDecoder"))
@pytest.mark.core
def test_decoder_matches_pytorch(impl):
    """3 layers with their own weights and a final norm, Pre-LN and Post-LN; every layer
    gets the same memory."""
    check_decoder(impl, LayerArgs(norm_first=True), seed=1100)
    check_decoder(impl, LayerArgs(norm_first=False, activation="gelu"), num_layers=2, n=6, m=4,
                  seed=1110)


@title(N_("masks reach every decoder layer"))
@pytest.mark.core
def test_decoder_masks_reach_every_layer(impl):
    """All four masks are given to every layer; both layouts; equal lengths too."""
    check_decoder(impl, LayerArgs(norm_first=True), masks=ALL_MASKS, seed=1200)
    check_decoder(impl, LayerArgs(batch_first=True), masks=MaskSpec("float", "float", True, True),
                  seed=1210)
    check_decoder(impl, LayerArgs(batch_first=True, norm_first=True), n=5, m=5, masks=ALL_MASKS,
                  seed=1220)


@title(N_("the decoder without a final norm"))
@pytest.mark.core
def test_decoder_without_final_norm(impl):
    """norm=None (the default): the last layer's output is the decoder's output."""
    check_decoder(impl, LayerArgs(norm_first=False), with_norm=False,
                  masks=MaskSpec(tgt="causal"), seed=1300)


@title(N_("the decoder's gradients"))
@pytest.mark.followup
def test_decoder_gradients(impl):
    """Gradients of tgt, memory, every layer's weights and the final norm equal PyTorch's."""
    check_decoder(impl, LayerArgs(norm_first=True, activation="gelu"), masks=ALL_MASKS,
                  seed=1400, check_grads=True)
    check_decoder(impl, LayerArgs(batch_first=True), num_layers=2, masks=MaskSpec("bool", "bool"),
                  dtype=torch.float64, seed=1410, check_grads=True)


# ------------------------------------------------------ fully masked rows, dropout, half


def fully_masked_inputs(args: LayerArgs, n: int, m: int, b: int, seed: int) -> Inputs:
    """Causal tgt_mask; batch element 0's target is left-padded (its first query sees only
    padding), batch element 1's memory is all padding (every cross-attention row of it is
    fully masked); the others have ordinary holes."""
    inputs = make_inputs(args, n, m, b, MaskSpec("causal", None, True, True), seed)
    tgt_padding = inputs.masks["tgt_key_padding_mask"].clone()
    memory_padding = inputs.masks["memory_key_padding_mask"].clone()
    tgt_padding[0, :2] = True
    memory_padding[1, :] = True
    masks = {**inputs.masks, "tgt_key_padding_mask": tgt_padding,
             "memory_key_padding_mask": memory_padding}
    return replace(inputs, masks=masks, note=inputs.note + _("; target 0 left-padded, memory 1 all "
                   "padding (fully masked rows)"))


def fully_masked_rows(inputs: Inputs, args: LayerArgs) -> Tensor:
    """Bool (n, b), or (b, n) with batch_first: the target positions whose self-attention or
    cross-attention has every key blocked (bool masks and padding only)."""
    masks = inputs.masks
    n, m = lengths(inputs, args)
    b = inputs.tgt.shape[0 if args.batch_first else 1]
    self_blocked = torch.zeros(b, n, n, dtype=torch.bool)
    cross_blocked = torch.zeros(b, n, m, dtype=torch.bool)
    for blocked, attn, padding in ((self_blocked, "tgt_mask", "tgt_key_padding_mask"),
                                   (cross_blocked, "memory_mask", "memory_key_padding_mask")):
        if masks.get(attn) is not None:
            blocked |= torch.isneginf(additive_mask(masks[attn], torch.float64)).cpu()
        if masks.get(padding) is not None:
            blocked |= masks[padding].cpu()[:, None, :]
    dead = self_blocked.all(dim=-1) | cross_blocked.all(dim=-1)  # (b, n)
    return dead if args.batch_first else dead.T


@title(N_("fully masked rows"))
@pytest.mark.followup
def test_fully_masked_rows(impl):
    """A query whose keys are all blocked gets zero attention, so its attention output is
    out_proj's bias (the contract's rule, CONTRACT.md), never NaN; gradients stay finite.
    Checked against the reference computed from the state dict."""
    for norm_first in (False, True):
        args = LayerArgs(norm_first=norm_first, batch_first=norm_first)
        twin = layer_twin(args, seed=1500 + norm_first)
        inputs = fully_masked_inputs(args, 4, 5, 3, seed=1510 + norm_first)
        layer = build_layer(impl, args, twin)
        on = describe(inputs, args)
        tgt, memory = leaf_copies(inputs.tgt, inputs.memory)
        out = run(impl, layer, "TransformerDecoderLayer.forward", tgt, inputs, args, on, memory)
        state = {k: v.detach() for k, v in twin.state_dict().items()}
        expected = layer_reference(state, inputs, args)
        dead = fully_masked_rows(inputs, args)

        def nan_on_dead_rows(got: Tensor) -> bool:
            """NaN somewhere, and only in rows that have a fully masked attention."""
            nan = torch.isnan(got.detach()).any(dim=-1)
            return bool(nan.any()) and nan.shape == dead.shape and not bool((nan & ~dead).any())

        nan_rows = Suspect("nan-on-fully-masked", matches=nan_on_dead_rows)
        expect_close(out, expected, _("the output where some queries have every key blocked"), on,
                     [nan_rows, *layer_suspects(state, inputs, args)])
        check = _("backward through fully masked rows")
        got = learner_grads(out, {"tgt": tgt, "memory": memory}, seed=1520, check=check, on=on)
        for name, grad in got.items():
            if grad is not None and not bool(torch.isfinite(grad).all()):
                raise verdict(_("{check}: gradient of {name}", check=check, name=name), on, [
                    _("it has NaN or inf: the backward of a fully masked row must stay finite")],
                    "nan-on-fully-masked")


@title(N_("dropout only in training mode"))
@pytest.mark.followup
def test_dropout_only_in_training(impl):
    """Eval mode is deterministic and dropout-free; training mode drops at random;
    training mode with dropout=0.0 is the eval output."""
    args = LayerArgs(dropout=0.5, norm_first=True)
    twin = layer_twin(args, seed=900)
    inputs = make_inputs(args, 5, 7, 3, NO_MASKS, seed=901)
    layer = build_layer(impl, args, twin)
    what = "TransformerDecoderLayer.forward"
    on = describe(inputs, args, ", dropout=0.5")
    first = run(impl, layer, what, inputs.tgt, inputs, args, on + _(", eval mode"))
    second = run(impl, layer, what, inputs.tgt, inputs, args, on + _(", eval mode"))
    rtol, atol = tolerance(inputs.tgt.dtype)
    if first.shape == second.shape and not torch.allclose(first, second, rtol=rtol, atol=atol):
        raise verdict(_("two calls in eval mode on the same input"), on, [
            _("they gave different outputs: something is random in eval mode")], "dropout-in-eval")
    state = {k: v.detach() for k, v in twin.state_dict().items()}
    expect_close(first, twin_output(twin, inputs.tgt, inputs), _("the output in eval mode"), on,
                 layer_suspects(state, inputs, args))

    layer.train()
    train_on = on + _(", training mode")
    dropped = [run(impl, layer, what, inputs.tgt, inputs, args, train_on) for _ in range(2)]
    if torch.allclose(dropped[0], dropped[1], rtol=rtol, atol=atol):
        raise verdict(_("two calls in training mode on the same input"), train_on, [
            _("they gave the same output: with dropout={p} they should differ", p=0.5),
            _("use the dropout submodules (dropout, dropout1, dropout2, dropout3, and the "
              "dropout inside self_attn and multihead_attn), which act while self.training is "
              "True")])

    args = replace(args, dropout=0.0)
    twin = layer_twin(args, seed=910)
    layer = build_layer(impl, args, twin).train()
    on = describe(inputs, args, ", dropout=0.0" + _(", training mode"))
    state = {k: v.detach() for k, v in twin.state_dict().items()}
    expect_close(run(impl, layer, what, inputs.tgt, inputs, args, on),
                 twin_output(twin, inputs.tgt, inputs),
                 _("the output in training mode with dropout=0.0 (must equal eval mode)"), on,
                 layer_suspects(state, inputs, args))

    check_every_branch_dropped(impl, inputs)


def check_every_branch_dropped(impl: Implementation, inputs: Inputs) -> None:
    """Training mode with dropout = 1 - 1e-9 drops the output of each residual branch
    (dropout1, dropout2, dropout3): the output is tgt with Pre-LN, norm3(norm2(norm1(tgt)))
    with Post-LN, what PyTorch's layer gives. A branch left undropped (say, dropout3 never
    applied to the feed-forward output) shows there, unlike at a moderate rate."""
    for norm_first in (True, False):
        args = LayerArgs(dropout=NEARLY_ONE, norm_first=norm_first)
        twin = layer_twin(args, seed=920 + norm_first)
        layer = build_layer(impl, args, twin).train()
        on = describe(inputs, args, _(", dropout=1 - 1e-9, training mode"))
        got = run(impl, layer, "TransformerDecoderLayer.forward", inputs.tgt, inputs, args, on)
        with torch.no_grad():
            expected = (inputs.tgt if norm_first
                        else twin.norm3(twin.norm2(twin.norm1(inputs.tgt))))
        expect_branches_dropped(
            got, expected, _("the output in training mode with dropout = 1 - 1e-9 (every "
                             "residual branch dropped)"), on,
            _("each branch's output goes through its own dropout before the residual sum: "
              "dropout1 after self_attn, dropout2 after multihead_attn, dropout3 after "
              "linear2 (and dropout between the activation and linear2)"))


@title(N_("half precision on a CUDA GPU"))
@pytest.mark.followup
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_half_precision_on_cuda(impl):
    """float16 and bfloat16 on the GPU keep their dtype and device; the decoder too.

    Smaller weights and a little slack: a residual sum cancels large terms, so its rounding
    error follows the size of the terms, not of the result.
    """
    args = LayerArgs(d_model=16, nhead=4, dim_feedforward=32)
    for dtype in (torch.float16, torch.bfloat16):
        half = dict(dtype=dtype, device="cuda", weight_scale=0.25, slack=2.0)
        for norm_first in (False, True):
            check_layer(impl, replace(args, norm_first=norm_first), n=7, m=9, masks=ALL_MASKS,
                        seed=1000 + norm_first, **half)
        check_decoder(impl, replace(args, norm_first=True), masks=ALL_MASKS, seed=1010, **half)
