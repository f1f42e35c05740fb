"""Kata 06's reference: the encoder layer and encoder computed from a state dict with one switch
per catalogued mistake (:func:`layer_reference`, :func:`encoder_reference`), the suspects
they yield, and the inputs the checks draw (sequences, padding with holes, masks).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from graders.core.i18n import _
from graders.twins.reference import attend
from graders.core.inputs import bool_mask, float_mask, generator
from graders.core.mistakes import Suspect
from graders.twins.layers import ACTIVATIONS, LayerArgs, merged_mask, causal
from graders.twins.layers import feed_forward as layer_feed_forward


# --------------------------------------------------------------------------- references


def layer_reference(
    state: dict[str, Tensor],
    src: Tensor,
    src_mask: Tensor | None,
    key_padding_mask: Tensor | None,
    args: LayerArgs,
    *,
    prefix: str = "",
    norm_at: tuple[str, str] | None = None,  # per sublayer: "pre" | "post" | "sublayer"
    drop_residual: tuple[str, ...] = (),  # sublayers ("sa", "ff") without a residual
    residual_from_normed: tuple[str, ...] = (),  # Pre-LN sublayers adding norm(x), not x
    activation_at: str = "between",  # "between" | "after" | "before" | "twice" | "none"
    forward_src_mask: bool = True,
    forward_padding_mask: bool = True,
) -> Tensor:
    """One encoder layer in eval mode as a function of PyTorch's state dict, with switches
    for the catalogued mistakes.

    src (n, b, d) or (b, n, d) with batch_first; src_mask (n, n) bool or float;
    key_padding_mask bool (b, n). Returns a tensor shaped like src.
    """
    d, h = args.d_model, args.nhead
    norm_at = norm_at or (("pre", "pre") if args.norm_first else ("post", "post"))
    activation = ACTIVATIONS.get(args.activation, args.activation)

    def weight(name: str) -> Tensor:
        return state[prefix + name]

    def norm(i: int, x: Tensor) -> Tensor:
        return F.layer_norm(x, (d,), weight(f"norm{i}.weight"), weight(f"norm{i}.bias"),
                            args.layer_norm_eps)

    x = src if args.batch_first else src.transpose(0, 1)  # (b, n, d)
    mask = merged_mask(src_mask if forward_src_mask else None,
                       key_padding_mask if forward_padding_mask else None, x.dtype)

    def self_attention(x: Tensor) -> Tensor:
        qkv = F.linear(x, weight("self_attn.in_proj_weight"), weight("self_attn.in_proj_bias"))
        # (b, n, d) -> (b, h, n, d / h) for each of q, k, v
        q, k, v = (t.unflatten(-1, (h, d // h)).transpose(1, 2) for t in qkv.chunk(3, dim=-1))
        attended, _ = attend(q, k, v, mask)
        return F.linear(attended.transpose(1, 2).flatten(2),
                        weight("self_attn.out_proj.weight"), weight("self_attn.out_proj.bias"))

    def feed_forward(x: Tensor) -> Tensor:
        return layer_feed_forward(x, weight, activation, activation_at)

    for name, i, sublayer in (("sa", 1, self_attention), ("ff", 2, feed_forward)):
        residual = name not in drop_residual
        if norm_at[i - 1] == "post":
            x = norm(i, x + sublayer(x) if residual else sublayer(x))
        elif norm_at[i - 1] == "pre":
            normed = norm(i, x)
            base = normed if name in residual_from_normed else x
            x = base + sublayer(normed) if residual else sublayer(normed)
        else:  # "sublayer": x + norm(f(x)), the norm squeezed between sublayer and residual
            x = x + norm(i, sublayer(x)) if residual else norm(i, sublayer(x))
    return x if args.batch_first else x.transpose(0, 1)


def layer_mistakes(args: LayerArgs, masked: bool) -> list[tuple[str, dict[str, Any]]]:
    """(slug, switches of :func:`layer_reference`) for every way we know to make each
    catalogued mistake in a layer built with ``args``."""
    right, wrong = ("pre", "post") if args.norm_first else ("post", "pre")
    # Both sublayers in the other order, or only one of them.
    mistakes: list[tuple[str, dict[str, Any]]] = [
        ("norm-order-swapped", {"norm_at": norm_at})
        for norm_at in ((wrong, wrong), (wrong, right), (right, wrong))
    ]
    # The norm between sublayer and residual, x + norm(f(x)), in both sublayers or in one.
    mistakes += [("norm-inside-residual", {"norm_at": norm_at})
                 for norm_at in (("sublayer", "sublayer"), ("sublayer", right), (right, "sublayer"))]
    for which in (("sa",), ("ff",), ("sa", "ff")):
        mistakes.append(("missing-residual", {"drop_residual": which}))
    if args.norm_first:
        for which in (("sa", "ff"), ("sa",), ("ff",)):
            mistakes.append(("residual-from-normed", {"residual_from_normed": which}))
    for where in ("after", "none", "before", "twice"):
        mistakes.append(("activation-misplaced", {"activation_at": where}))
    if masked:
        mistakes += [
            ("mask-not-forwarded", {"forward_src_mask": False}),
            ("mask-not-forwarded", {"forward_padding_mask": False}),
            ("mask-not-forwarded", {"forward_src_mask": False, "forward_padding_mask": False}),
        ]
    return mistakes


def layer_suspects(state, src, src_mask, key_padding_mask, args: LayerArgs) -> list[Suspect]:
    masked = src_mask is not None or key_padding_mask is not None

    def variant(slug: str, switches: dict[str, Any]) -> Suspect:
        return Suspect(slug, predict=lambda: layer_reference(
            state, src, src_mask, key_padding_mask, args, **switches))

    return [variant(slug, switches) for slug, switches in layer_mistakes(args, masked)]


def encoder_reference(
    state: dict[str, Tensor],
    src: Tensor,
    mask: Tensor | None,
    key_padding_mask: Tensor | None,
    args: LayerArgs,
    num_layers: int,
    *,
    layer_switches: dict[str, Any] | None = None,
    weights_of: str = "own",  # "own" | "first" | "last": which layer's weights each uses
    masks_to: str = "all",  # "all" | "first": the layers that get the masks
    forward_mask: bool = True,
    forward_padding_mask: bool = True,
    final_norm: bool = True,
) -> Tensor:
    """The encoder as a function of PyTorch's state dict: num_layers layers, then the final
    norm when the state dict has one. Switches reproduce the catalogued mistakes."""
    x = src
    for i in range(num_layers):
        j = {"own": i, "first": 0, "last": num_layers - 1}[weights_of]
        gets_masks = masks_to == "all" or i == 0
        x = layer_reference(
            state, x,
            mask if forward_mask and gets_masks else None,
            key_padding_mask if forward_padding_mask and gets_masks else None,
            args, prefix=f"layers.{j}.", **(layer_switches or {}),
        )
    if final_norm and "norm.weight" in state:
        x = F.layer_norm(x, (args.d_model,), state["norm.weight"], state["norm.bias"])
    return x


def encoder_suspects(state, src, mask, key_padding_mask, args: LayerArgs,
                     num_layers: int) -> list[Suspect]:
    """The encoder's own mistakes first, then every layer mistake made in every layer."""
    masked = mask is not None or key_padding_mask is not None

    def variant(slug: str, **switches) -> Suspect:
        return Suspect(slug, predict=lambda: encoder_reference(
            state, src, mask, key_padding_mask, args, num_layers, **switches))

    suspects = [variant("final-norm-missing", final_norm=False)]
    # Shared modules loaded from a per-layer state dict keep the last layer's weights.
    suspects += [variant("shared-layer-weights", weights_of="last"),
                 variant("shared-layer-weights", weights_of="first")]
    if masked:
        suspects += [variant("mask-not-forwarded", forward_mask=False),
                     variant("mask-not-forwarded", forward_padding_mask=False),
                     variant("mask-not-forwarded", forward_mask=False, forward_padding_mask=False),
                     variant("mask-not-forwarded", masks_to="first")]
    suspects += [variant(slug, layer_switches=switches)
                 for slug, switches in layer_mistakes(args, masked)]
    return suspects


# ------------------------------------------------------------------------------- inputs


def padding(b: int, n: int, seed: int, device: str | torch.device = "cpu") -> Tensor:
    """Bool (b, n), True at padded positions: sequences of different lengths, each at least
    1 long, so key 0 is never padded."""
    lengths = torch.randint(1, n + 1, (b,), generator=generator(seed))
    if b > 1 and n > 1 and bool((lengths == lengths[0]).all()):
        lengths[0] = n if lengths[0] < n else n - 1
    return (torch.arange(n)[None, :] >= lengths[:, None]).to(device)


MASK_KINDS = ("none", "causal", "bool", "float", "padding", "causal+padding", "bool+padding")


def masks(kind: str, b: int, n: int, seed: int, dtype=torch.float32,
          device: str | torch.device = "cpu") -> tuple[Tensor | None, Tensor | None, str]:
    """(src_mask, src_key_padding_mask, a note for the verdict) of one kind.

    Never a fully masked row: the bool src_mask always allows key 0 and padding never
    covers key 0 when the two are combined; a float mask or a padding mask alone may block
    any key but never a whole row or sequence.
    """
    src_mask = key_padding_mask = None
    notes = []
    if kind.startswith("causal"):
        src_mask = causal(n, dtype, device)
        notes.append(_("causal attention mask"))
    elif kind.startswith("bool"):
        src_mask = bool_mask(n, n, seed=seed, device=device)
        src_mask[:, 0] = False
        notes.append(_("bool attention mask (True = blocked)"))
    elif kind == "float":
        src_mask = float_mask(n, n, seed=seed, dtype=dtype, device=device)
        notes.append(_("float attention mask (random values and some -inf)"))
    if kind == "padding":
        key_padding_mask = bool_mask(b, n, seed=seed + 1, device=device)
        notes.append(_("a different padding mask per batch element"))
    elif kind.endswith("+padding"):
        key_padding_mask = padding(b, n, seed=seed + 1, device=device)
        notes.append(_("sequences padded to different lengths"))
    return src_mask, key_padding_mask, "; " + _(", ").join(notes) if notes else ""
