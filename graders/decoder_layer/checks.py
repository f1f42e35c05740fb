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

import re
from dataclasses import dataclass, replace
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graders.core.i18n import N_, _
from graders.core.compare import (
    MISTAKE_SLACK,
    NEARLY_ONE,
    StateDictDiff,
    expect_branches_dropped,
    expect_close,
    expect_grads_close,
    expect_tensor,
    tolerance,
)
from graders.core.implementation import Implementation
from graders.core.inputs import (
    bool_mask,
    drawn_cases,
    float_mask,
    grads_of,
    leaf_copies,
    randn,
    randomize_,
    weighted_sum,
)
from graders.core.mistakes import Suspect, identify
from graders.twins.reference import additive_mask, attend
from graders.core.report import (
    GradingFailure,
    describe_inputs,
    describe_value,
    mistake_lines,
    title,
    verdict,
)
from graders.twins.layers import (ACTIVATIONS, LayerArgs as EncoderLayerArgs, causal,
                                 differs_on_rerun, expect_module, learner_grads, matched_params,
                                 merged_mask, quiet_mask_types, silu_like)

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

MASK_NAMES = ("tgt_mask", "memory_mask", "tgt_key_padding_mask", "memory_key_padding_mask")
SUBLAYERS = ("sa", "ca", "ff")  # self-attention, cross-attention, feed-forward


@dataclass(frozen=True)
class LayerArgs(EncoderLayerArgs):
    """The constructor arguments of one decoder layer (PyTorch's and the learner's); the
    same as kata 06's encoder layer."""

    def call_text(self) -> str:
        return super().call_text().replace("TransformerEncoderLayer", "TransformerDecoderLayer")


@dataclass(frozen=True)
class Inputs:
    """tgt (n, b, d) and memory (m, b, d), or batch first, and the four masks (or None)."""

    tgt: Tensor
    memory: Tensor
    masks: dict[str, Tensor | None]
    note: str = ""

    @property
    def given(self) -> dict[str, Tensor]:
        return {k: v for k, v in self.masks.items() if v is not None}


# ------------------------------------------------------------------ exceptions -> slugs

@dataclass(frozen=True)
class CallShapes:
    """The lengths of the call being graded, so that a shape error can be read: which
    attention raised it (its query and key lengths) and about which mask."""

    n: int
    m: int
    readable: bool  # a length that equals the batch size or the width could be misread
    cross: frozenset[int]  # id() of the cross-attention modules
    self: frozenset[int]  # id() of the self-attention modules


def call_shapes(module: nn.Module, inputs: Inputs, args: LayerArgs) -> CallShapes:
    n, m = lengths(inputs, args)
    b = inputs.tgt.shape[0 if args.batch_first else 1]
    return CallShapes(
        n=n, m=m, readable=n != m and not {b, args.d_model} & {n, m},
        cross=frozenset(id(sub) for name, sub in module.named_modules()
                        if name.rsplit(".", 1)[-1] == "multihead_attn"),
        self=frozenset(id(sub) for name, sub in module.named_modules()
                       if name.rsplit(".", 1)[-1] == "self_attn"))


def _attention_frame(exc: BaseException) -> dict[str, Any] | None:
    """The locals of the innermost nn.MultiheadAttention.forward the exception went through."""
    code = nn.MultiheadAttention.forward.__code__
    found, tb = None, exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code is code:
            found = tb.tb_frame.f_locals
        tb = tb.tb_next
    return found


# nn.MultiheadAttention's messages for a mask that does not fit (torch 2.x).
_MASK_SHAPE = re.compile(r"shape of the 2D attn_mask is torch\.Size\(\[(\d+), (\d+)\]\)")
_PADDING_LENGTH = re.compile(r"key_padd\w*_mask\.shape\[1\] to be \d+, but got (\d+)")
_BROADCAST = re.compile(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\) "
                        r"at non-singleton dimension (\d+)")


def slug_for_shape_error(exc: BaseException, call: CallShapes) -> str | None:
    """With target length n != memory length m (``call``), several mix-ups raise:

    - nn.MultiheadAttention called with queries of the memory's length, or the residual sum
      of the target and an attention output of the memory's length (failing on axis 0 or
      1, the sequence axis of either layout):
      ``cross-attention-query-from-memory``;
    - an attention with target queries refusing a mask of the other sequence's size:
      ``tgt-mask-in-cross-attention`` (attn_mask) or ``padding-masks-swapped``
      (key_padding_mask); when the module that raised is multihead_attn and its keys have
      the target's length, ``cross-attention-missing`` (keys and values from the target).
    """
    if not call.readable:
        return None
    n, m = call.n, call.m
    message = str(exc)
    frame = _attention_frame(exc)
    if frame is not None:
        query, key, module = frame.get("query"), frame.get("key"), frame.get("self")
        if not (isinstance(query, Tensor) and isinstance(key, Tensor) and query.dim() == 3
                and key.dim() == 3):
            return None
        axis = 1 if getattr(module, "batch_first", False) else 0
        q_len, k_len = query.shape[axis], key.shape[axis]
        if q_len == m:
            return "cross-attention-query-from-memory"
        if q_len != n or k_len not in (n, m):
            return None
        other = n if k_len == m else m  # the length of the other sequence's keys
        mask = _MASK_SHAPE.search(message)
        padding = _PADDING_LENGTH.search(message)
        if mask and tuple(int(g) for g in mask.groups()) == (n, other):
            slug = "tgt-mask-in-cross-attention"
        elif padding and int(padding.group(1)) == other:
            slug = "padding-masks-swapped"
        else:
            return None
        if k_len == n and id(module) in call.cross and id(module) not in call.self:
            return "cross-attention-missing"  # the right masks, but keys from the target
        return slug
    match = _BROADCAST.search(message)
    if isinstance(exc, RuntimeError) and match:
        a, b, dim = (int(g) for g in match.groups())
        # The sequence axis of (n, b, d) or (b, n, d): the learner may have moved to either.
        if {a, b} == {n, m} and dim in (0, 1):
            return "cross-attention-query-from-memory"
    return None


# --------------------------------------------------------------------------- references


def layer_reference(
    state: dict[str, Tensor],
    inputs: Inputs,
    args: LayerArgs,
    *,
    tgt: Tensor | None = None,
    prefix: str = "",
    norm_at: tuple[str, str, str] | None = None,  # per sublayer: "pre" | "post" | "sublayer"
    drop_residual: tuple[str, ...] = (),  # sublayers ("sa", "ca", "ff") without a residual
    residual_from_normed: tuple[str, ...] = (),  # Pre-LN sublayers adding norm(x), not x
    activation_at: str = "between",  # "between" | "after" | "before" | "twice" | "none"
    self_masks: tuple[str | None, str | None] = ("tgt_mask", "tgt_key_padding_mask"),
    cross_masks: tuple[str | None, str | None] = ("memory_mask", "memory_key_padding_mask"),
    cross_query: str = "tgt",  # "tgt" | "memory": where the cross-attention's queries come from
    cross_keys: str = "memory",  # "memory" | "tgt" | "skip" (no cross-attention at all)
    attention_weights: tuple[str, str] = ("self_attn", "multihead_attn"),
    zero_blocked_rows: bool = True,
    norms: tuple[int, int, int] = (1, 2, 3),  # the norm each sublayer uses (norm1 ... norm3)
    skipped_norm: bool = False,  # cross_keys "skip" with its Post-LN norm kept: x = norm2(x)
) -> Tensor:
    """One decoder layer in eval mode as a function of PyTorch's state dict, with switches
    for the catalogued mistakes.

    inputs.tgt (n, b, d) or (b, n, d) with batch_first (``tgt`` overrides it: the previous
    layer's output), inputs.memory (m, b, d) likewise; masks: tgt_mask (n, n) and
    memory_mask (n, m) bool or float, key padding masks bool (b, n) and (b, m). The switches
    ``self_masks``/``cross_masks`` name which of the four masks each attention gets.
    Returns a tensor shaped like tgt.
    """
    d, h = args.d_model, args.nhead
    norm_at = norm_at or (("pre",) * 3 if args.norm_first else ("post",) * 3)
    activation = ACTIVATIONS.get(args.activation, args.activation)

    def weight(name: str) -> Tensor:
        return state[prefix + name]

    def to_bnd(t: Tensor) -> Tensor:  # (len, b, d) -> (b, len, d) unless batch first
        return t if args.batch_first else t.transpose(0, 1)

    def norm(i: int, x: Tensor) -> Tensor:
        return F.layer_norm(x, (d,), weight(f"norm{i}.weight"), weight(f"norm{i}.bias"),
                            args.layer_norm_eps)

    def attention(module: str, query: Tensor, keys: Tensor, which: tuple) -> Tensor:
        """(b, n, d) queries, (b, m, d) keys and values -> (b, n, d)."""
        w = weight(f"{module}.in_proj_weight").chunk(3)
        bias = weight(f"{module}.in_proj_bias").chunk(3)
        q, k, v = (F.linear(x, w_i, b_i).unflatten(-1, (h, d // h)).transpose(1, 2)
                   for x, w_i, b_i in zip((query, keys, keys), w, bias))
        attn_mask, padding = (inputs.masks.get(name) if name else None for name in which)
        mask = merged_mask(attn_mask, padding, q.dtype)
        attended, _ = attend(q, k, v, mask, zero_blocked_rows=zero_blocked_rows)
        return F.linear(attended.transpose(1, 2).flatten(2), weight(f"{module}.out_proj.weight"),
                        weight(f"{module}.out_proj.bias"))

    memory = to_bnd(inputs.memory)

    def self_attention(x: Tensor) -> Tensor:
        return attention(attention_weights[0], x, x, self_masks)

    def cross_attention(x: Tensor) -> Tensor:
        query = memory if cross_query == "memory" else x
        keys = x if cross_keys == "tgt" else memory
        return attention(attention_weights[1], query, keys, cross_masks)

    def feed_forward(x: Tensor) -> Tensor:
        if activation_at == "before":
            x = activation(x)
        hidden = F.linear(x, weight("linear1.weight"), weight("linear1.bias"))
        if activation_at in ("between", "twice"):
            hidden = activation(hidden)
        out = F.linear(hidden, weight("linear2.weight"), weight("linear2.bias"))
        if activation_at in ("after", "twice"):
            out = activation(out)
        return out

    x = to_bnd(inputs.tgt if tgt is None else tgt)
    blocks = (("sa", self_attention), ("ca", cross_attention), ("ff", feed_forward))
    for i, (name, sublayer) in enumerate(blocks, start=1):
        if name == "ca" and cross_keys == "skip":
            if skipped_norm and norm_at[i - 1] == "post":
                x = norm(norms[i - 1], x)
            continue
        residual = name not in drop_residual
        where = norm_at[i - 1]
        i = norms[i - 1]
        if where == "post":
            x = norm(i, x + sublayer(x) if residual else sublayer(x))
        elif where == "pre":
            normed = norm(i, x)
            base = normed if name in residual_from_normed else x
            x = base + sublayer(normed) if residual else sublayer(normed)
        else:  # "sublayer": x + norm(f(x)), the norm squeezed between sublayer and residual
            x = x + norm(i, sublayer(x)) if residual else norm(i, sublayer(x))
    return to_bnd(x)


def layer_mistakes(args: LayerArgs, inputs: Inputs) -> list[tuple[str, dict[str, Any]]]:
    """(slug, switches of :func:`layer_reference`) for every way we know to make each
    catalogued mistake in a layer built with ``args`` on ``inputs``."""
    right, wrong = ("pre", "post") if args.norm_first else ("post", "pre")
    orders = [(wrong,) * 3, ("sublayer",) * 3]
    orders += [tuple(wrong if j == i else right for j in range(3)) for i in range(3)]
    mistakes: list[tuple[str, dict[str, Any]]] = [
        ("norm-order-swapped", {"norm_at": order}) for order in orders]
    for which in (("sa",), ("ca",), ("ff",), ("sa", "ca"), ("sa", "ff"), ("ca", "ff"), SUBLAYERS):
        mistakes.append(("missing-residual", {"drop_residual": which}))
    if args.norm_first:
        for which in (SUBLAYERS, ("sa",), ("ca",), ("ff",)):
            mistakes.append(("residual-from-normed", {"residual_from_normed": which}))
    for where in ("after", "none", "before", "twice"):
        mistakes.append(("activation-misplaced", {"activation_at": where}))

    # The cross-attention: queries from memory, keys and values from the target, or absent.
    for query_from in ("memory_and_tgt", "memory_only"):
        mistakes.append(("cross-attention-query-from-memory", {
            "cross_query": "memory", "cross_keys": "tgt" if query_from == "memory_and_tgt"
            else "memory"}))
    mistakes.append(("cross-attention-missing", {"cross_keys": "skip"}))
    if not args.norm_first:  # the attention line deleted, norm2 kept
        mistakes.append(("cross-attention-missing", {"cross_keys": "skip",
                                                      "skipped_norm": True}))
    # A list of (norm, sublayer) blocks without the cross-attention's, its norms numbered
    # in order: the feed-forward block gets norm2 (norm3 unused).
    mistakes.append(("cross-attention-missing", {"cross_keys": "skip", "norms": (1, 2, 2)}))
    mistakes.append(("cross-attention-missing", {"cross_keys": "tgt"}))
    mistakes.append(("cross-attention-missing", {
        "cross_keys": "tgt", "cross_masks": ("tgt_mask", "tgt_key_padding_mask")}))
    # One attention module for both (the weights loaded last win).
    for module in ("self_attn", "multihead_attn"):
        mistakes.append(("shared-attention-weights", {"attention_weights": (module, module)}))

    given = inputs.given
    if "tgt_mask" in given or "memory_mask" in given:
        mistakes += [
            ("tgt-mask-in-cross-attention",
             {"cross_masks": ("tgt_mask", "memory_key_padding_mask")}),
            ("tgt-mask-in-cross-attention", {
                "self_masks": ("memory_mask", "tgt_key_padding_mask"),
                "cross_masks": ("tgt_mask", "memory_key_padding_mask")}),
            ("tgt-mask-in-cross-attention",
             {"self_masks": ("memory_mask", "tgt_key_padding_mask")}),
        ]
    if "tgt_key_padding_mask" in given or "memory_key_padding_mask" in given:
        mistakes += [
            ("padding-masks-swapped", {"self_masks": ("tgt_mask", "memory_key_padding_mask"),
                                       "cross_masks": ("memory_mask", "tgt_key_padding_mask")}),
            ("padding-masks-swapped", {"self_masks": ("tgt_mask", "memory_key_padding_mask")}),
            ("padding-masks-swapped", {"cross_masks": ("memory_mask", "tgt_key_padding_mask")}),
        ]
    # A mask left out (one, or all of them).
    for name in given:
        self_masks = tuple(None if k == name else k for k in ("tgt_mask", "tgt_key_padding_mask"))
        cross_masks = tuple(None if k == name else k
                            for k in ("memory_mask", "memory_key_padding_mask"))
        mistakes.append(("mask-not-forwarded", {"self_masks": self_masks,
                                                "cross_masks": cross_masks}))
    if len(given) > 1:
        mistakes.append(("mask-not-forwarded", {"self_masks": (None, None),
                                                "cross_masks": (None, None)}))
    return mistakes


def layer_suspects(state, inputs: Inputs, args: LayerArgs) -> list[Suspect]:
    def variant(switches: dict[str, Any]) -> Suspect:
        return lambda: layer_reference(state, inputs, args, **switches)

    return [Suspect(slug, predict=variant(switches))
            for slug, switches in layer_mistakes(args, inputs)]


def decoder_reference(
    state: dict[str, Tensor],
    inputs: Inputs,
    args: LayerArgs,
    num_layers: int,
    *,
    layer_switches: dict[str, Any] | None = None,
    weights_of: str = "own",  # "own" | "first" | "last": which layer's weights each uses
    masks_to: str = "all",  # "all" | "first": the layers that get the masks
    final_norm: bool = True,
) -> Tensor:
    """The decoder as a function of PyTorch's state dict: num_layers layers, each given the
    same memory, then the final norm when the state dict has one."""
    x = inputs.tgt
    no_masks = replace(inputs, masks={})
    for i in range(num_layers):
        j = {"own": i, "first": 0, "last": num_layers - 1}[weights_of]
        given = inputs if masks_to == "all" or i == 0 else no_masks
        x = layer_reference(state, given, args, tgt=x, prefix=f"layers.{j}.",
                            **(layer_switches or {}))
    if final_norm and "norm.weight" in state:
        x = F.layer_norm(x, (args.d_model,), state["norm.weight"], state["norm.bias"])
    return x


def decoder_suspects(state, inputs: Inputs, args: LayerArgs, num_layers: int) -> list[Suspect]:
    """The decoder's own mistakes first, then every layer mistake made in every layer."""

    def variant(slug: str, **switches) -> Suspect:
        return Suspect(slug, predict=lambda: decoder_reference(
            state, inputs, args, num_layers, **switches))

    suspects = [variant("final-norm-missing", final_norm=False),
                # Shared modules loaded from a per-layer state dict keep the last layer's weights.
                variant("shared-layer-weights", weights_of="last"),
                variant("shared-layer-weights", weights_of="first")]
    if inputs.given:
        suspects.append(variant("mask-not-forwarded", masks_to="first"))
    suspects += [variant(slug, layer_switches=switches)
                 for slug, switches in layer_mistakes(args, inputs)]
    return suspects


# ------------------------------------------------------------------------------- inputs


def sequence(args: LayerArgs, length: int, b: int, seed: int, dtype=torch.float32,
             device: str | torch.device = "cpu") -> Tensor:
    """(length, b, d), or (b, length, d) with batch_first."""
    shape = (b, length, args.d_model) if args.batch_first else (length, b, args.d_model)
    return randn(*shape, seed=seed, dtype=dtype, device=device)


def holes(b: int, length: int, seed: int, device: str | torch.device = "cpu") -> Tensor:
    """Bool (b, length), True at padded positions: holes anywhere but position 0 (so no
    query is left without a key, even under a causal mask), different per batch element."""
    mask = bool_mask(b, length, seed=seed, device=device)
    mask[:, 0] = False
    if b > 1 and length > 1 and bool((mask == mask[0]).all()):
        mask[0, -1] = ~mask[0, -1]
    return mask


# The masks a case can have: tgt_mask (causal float or bool, random bool, random float),
# memory_mask (random bool or float) and the two key padding masks (holes).
TGT_MASKS = ("causal", "causal-bool", "bool", "float")
MEMORY_MASKS = ("bool", "float")


@dataclass(frozen=True)
class MaskSpec:
    tgt: str | None = None  # one of TGT_MASKS
    memory: str | None = None  # one of MEMORY_MASKS
    tgt_padding: bool = False
    memory_padding: bool = False


NO_MASKS = MaskSpec()
ALL_MASKS = MaskSpec("causal", "bool", True, True)


def make_inputs(args: LayerArgs, n: int, m: int, b: int, spec: MaskSpec, seed: int,
                dtype=torch.float32, device: str | torch.device = "cpu") -> Inputs:
    """tgt, memory and the masks of ``spec``; never a fully masked row (key 0 is never
    blocked by a bool mask or padding, and a float mask never blocks a whole row)."""
    masks: dict[str, Tensor | None] = dict.fromkeys(MASK_NAMES)
    notes = []
    if spec.tgt in ("causal", "causal-bool"):
        mask = causal(n, dtype, device)
        masks["tgt_mask"] = mask if spec.tgt == "causal" else torch.isinf(mask)
        notes.append(_("causal tgt_mask ({dtype})",
                       dtype="float" if spec.tgt == "causal" else "bool"))
    elif spec.tgt is not None:
        masks["tgt_mask"] = attn_mask(spec.tgt, n, n, seed + 10, dtype, device)
        notes.append(_("random {kind} tgt_mask", kind=spec.tgt))
    if spec.memory is not None:
        masks["memory_mask"] = attn_mask(spec.memory, n, m, seed + 11, dtype, device)
        notes.append(_("random {kind} memory_mask", kind=spec.memory))
    if spec.tgt_padding:
        masks["tgt_key_padding_mask"] = holes(b, n, seed + 12, device)
    if spec.memory_padding:
        masks["memory_key_padding_mask"] = holes(b, m, seed + 13, device)
    if spec.tgt_padding or spec.memory_padding:
        notes.append(_("padding with holes, different per batch element"))
    return Inputs(sequence(args, n, b, seed + 1, dtype, device),
                  sequence(args, m, b, seed + 2, dtype, device), masks,
                  "; " + _(", ").join(notes) if notes else "")


def attn_mask(kind: str, n: int, m: int, seed: int, dtype, device) -> Tensor:
    """A random (n, m) mask: bool (True = blocked) or float, key 0 never blocked."""
    if kind == "bool":
        mask = bool_mask(n, m, seed=seed, device=device)
        mask[:, 0] = False
        return mask
    mask = float_mask(n, m, seed=seed, dtype=dtype, device=device)
    return torch.cat([mask[:, :1].nan_to_num(neginf=0.0), mask[:, 1:]], dim=1)


def describe(inputs: Inputs, args: LayerArgs, extra: str = "") -> str:
    on = describe_inputs(tgt=inputs.tgt, memory=inputs.memory, **inputs.given)
    return on + inputs.note + extra + "; " + args.flags()


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


def new_layer(impl: Implementation, args: LayerArgs, dtype=torch.float32,
              device: str | torch.device = "cpu") -> nn.Module:
    """The learner's layer, built with ``args``, in ``dtype`` on ``device``."""
    cls = impl.attr("TransformerDecoderLayer")
    layer = impl.call(cls, args.d_model, args.nhead, **args.kwargs(),
                      what=args.call_text(), on=_("construction"))
    return expect_module(layer, args.call_text()).to(device=device, dtype=dtype)


def layer_twin(args: LayerArgs, seed: int, dtype=torch.float32,
               device: str | torch.device = "cpu", weight_scale: float = 0.5,
               ) -> nn.TransformerDecoderLayer:
    twin = nn.TransformerDecoderLayer(args.d_model, args.nhead, **args.kwargs(),
                                      dtype=dtype, device=device)
    return randomize_(twin, seed, scale=weight_scale).eval()


def build_layer(impl: Implementation, args: LayerArgs, twin: nn.Module,
                probe: Inputs | None = None) -> nn.Module:
    """The learner's layer with the twin's weights, in eval mode."""
    weight = twin.linear1.weight
    layer = new_layer(impl, args, weight.dtype, weight.device)
    load_twin_state(impl, layer, twin, "TransformerDecoderLayer", probe)
    return layer.eval()


def lengths(inputs: Inputs, args: LayerArgs) -> tuple[int, int]:
    axis = 1 if args.batch_first else 0
    return inputs.tgt.shape[axis], inputs.memory.shape[axis]


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
