"""Kata 10's twin: the ViT's attention, MLP and block as functions of their state dict
(timm's names), with one switch per catalogued mistake, and PyTorch's own modules loaded
with the same weights (the right answer).
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graders.core.i18n import _
from graders.core.inputs import randomize_
from graders.twins.reference import attend


EPS = 1e-6  # the ViT block's LayerNorm eps (nn.LayerNorm's default is 1e-5)

# The Block's state dict (timm's names) -> nn.TransformerEncoderLayer's names.
BLOCK_TO_TWIN = {
    "norm1.weight": "norm1.weight",
    "norm1.bias": "norm1.bias",
    "attn.qkv.weight": "self_attn.in_proj_weight",
    "attn.qkv.bias": "self_attn.in_proj_bias",
    "attn.proj.weight": "self_attn.out_proj.weight",
    "attn.proj.bias": "self_attn.out_proj.bias",
    "norm2.weight": "norm2.weight",
    "norm2.bias": "norm2.bias",
    "mlp.fc1.weight": "linear1.weight",
    "mlp.fc1.bias": "linear1.bias",
    "mlp.fc2.weight": "linear2.weight",
    "mlp.fc2.bias": "linear2.bias",
}
# The Attention's state dict -> nn.MultiheadAttention's names.
ATTENTION_TO_TWIN = {
    "qkv.weight": "in_proj_weight",
    "qkv.bias": "in_proj_bias",
    "proj.weight": "out_proj.weight",
    "proj.bias": "out_proj.bias",
}


# --------------------------------------------------------------------------- references


def split_qkv(qkv: Tensor, num_heads: int, layout: str = "ok") -> tuple[Tensor, Tensor, Tensor]:
    """qkv(x) (B, N, 3*C) -> q, k, v (B, h, N, d), as an implementation with ``layout`` does.

    "ok": (B, N, 3, h, d) permuted to (3, B, h, N, d);
    "h3": read as (B, N, h, 3, d), "hd3" as (B, N, h, d, 3) (qkv-reshape-order);
    "reshape": chunked into q, k, v, each reshaped straight to (B, h, N, d)
    (reshape-without-transpose).
    """
    B, N, three_c = qkv.shape
    d = three_c // 3 // num_heads
    if layout == "ok":
        return qkv.reshape(B, N, 3, num_heads, d).permute(2, 0, 3, 1, 4).unbind(0)
    if layout == "h3":
        return qkv.reshape(B, N, num_heads, 3, d).permute(3, 0, 2, 1, 4).unbind(0)
    if layout == "hd3":
        return qkv.reshape(B, N, num_heads, d, 3).permute(4, 0, 2, 1, 3).unbind(0)
    if layout == "reshape":
        return tuple(t.reshape(B, num_heads, N, d) for t in qkv.chunk(3, dim=-1))
    raise ValueError(layout)


def attention_reference(state: dict[str, Tensor], x: Tensor, num_heads: int, *,
                        prefix: str = "", layout: str = "ok", merge: str = "ok",
                        scale: float | None = None) -> Tensor:
    """timm's Attention as a function of its state dict, with mistake switches.

    x (B, N, C) -> (B, N, C). ``layout``: see :func:`split_qkv`; ``merge``: "ok"
    (transpose, then reshape) or "reshape" (straight to (B, N, C)); ``scale``: None for
    1/sqrt(head_dim).
    """
    B, N, C = x.shape
    qkv = F.linear(x, state[prefix + "qkv.weight"], state.get(prefix + "qkv.bias"))
    q, k, v = split_qkv(qkv, num_heads, layout)
    attended, _ = attend(q, k, v, scale=scale)  # (B, h, N, d)
    if merge == "ok":
        merged = attended.transpose(1, 2).reshape(B, N, C)
    else:
        merged = attended.reshape(B, N, C)
    return F.linear(merged, state[prefix + "proj.weight"], state[prefix + "proj.bias"])


def attention_mistakes(dim: int, num_heads: int) -> list[tuple[str, dict[str, Any]]]:
    """(slug, switches of :func:`attention_reference`) for every modelled mistake."""
    mistakes: list[tuple[str, dict[str, Any]]] = [("qkv-reshape-order", {"layout": "h3"}),
                                                  ("qkv-reshape-order", {"layout": "hd3"})]
    for layout, merge in (("ok", "reshape"), ("reshape", "ok"), ("reshape", "reshape")):
        mistakes.append(("reshape-without-transpose", {"layout": layout, "merge": merge}))
    mistakes.append(("missing-scale", {"scale": 1.0}))
    if num_heads > 1:
        mistakes += [("scale-by-embed-dim", {"scale": 1 / math.sqrt(dim)}),
                     ("scale-by-embed-dim", {"scale": 1 / dim})]
    return mistakes


def mlp_reference(state: dict[str, Tensor], x: Tensor, *, prefix: str = "",
                  gelu: str = "none") -> Tensor:
    """fc1 -> GELU (``gelu``: "none" exact, "tanh" the approximation) -> fc2."""
    hidden = F.linear(x, state[prefix + "fc1.weight"], state[prefix + "fc1.bias"])
    hidden = F.gelu(hidden, approximate=gelu)
    return F.linear(hidden, state[prefix + "fc2.weight"], state[prefix + "fc2.bias"])


def block_reference(state: dict[str, Tensor], x: Tensor, num_heads: int, *,
                    norm_at: tuple[str, str] = ("pre", "pre"), gelu: str = "none",
                    eps: float = EPS, keep: tuple[Tensor | float, Tensor | float] = (1.0, 1.0),
                    residual: tuple[str, str] = ("x", "x"),
                    **attention_switches: Any) -> Tensor:
    """The ViT block as a function of its state dict (timm's names), eval mode.

    x (B, N, C) -> (B, N, C). ``norm_at`` per sublayer: "pre" (x + f(norm(x)), right),
    "post" (norm(x + f(x))) or "sublayer" (x + norm(f(x))). ``keep``: what each branch is
    multiplied by before its residual sum (DropPath's per-sample factor, (B, 1, 1)).
    ``residual`` per sublayer: "x" (right), "none" (missing-residual), "normed" (Pre-LN
    adding norm(x) instead of x: residual-from-normed).
    """
    C = x.shape[-1]

    def norm(i: int, t: Tensor) -> Tensor:
        return F.layer_norm(t, (C,), state[f"norm{i}.weight"], state[f"norm{i}.bias"], eps)

    sublayers = (
        lambda t: attention_reference(state, t, num_heads, prefix="attn.", **attention_switches),
        lambda t: mlp_reference(state, t, prefix="mlp.", gelu=gelu),
    )
    for i, (where, sublayer, factor, base) in enumerate(zip(norm_at, sublayers, keep, residual),
                                                        start=1):
        def add(skip: Tensor, update: Tensor) -> Tensor:
            return update if base == "none" else skip + update

        if where == "pre":
            normed = norm(i, x)
            x = add(normed if base == "normed" else x, factor * sublayer(normed))
        elif where == "post":
            x = norm(i, add(x, factor * sublayer(x)))
        else:
            x = add(x, factor * norm(i, sublayer(x)))
    return x


def block_mistakes(dim: int, num_heads: int) -> list[tuple[str, dict[str, Any]]]:
    mistakes: list[tuple[str, dict[str, Any]]] = [
        ("norm-order-swapped", {"norm_at": norm_at})
        for norm_at in (("post", "post"), ("post", "pre"), ("pre", "post"),
                        ("sublayer", "sublayer"))
    ]
    for which in (("none", "x"), ("x", "none"), ("none", "none")):
        mistakes.append(("missing-residual", {"residual": which}))
    for which in (("normed", "normed"), ("normed", "x"), ("x", "normed")):
        mistakes.append(("residual-from-normed", {"residual": which}))
    mistakes.append(("gelu-tanh-approximation", {"gelu": "tanh"}))
    return mistakes + attention_mistakes(dim, num_heads)


def attention_twin(dim: int, num_heads: int, qkv_bias: bool, seed: int, dtype=torch.float32,
                   device: str | torch.device = "cpu") -> nn.MultiheadAttention:
    twin = nn.MultiheadAttention(dim, num_heads, batch_first=True, dtype=dtype, device=device)
    randomize_(twin, seed, scale=1 / math.sqrt(dim))
    if not qkv_bias:
        with torch.no_grad():
            twin.in_proj_bias.zero_()
    return twin.eval()


def attention_state(twin: nn.MultiheadAttention, qkv_bias: bool) -> dict[str, Tensor]:
    """The twin's weights under timm's names."""
    theirs = twin.state_dict()
    return {name: theirs[twin_name].detach() for name, twin_name in ATTENTION_TO_TWIN.items()
            if qkv_bias or name != "qkv.bias"}


def mlp_state(in_f: int, hidden: int, out_f: int, seed: int, dtype=torch.float32,
              device: str | torch.device = "cpu") -> dict[str, Tensor]:
    """Weights of scale 1: fc1's outputs spread over [-5, 5], where the exact GELU and its
    tanh approximation differ by up to 4.7e-4 (near |x| = 2.7)."""
    layers = {"fc1": nn.Linear(in_f, hidden), "fc2": nn.Linear(hidden, out_f)}
    state = {}
    for i, (name, layer) in enumerate(layers.items()):
        randomize_(layer, seed + i, scale=1.0 if name == "fc1" else 1 / math.sqrt(hidden))
        state.update({f"{name}.{k}": v.to(device=device, dtype=dtype)
                      for k, v in layer.state_dict().items()})
    return state


class MlpTwin(nn.Module):
    """PyTorch's modules in the Mlp's arrangement (for expected gradients)."""

    def __init__(self, state: dict[str, Tensor]):
        super().__init__()
        w1, w2 = state["fc1.weight"], state["fc2.weight"]
        self.fc1 = nn.Linear(w1.shape[1], w1.shape[0], dtype=w1.dtype, device=w1.device)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(w2.shape[1], w2.shape[0], dtype=w2.dtype, device=w2.device)
        self.load_state_dict(state)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(self.act(self.fc1(x)))


def block_twin(dim: int, num_heads: int, hidden: int, qkv_bias: bool, seed: int,
               dtype=torch.float32, device: str | torch.device = "cpu",
               weight_scale: float = 0.5) -> nn.TransformerEncoderLayer:
    """The ViT block under PyTorch's names: Pre-LN, exact GELU, eps 1e-6, no dropout."""
    twin = nn.TransformerEncoderLayer(dim, num_heads, dim_feedforward=hidden, dropout=0.0,
                                      activation="gelu", layer_norm_eps=EPS, batch_first=True,
                                      norm_first=True, dtype=dtype, device=device)
    randomize_(twin, seed, scale=weight_scale)
    if not qkv_bias:
        with torch.no_grad():
            twin.self_attn.in_proj_bias.zero_()
    return twin.eval()


def block_state(twin: nn.TransformerEncoderLayer, qkv_bias: bool) -> dict[str, Tensor]:
    theirs = twin.state_dict()
    return {name: theirs[twin_name].detach() for name, twin_name in BLOCK_TO_TWIN.items()
            if qkv_bias or name != "attn.qkv.bias"}


def drop_path_outcomes(state, x: Tensor, heads: int, p: float, scaled: bool) -> list[Tensor]:
    """The block's output for each (attention kept?, mlp kept?) pair: 4 tensors (B, N, C)."""
    factor = 1 / (1 - p) if scaled else 1.0
    return [block_reference(state, x, heads, keep=(a * factor, m * factor))
            for a in (1.0, 0.0) for m in (1.0, 0.0)]
