"""Kata 08's reference: the decoder layer and decoder computed from a state dict with one switch
per catalogued mistake (:func:`layer_reference`, :func:`decoder_reference`), the suspects
they yield, the inputs the checks draw, and the reading of nn.MultiheadAttention's shape
errors (:func:`slug_for_shape_error`). See :mod:`graders.decoder_layer.checks` for how the
inputs make each mistake show.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graders.core.i18n import _
from graders.core.inputs import bool_mask, float_mask
from graders.core.mistakes import Suspect
from graders.twins.reference import attend
from graders.core.report import describe_inputs
from graders.twins.layers import feed_forward as layer_feed_forward
from graders.twins.layers import (ACTIVATIONS, LayerArgs as EncoderLayerArgs, causal, merged_mask,
                                  sequence)


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
        return layer_feed_forward(x, weight, activation, activation_at)

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


def lengths(inputs: Inputs, args: LayerArgs) -> tuple[int, int]:
    axis = 1 if args.batch_first else 0
    return inputs.tgt.shape[axis], inputs.memory.shape[axis]
