"""Grader for kata 06: ``TransformerEncoderLayer`` and ``TransformerEncoder``.

Expected numbers come from PyTorch's twins, ``nn.TransformerEncoderLayer`` and
``nn.TransformerEncoder(..., enable_nested_tensor=False)``, with randomized weights (nonzero
biases, LayerNorm gains away from 1) loaded into the learner's modules through the state
dict, in eval mode with grad enabled, so that PyTorch takes its ordinary path rather than
its fused one. :func:`layer_reference` and :func:`encoder_reference` compute the same thing
from the state dict with one switch per catalogued mistake; the grader flips a switch to
recognise that mistake. Dropout is checked by behaviour only, never seed for seed.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from functools import partial
from typing import Any, Callable

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graders.core.i18n import N_, _
from graders.core.compare import (
    NEARLY_ONE, MISTAKE_SLACK, StateDictDiff, expect_branches_dropped, expect_close,
    expect_grads_close, expect_tensor, tolerance)
from graders.core.implementation import Implementation
from graders.core.inputs import drawn_cases, grads_of, leaf_copies, randomize_, weighted_sum
from graders.core.report import describe_inputs, describe_value, verdict, title
from graders.twins import layers
from graders.core import modules
from graders.core.modules import differs_on_rerun, expect_module, learner_grads, matched_params
from graders.twins.layers import silu_like, LayerArgs, quiet_mask_types, sequence
from graders.encoder_layer.twin import (
    MASK_KINDS, encoder_suspects, layer_suspects, masks)


__all__ = [
    "test_layer_post_ln_matches_pytorch",
    "test_layer_pre_ln_matches_pytorch",
    "test_layer_activations",
    "test_layer_masks",
    "test_layer_batch_first",
    "test_layer_random_shapes",
    "test_encoder_layers_are_independent",
    "test_encoder_matches_pytorch",
    "test_encoder_masks_reach_every_layer",
    "test_encoder_without_final_norm",
    "test_layer_float64",
    "test_layer_norm_eps",
    "test_layer_gradients",
    "test_encoder_gradients",
    "test_dropout_only_in_training",
    "test_half_precision_on_cuda",
]
# ------------------------------------------------------------------- learner's modules


def load_twin_state(impl: Implementation, module: nn.Module, twin: nn.Module, what: str) -> None:
    """Load the twin's state dict into the learner's module, explaining any name or shape
    mismatch (the contract fixes PyTorch's submodule names)."""
    on = _("the state dict of {module}", module=type(twin).__name__)
    theirs = impl.call(module.state_dict, what=f"{what}.state_dict", on=on)
    ours = twin.state_dict()
    diff = StateDictDiff.of(theirs, ours)
    if diff:
        details = diff.lines()
        details.append(_("name the submodules like PyTorch's: self_attn (an "
                         "nn.MultiheadAttention), linear1, dropout, linear2, norm1, norm2, "
                         "dropout1, dropout2"))
        raise verdict(_("loading PyTorch's weights into {module}", module=what), on, details)
    impl.call(module.load_state_dict, ours, what=f"{what}.load_state_dict", on=on)


new_layer = partial(modules.new_layer, name="TransformerEncoderLayer")
layer_twin = partial(layers.layer_twin, twin=nn.TransformerEncoderLayer)


def build_layer(impl: Implementation, args: LayerArgs, twin: nn.Module) -> nn.Module:
    """The learner's layer with the twin's weights, in eval mode."""
    weight = twin.linear1.weight
    layer = new_layer(impl, args, weight.dtype, weight.device)
    load_twin_state(impl, layer, twin, "TransformerEncoderLayer")
    return layer.eval()


def run_layer(impl: Implementation, layer: nn.Module, src: Tensor, src_mask, key_padding_mask,
              on: str) -> Tensor:
    kwargs = {}
    if src_mask is not None:
        kwargs["src_mask"] = src_mask
    if key_padding_mask is not None:
        kwargs["src_key_padding_mask"] = key_padding_mask
    with quiet_mask_types():
        out = impl.call(layer, src, what="TransformerEncoderLayer.forward", on=on, **kwargs)
    return expect_tensor(out, "TransformerEncoderLayer.forward", on)


def pytorch_grads(expected: Tensor, src: Tensor, twin: nn.Module, seed: int) -> dict:
    return grads_of(weighted_sum([expected], seed=seed),
                    {"src": src, **dict(twin.named_parameters())})


# -------------------------------------------------------------------------- layer checks


def check_layer(impl: Implementation, args: LayerArgs, *, n: int = 5, b: int = 3,
                mask_kind: str = "none", seed: int = 0, dtype=torch.float32,
                device: str | torch.device = "cpu", check_grads: bool = False,
                weight_scale: float = 0.5, slack: float = 1.0) -> None:
    """The learner's layer against nn.TransformerEncoderLayer with the same weights."""
    twin = layer_twin(args, seed, dtype, device, weight_scale)
    layer = build_layer(impl, args, twin)
    base = sequence(args, n, b, seed + 1, dtype, device)
    src_mask, key_padding_mask, note = masks(mask_kind, b, n, seed + 2, dtype, device)
    (src,) = leaf_copies(base)
    on = describe_inputs(src=src, src_mask=src_mask, src_key_padding_mask=key_padding_mask)
    on += note + "; " + args.flags()
    out = run_layer(impl, layer, src, src_mask, key_padding_mask, on)

    (ref_src,) = leaf_copies(base)
    with quiet_mask_types():
        expected = twin(ref_src, src_mask=src_mask, src_key_padding_mask=key_padding_mask)
    state = {k: v.detach() for k, v in twin.state_dict().items()}
    suspects = layer_suspects(state, base, src_mask, key_padding_mask, args)
    suspects.append(differs_on_rerun(
        lambda: run_layer(impl, layer, base, src_mask, key_padding_mask, on)))
    expect_close(out, expected, _("the output"), on, suspects, slack=slack)
    if not check_grads:
        return
    check = _("backward through {module}", module="TransformerEncoderLayer")
    got = learner_grads(out, {"src": src, **matched_params(layer, twin)}, seed + 3, check, on)
    expect_grads_close(got, pytorch_grads(expected, ref_src, twin, seed + 3), check, on)


@title(N_("Post-LN layer against PyTorch"))
@pytest.mark.core
def test_layer_post_ln_matches_pytorch(impl):
    """Post-LN (the default), (seq, batch, d_model) inputs, relu; two widths."""
    check_layer(impl, LayerArgs(), seed=100)
    check_layer(impl, LayerArgs(d_model=12, nhead=3, dim_feedforward=20), n=4, b=2, seed=110)


@title(N_("Pre-LN layer against PyTorch"))
@pytest.mark.core
def test_layer_pre_ln_matches_pytorch(impl):
    """Pre-LN (norm_first=True): the residual adds the un-normalised input."""
    check_layer(impl, LayerArgs(norm_first=True), seed=200)
    check_layer(impl, LayerArgs(d_model=12, nhead=3, dim_feedforward=20, norm_first=True),
                n=4, b=2, seed=210)


@title(N_("the layer's activations"))
@pytest.mark.core
def test_layer_activations(impl):
    """activation="gelu", and callables (F.silu, a plain function) given to both modules."""
    for i, activation in enumerate(("gelu", F.silu, silu_like)):
        for norm_first in (False, True):
            check_layer(impl, LayerArgs(activation=activation, norm_first=norm_first),
                        seed=300 + 10 * i + norm_first)


@title(N_("the layer's masks"))
@pytest.mark.core
def test_layer_masks(impl):
    """src_mask (causal float, bool, random float) and src_key_padding_mask (b, n), alone
    and together."""
    for i, kind in enumerate(MASK_KINDS[1:]):
        for norm_first in (False, True):
            check_layer(impl, LayerArgs(norm_first=norm_first), mask_kind=kind,
                        seed=400 + 10 * i + norm_first)


@title(N_("the layer with batch_first=True"))
@pytest.mark.core
def test_layer_batch_first(impl):
    """batch_first=True: src is (batch, seq, d_model)."""
    for norm_first in (False, True):
        check_layer(impl, LayerArgs(batch_first=True, norm_first=norm_first),
                    mask_kind="causal+padding", seed=500 + norm_first)
        check_layer(impl, LayerArgs(batch_first=True, norm_first=norm_first, activation="gelu"),
                    mask_kind="bool", seed=510 + norm_first)


def layer_case(rng):
    nhead, head_dim = rng.randint(1, 3), rng.randint(2, 4)
    # d_model >= 4: a LayerNorm over 2 or 3 features is ill-conditioned near ties.
    head_dim = max(head_dim, -(-4 // nhead))
    args = LayerArgs(
        d_model=nhead * head_dim, nhead=nhead, dim_feedforward=rng.randint(1, 10),
        activation=rng.choice(["relu", "gelu", F.silu]),
        batch_first=rng.random() < 0.5, norm_first=rng.random() < 0.5,
    )
    n, b = rng.randint(1, 6), rng.randint(1, 3)
    return args, n, b, rng.choice(MASK_KINDS), rng.randint(0, 10_000)


@title(N_("the layer on random shapes"))
@pytest.mark.core
def test_layer_random_shapes(impl):
    """Random widths, heads, lengths, layouts, norm orders, activations and masks."""
    for args, n, b, mask_kind, seed in drawn_cases(layer_case):
        check_layer(impl, args, n=n, b=b, mask_kind=mask_kind, seed=seed)


@title(N_("the layer in float64"))
@pytest.mark.followup
def test_layer_float64(impl):
    """float64 in, float64 out, at float64 precision."""
    for norm_first in (False, True):
        check_layer(impl, LayerArgs(norm_first=norm_first, activation="gelu"),
                    mask_kind="causal+padding", dtype=torch.float64, seed=600 + norm_first)


@title(N_("the LayerNorms' eps"))
@pytest.mark.followup
def test_layer_norm_eps(impl):
    """layer_norm_eps reaches both norms (a large eps, so that it shows)."""
    for norm_first in (False, True):
        check_layer(impl, LayerArgs(norm_first=norm_first, layer_norm_eps=0.5),
                    seed=700 + norm_first)


@title(N_("the layer's gradients"))
@pytest.mark.followup
def test_layer_gradients(impl):
    """Gradients of src and of every weight and bias equal PyTorch's, Post-LN and Pre-LN."""
    for norm_first in (False, True):
        check_layer(impl, LayerArgs(norm_first=norm_first, activation="gelu"),
                    mask_kind="causal+padding", seed=800 + norm_first, check_grads=True)
    check_layer(impl, LayerArgs(batch_first=True, norm_first=True), mask_kind="bool",
                dtype=torch.float64, seed=810, check_grads=True)


# ------------------------------------------------------------------------ encoder checks


def encoder_twin(args: LayerArgs, num_layers: int, with_norm: bool, seed: int, dtype=torch.float32,
                 device: str | torch.device = "cpu", weight_scale: float = 0.5,
                 ) -> nn.TransformerEncoder:
    layer = nn.TransformerEncoderLayer(args.d_model, args.nhead, **args.kwargs(),
                                       dtype=dtype, device=device)
    norm = nn.LayerNorm(args.d_model, dtype=dtype, device=device) if with_norm else None
    twin = nn.TransformerEncoder(layer, num_layers, norm=norm, enable_nested_tensor=False)
    return randomize_(twin, seed, scale=weight_scale).eval()  # different weights per layer


def build_encoder(impl: Implementation, args: LayerArgs, num_layers: int, with_norm: bool,
                  dtype=torch.float32, device: str | torch.device = "cpu",
                  layer: nn.Module | None = None) -> tuple[nn.Module, str]:
    """The learner's encoder around ``layer`` (default: a new learner's layer; not yet
    loaded), and how it was built."""
    layer = layer if layer is not None else new_layer(impl, args, dtype, device)
    cls = impl.attr("TransformerEncoder")
    kwargs = {"norm": nn.LayerNorm(args.d_model, dtype=dtype, device=device)} if with_norm else {}
    what = (f"TransformerEncoder(<your layer>, {num_layers}"
            + (", norm=nn.LayerNorm(d_model))" if with_norm else ")"))
    encoder = impl.call(cls, layer, num_layers, **kwargs, what=what, on=_("construction"))
    return expect_module(encoder, what).to(device=device, dtype=dtype), what


def check_encoder(impl: Implementation, args: LayerArgs, *, num_layers: int = 3,
                  with_norm: bool = True, n: int = 5, b: int = 3, mask_kind: str = "none",
                  seed: int = 0, dtype=torch.float32, device: str | torch.device = "cpu",
                  check_grads: bool = False, weight_scale: float = 0.5, slack: float = 1.0) -> None:
    """The learner's encoder against nn.TransformerEncoder with the same weights."""
    twin = encoder_twin(args, num_layers, with_norm, seed, dtype, device, weight_scale)
    encoder, what = build_encoder(impl, args, num_layers, with_norm, dtype, device)
    load_twin_state(impl, encoder, twin, "TransformerEncoder")
    encoder.eval()
    base = sequence(args, n, b, seed + 1, dtype, device)
    mask, key_padding_mask, note = masks(mask_kind, b, n, seed + 2, dtype, device)
    (src,) = leaf_copies(base)
    on = describe_inputs(src=src, mask=mask, src_key_padding_mask=key_padding_mask)
    final = _("given") if with_norm else "None"
    on += note + "; " + _("{num_layers} layers, final norm {final}", num_layers=num_layers,
                          final=final) + f", {args.flags()}"
    kwargs = {}
    if mask is not None:
        kwargs["mask"] = mask
    if key_padding_mask is not None:
        kwargs["src_key_padding_mask"] = key_padding_mask

    def run(x: Tensor) -> Tensor:
        with quiet_mask_types():
            out = impl.call(encoder, x, what="TransformerEncoder.forward", on=on, **kwargs)
        return expect_tensor(out, "TransformerEncoder.forward", on)

    out = run(src)
    (ref_src,) = leaf_copies(base)
    with quiet_mask_types():
        expected = twin(ref_src, mask=mask, src_key_padding_mask=key_padding_mask)
    state = {k: v.detach() for k, v in twin.state_dict().items()}
    suspects = encoder_suspects(state, base, mask, key_padding_mask, args, num_layers)
    suspects.append(differs_on_rerun(lambda: run(base)))
    expect_close(out, expected, _("the output"), on, suspects, slack=slack)
    if not check_grads:
        return
    check = _("backward through {module}", module="TransformerEncoder")
    got = learner_grads(out, {"src": src, **matched_params(encoder, twin)}, seed + 3, check, on)
    expect_grads_close(got, pytorch_grads(expected, ref_src, twin, seed + 3), check, on)


@title(N_("the encoder against nn.TransformerEncoder"))
@pytest.mark.core
def test_encoder_matches_pytorch(impl):
    """3 layers with their own weights and a final norm, Pre-LN and Post-LN."""
    check_encoder(impl, LayerArgs(norm_first=True), seed=1100)
    check_encoder(impl, LayerArgs(norm_first=False, activation="gelu"), num_layers=2, seed=1110)


@title(N_("the encoder's layers are independent copies"))
@pytest.mark.core
def test_encoder_layers_are_independent(impl):
    """encoder.layers is an nn.ModuleList of independent deep copies, as in PyTorch: changing
    the weights of one layer, or of the layer passed in, leaves the others unchanged."""
    args, num_layers = LayerArgs(), 3
    prototype = new_layer(impl, args)
    encoder, what = build_encoder(impl, args, num_layers, with_norm=False, layer=prototype)
    on = _("{module} with {layer}", module=what, layer=args.call_text())
    layers = getattr(encoder, "layers", None)
    if not isinstance(layers, nn.ModuleList) or len(layers) != num_layers:
        raise verdict("TransformerEncoder.layers", on, [
            _("expected an nn.ModuleList of {count} layers, got {value}", count=num_layers,
              value=describe_value(layers))])
    before = [{k: v.detach().clone() for k, v in layer.state_dict().items()} for layer in layers]
    with torch.no_grad():
        for param in prototype.parameters():
            param.add_(1.0)
    for i in range(num_layers):
        for name, value in layers[i].state_dict().items():
            if name in before[i] and not torch.equal(value, before[i][name]):
                raise verdict(_("that the layers are independent of the layer passed in"), on, [
                    _("adding 1 to every weight of the layer passed in, after building the "
                      "encoder, also changed {parameter}", parameter=f"layers[{i}].{name}"),
                    _("the layer passed in is only a template: copy.deepcopy it for every layer")],
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


@title(N_("masks reach every layer"))
@pytest.mark.core
def test_encoder_masks_reach_every_layer(impl):
    """mask and src_key_padding_mask are given to every layer; both layouts."""
    check_encoder(impl, LayerArgs(norm_first=True), mask_kind="causal+padding", seed=1200)
    check_encoder(impl, LayerArgs(batch_first=True), mask_kind="bool+padding", seed=1210)
    check_encoder(impl, LayerArgs(batch_first=True, norm_first=True), mask_kind="padding",
                  seed=1220)


@title(N_("the encoder without a final norm"))
@pytest.mark.core
def test_encoder_without_final_norm(impl):
    """norm=None (the default): the last layer's output is the encoder's output."""
    check_encoder(impl, LayerArgs(norm_first=False), with_norm=False, mask_kind="causal", seed=1300)


@title(N_("the encoder's gradients"))
@pytest.mark.followup
def test_encoder_gradients(impl):
    """Gradients of src and of every layer's weights and the final norm equal PyTorch's."""
    check_encoder(impl, LayerArgs(norm_first=True, activation="gelu"), mask_kind="causal+padding",
                  seed=1400, check_grads=True)
    check_encoder(impl, LayerArgs(batch_first=True), num_layers=2, mask_kind="bool",
                  dtype=torch.float64, seed=1410, check_grads=True)


# ------------------------------------------------------------- dropout and half precision


@title(N_("dropout only in training mode"))
@pytest.mark.followup
def test_dropout_only_in_training(impl):
    """Eval mode is deterministic and dropout-free; training mode drops at random;
    training mode with dropout=0.0 is the eval output."""
    args = LayerArgs(dropout=0.5, norm_first=True)
    twin = layer_twin(args, seed=900)
    layer = build_layer(impl, args, twin)
    src = sequence(args, 5, 3, seed=901)
    on = describe_inputs(src=src) + "; " + args.flags() + ", dropout=0.5"
    first = run_layer(impl, layer, src, None, None, on + _(", eval mode"))
    second = run_layer(impl, layer, src, None, None, on + _(", eval mode"))
    rtol, atol = tolerance(src.dtype)
    if first.shape == second.shape and not torch.allclose(first, second, rtol=rtol, atol=atol):
        raise verdict(_("two calls in eval mode on the same input"), on, [
            _("they gave different outputs: something is random in eval mode")], "dropout-in-eval")
    state = {k: v.detach() for k, v in twin.state_dict().items()}
    expect_close(first, twin(src), _("the output in eval mode"), on,
                 layer_suspects(state, src, None, None, args))

    layer.train()
    train_on = on + _(", training mode")
    dropped = [run_layer(impl, layer, src, None, None, train_on) for _ in range(2)]
    if torch.allclose(dropped[0], dropped[1], rtol=rtol, atol=atol):
        raise verdict(_("two calls in training mode on the same input"), train_on, [
            _("they gave the same output: with dropout={p} they should differ", p=0.5),
            _("use the dropout submodules (dropout, dropout1, dropout2, and dropout in "
              "self_attn), which act while self.training is True")])

    args = replace(args, dropout=0.0)
    twin = layer_twin(args, seed=910)
    layer = build_layer(impl, args, twin).train()
    on = describe_inputs(src=src) + "; " + args.flags() + ", dropout=0.0" + _(", training mode")
    state = {k: v.detach() for k, v in twin.state_dict().items()}
    expect_close(run_layer(impl, layer, src, None, None, on), twin(src),
                 _("the output in training mode with dropout=0.0 (must equal eval mode)"), on,
                 layer_suspects(state, src, None, None, args))

    check_every_branch_dropped(impl, src)
    check_inner_dropouts(impl, src)


def without(twin: nn.Module, src: Tensor, names: dict[str, Any]) -> Callable[[], Tensor]:
    """What the twin gives in training mode with the submodules or attributes in ``names``
    replaced, e.g. {"dropout2": nn.Identity()}: a dropout never applied."""
    def predict() -> Tensor:
        leaky = copy.deepcopy(twin).train()
        for path, value in names.items():
            owner, _dot, name = path.rpartition(".")
            setattr(leaky.get_submodule(owner), name, value)
        with torch.no_grad():
            return leaky(src)
    return predict


def check_every_branch_dropped(impl: Implementation, src: Tensor) -> None:
    """Training mode with dropout = 1 - 1e-9 drops the output of both residual branches
    (dropout1, dropout2): the output is src with Pre-LN, norm2(norm1(src)) with Post-LN, what
    PyTorch's layer gives. A branch left undropped (dropout1 or dropout2 never applied)
    shows there, unlike at a moderate rate, and is named by the output it gives."""
    for norm_first in (True, False):
        args = LayerArgs(dropout=NEARLY_ONE, norm_first=norm_first)
        twin = layer_twin(args, seed=920 + norm_first)
        layer = build_layer(impl, args, twin).train()
        on = (describe_inputs(src=src) + "; " + args.flags()
              + _(", dropout=1 - 1e-9, training mode"))
        got = run_layer(impl, layer, src, None, None, on)
        with torch.no_grad():
            expected = src if norm_first else twin.norm2(twin.norm1(src))
        sa_leak = _("{dropout} is never applied: the output of {block} must go through it "
                    "before the residual sum", dropout="dropout1", block="self_attn")
        ff_leak = _("{dropout} is never applied: the output of {block} must go through it "
                    "before the residual sum", dropout="dropout2", block="linear2")
        identity = nn.Identity()
        expect_branches_dropped(
            got, expected, _("the output in training mode with dropout = 1 - 1e-9 (every "
                             "residual branch dropped)"), on,
            _("each block's output goes through its own dropout before the residual sum: "
              "dropout1 after self_attn, dropout2 after linear2 (and dropout between the "
              "activation and linear2)"),
            [(sa_leak, without(twin, src, {"dropout1": identity})),
             (sa_leak, without(twin, src, {"dropout1": identity, "self_attn.dropout": 0.0})),
             (ff_leak, without(twin, src, {"dropout2": identity})),
             (ff_leak, without(twin, src, {"dropout2": identity, "dropout": identity}))])


def check_inner_dropouts(impl: Implementation, src: Tensor) -> None:
    """The dropouts inside each block: on the attention weights in self_attn, and between the
    activation and linear2. Pre-LN in training mode with dropout=0.5 and the other block
    silenced through its weights (zero output projection), so the output is src plus one
    block's output after dropout1 or dropout2. With its inner dropout missing, every element
    of that difference is 0 or the eval-mode block output times 1 / (1 - p); with it, a kept
    element mixes kept and dropped inner values and matches neither."""
    p = 0.5
    args = LayerArgs(dropout=p, norm_first=True)
    blocks = (("linear2", "self_attn.out_proj",
               _("{dropout} is never applied: the activation's output must go through it "
                 "before {next}", dropout="dropout", next="linear2")),
              ("self_attn.out_proj", "linear2",
               _("the attention weights in self_attn are never dropped: build "
                 "nn.MultiheadAttention with dropout={p} (or, in your own attention, drop the "
                 "softmax weights before they weigh the values)", p="dropout")))
    for seed, (kept, silenced, missing) in enumerate(blocks, start=930):
        twin = layer_twin(args, seed=seed)
        with torch.no_grad():
            twin.get_submodule(silenced).weight.zero_()
            twin.get_submodule(silenced).bias.zero_()
            twin.get_submodule(kept).bias.zero_()  # so that a dropped element is exactly 0
        layer = build_layer(impl, args, twin).train()
        on = (describe_inputs(src=src) + "; " + args.flags() + ", dropout=0.5"
              + _(", training mode") + "; " + _("{name} zeroed", name=silenced))
        got = run_layer(impl, layer, src, None, None, on)
        with torch.no_grad():
            block_output = (twin._ff_block(twin.norm2(src)) if kept == "linear2"
                            else twin._sa_block(twin.norm1(src), None, None))
        undropped = block_output / (1 - p)
        if got.shape != src.shape:  # the earlier checks name a wrong shape
            continue
        delta = (got.detach() - src).double()
        rtol, atol = tolerance(src.dtype, MISTAKE_SLACK)
        nonzero = delta.abs() > atol
        as_undropped = torch.isclose(delta, undropped.double(), rtol=rtol, atol=atol)
        if bool(nonzero.any()) and bool((as_undropped | ~nonzero).all()):
            raise verdict(_("the output in training mode with dropout={p}", p=p), on, [
                _("each kept element of the block's output is exactly its eval-mode value "
                  "times 1 / (1 - p): nothing inside the block was dropped"), missing])


@title(N_("half precision on a CUDA GPU"))
@pytest.mark.followup
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_half_precision_on_cuda(impl):
    """float16 and bfloat16 on the GPU keep their dtype and device; the encoder too.

    Smaller weights and a little slack: a residual sum cancels large terms, so its rounding
    error follows the size of the terms, not of the result.
    """
    args = LayerArgs(d_model=16, nhead=4, dim_feedforward=32)
    for dtype in (torch.float16, torch.bfloat16):
        half = dict(dtype=dtype, device="cuda", weight_scale=0.25, slack=2.0)
        for norm_first in (False, True):
            check_layer(impl, replace(args, norm_first=norm_first), n=7, mask_kind="causal+padding",
                        seed=1000 + norm_first, **half)
        check_encoder(impl, replace(args, norm_first=True), mask_kind="causal+padding", seed=1010,
                      **half)
