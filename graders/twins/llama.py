"""Kata 15's twin: the Llama block as a function of its nine weights, in float64 on the CPU,
with one switch per catalogued mistake (:class:`Variant`). Shared: kata 15's grader reads it
through graders/llama_block/twin.py, kata 28's puts adapters on this block.

Built from PyTorch's pieces, since PyTorch has no Llama block and learners do not install
``transformers``: the RMSNorm formula (what ``nn.RMSNorm`` computes), ``F.silu``, RoPE from
float64 angles (kata 12's reference, graders.twins.rope), and ``F.scaled_dot_product_attention(is_causal=True)``
for the right answer. :data:`HF32` takes exactly the three steps the contract allows to be
float32-precise in float32, as Hugging Face's code does: the RMSNorm, the softmax and the
RoPE angles. The self-tests check the twin against ``nn.RMSNorm`` and against Hugging
Face's ``LlamaDecoderLayer`` (tests/test_llama_block.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from graders.twins.heads import expand_kv_heads
from graders.twins.rope import full_width, inv_frequencies, partner

# The nine keys of Hugging Face's LlamaDecoderLayer, in its order.
ATTENTION_KEYS = ("q_proj.weight", "k_proj.weight", "v_proj.weight", "o_proj.weight")
MLP_KEYS = ("gate_proj.weight", "up_proj.weight", "down_proj.weight")
BLOCK_KEYS = (*(f"self_attn.{k}" for k in ATTENTION_KEYS), *(f"mlp.{k}" for k in MLP_KEYS),
              "input_layernorm.weight", "post_attention_layernorm.weight")

@dataclass(frozen=True)
class Config:
    dim: int
    num_heads: int
    num_kv_heads: int
    hidden_dim: int
    rope_base: float = 10000.0
    eps: float = 1e-6

    @property
    def head_dim(self) -> int:
        return self.dim // self.num_heads

    def block_name(self) -> str:
        extra = "" if self.rope_base == 10000.0 else f", rope_base={self.rope_base:g}"
        extra += "" if self.eps == 1e-6 else f", eps={self.eps:g}"
        return f"LlamaBlock({self.dim}, {self.num_heads}, {self.num_kv_heads}, {self.hidden_dim}{extra})"

    def attention_name(self) -> str:
        extra = "" if self.rope_base == 10000.0 else f", rope_base={self.rope_base:g}"
        return f"LlamaAttention({self.dim}, {self.num_heads}, {self.num_kv_heads}{extra})"


@dataclass(frozen=True)
class Variant:
    """The twin's switches: all at their defaults is the correct block.

    norm: "rms", or a mistaken norm: "layernorm" (centred, divided by the standard
    deviation), "var" / "var-unbiased" (divided by sqrt(var + eps), not centred),
    "centred" (centred, divided by the root mean square) - rmsnorm-subtracts-mean -, or
    "eps-outside" (x / (sqrt(mean(x²)) + eps)), or "float16" / "bfloat16" (the right formula
    computed in that half type, without the float32 upcast: x² overflows float16 above
    |x| = 256) - rmsnorm-no-upcast -. act: "silu", "gelu", "gelu-tanh",
    "quick-gelu" (z · sigmoid(1.702 z)), "relu", "sigmoid". pairing: "half" (right), "interleaved" (Meta's pairs), "rotate-interleaved"
    or "table-interleaved" (only the rotation, or only the cos/sin table, laid out for
    adjacent pairs). frequency: "ok", "model-dim" (dim where head_dim belongs), "i/d",
    "inverted", "default-base" (10000 whatever rope_base is). sign: -1.0 turns by -θ. positions: "given", "arange" (0 ... n-1),
    "first-row" (batch row 0's for every row). causal: "future" (right: keys after the
    query blocked), "none", "past" (the transposed mask), "diagonal" (the query's own key
    blocked too: the first query's weights zero, NaN with "diagonal-nan", uniform with
    "diagonal-finite"). kv_layout: "interleave"
    (right), "tile", "tile-k", "tile-v". scale: None (1/sqrt(head_dim)), a number, or "dim"
    (1/sqrt(dim)). order: "pre", "post" (the norm after the residual sum), "inside"
    (x + norm(f(x))), "from-normed" (the residual adds the normalised x). residual: "both",
    "attn" (only the attention's), "mlp" (only the MLP's), "none". hf32: the three float32
    allowances.
    """

    norm: str = "rms"
    act: str = "silu"
    gate_swapped: bool = False
    rope_values: bool = False
    pairing: str = "half"
    frequency: str = "ok"
    sign: float = 1.0
    positions: str = "given"
    causal: str = "future"
    kv_layout: str = "interleave"
    scale: float | str | None = None
    order: str = "pre"
    residual: str = "both"
    hf32: bool = False


RIGHT = Variant()
HF32 = Variant(hf32=True)


# --------------------------------------------------------------------------- the twin


def rms_norm(x: Tensor, weight: Tensor, eps: float, v: Variant = RIGHT) -> Tensor:
    """The norm over the last axis, float64 (or float32 inside with hf32), times weight."""
    if v.hf32:  # LlamaRMSNorm: float32 inside, then back, then the weight
        x32 = x.to(torch.float32)
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
        return weight * normed.to(x.dtype)
    mean_square = x.pow(2).mean(-1, keepdim=True)
    centred = x - x.mean(-1, keepdim=True)
    if v.norm == "rms":
        normed = x / torch.sqrt(mean_square + eps)
    elif v.norm == "layernorm":
        normed = centred / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + eps)
    elif v.norm == "var":
        normed = x / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + eps)
    elif v.norm == "var-unbiased":
        normed = x / torch.sqrt(x.var(-1, keepdim=True) + eps)
    elif v.norm == "centred":
        normed = centred / torch.sqrt(mean_square + eps)
    elif v.norm == "eps-outside":
        normed = x / (torch.sqrt(mean_square) + eps)
    elif v.norm in ("float16", "bfloat16"):  # no float32 upcast: x² in the half type
        half = getattr(torch, v.norm)
        xh = x.to(half)
        normed = xh * torch.rsqrt(xh.pow(2).mean(-1, keepdim=True) + eps)
        return (weight.to(half) * normed).to(x.dtype)
    else:
        raise ValueError(v.norm)
    return normed * weight


ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "silu": F.silu,
    "gelu": F.gelu,
    "gelu-tanh": lambda t: F.gelu(t, approximate="tanh"),
    "quick-gelu": lambda t: t * torch.sigmoid(1.702 * t),  # CLIP's and early GPT's
    "relu": F.relu,
    "sigmoid": torch.sigmoid,
}


# A SwiGLU's three weights (gate, up, down): Llama's names, and those of Mixtral's experts.
LLAMA_MLP = ("gate_proj", "up_proj", "down_proj")
MIXTRAL_EXPERT = ("w1", "w3", "w2")


def swiglu(x: Tensor, state: dict[str, Tensor], v: Variant = RIGHT, prefix: str = "",
           names: tuple[str, str, str] = LLAMA_MLP) -> Tensor:
    """x (..., dim) -> down(act(gate x) * up x), (..., dim); each weight is
    ``state[prefix + name + ".weight"]`` for ``names``."""
    gate_name, up_name, down_name = names
    gate = F.linear(x, state[f"{prefix}{gate_name}.weight"])
    up = F.linear(x, state[f"{prefix}{up_name}.weight"])
    if v.gate_swapped:
        gate, up = up, gate
    return F.linear(ACTIVATIONS[v.act](gate) * up, state[f"{prefix}{down_name}.weight"])


def rope_angles(positions: Tensor | None, b: int, n: int, head_dim: int, base: float,
                v: Variant = RIGHT, model_dim: int = 0) -> Tensor:
    """Per-pair angles (n, d/2) or (b, 1, n, d/2), float64 (float32-precise with hf32)."""
    if positions is None or v.positions == "arange":
        positions = torch.arange(n)
    elif v.positions == "first-row" and positions.dim() == 2:
        positions = positions[0]
    positions = positions.to("cpu")
    if v.hf32:  # LlamaRotaryEmbedding: inv_freq and position * inv_freq in float32
        exponent = torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim
        inv_freq = 1.0 / (base ** exponent)
        angles = (positions.float()[..., None] * inv_freq).double()
    else:
        if v.frequency == "model-dim":  # 2i / dim: the exponent over the model's width
            inv_freq = inv_frequencies(model_dim, base)[: head_dim // 2]
        elif v.frequency == "default-base":
            inv_freq = inv_frequencies(head_dim, 10000.0)
        else:
            inv_freq = inv_frequencies(head_dim, base, v.frequency)
        angles = positions.double()[..., None] * inv_freq * v.sign
    return angles[:, None] if angles.dim() == 3 else angles


def rotate(t: Tensor, angles: Tensor, pairing: str = "half", hf32: bool = False) -> Tensor:
    """RoPE of t (b, heads, n, d): t * cos + partner(t) * sin, with the pairing's layout."""
    table_adjacent = pairing in ("interleaved", "table-interleaved")
    rotate_adjacent = pairing in ("interleaved", "rotate-interleaved")
    full = full_width(angles, table_adjacent)
    cos, sin = full.cos(), full.sin()
    if hf32:
        cos, sin = full.float().cos().double(), full.float().sin().double()
    return t * cos + partner(t, rotate_adjacent) * sin


def attention(x: Tensor, state: dict[str, Tensor], cfg: Config, positions: Tensor | None,
              v: Variant = RIGHT, prefix: str = "") -> Tensor:
    """LlamaAttention as a function of its four weights: x (b, n, dim) -> (b, n, dim)."""
    b, n, _dim = x.shape
    h, kv, d = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim

    def heads(name: str, count: int) -> Tensor:
        return F.linear(x, state[f"{prefix}{name}.weight"]).view(b, n, count, d).transpose(1, 2)

    q, k, val = heads("q_proj", h), heads("k_proj", kv), heads("v_proj", kv)
    angles = rope_angles(positions, b, n, d, cfg.rope_base, v, cfg.dim)
    q, k = rotate(q, angles, v.pairing, v.hf32), rotate(k, angles, v.pairing, v.hf32)
    if v.rope_values:
        val = rotate(val, angles, v.pairing, v.hf32)
    group = h // kv
    k, val = expand_kv_heads(k, val, group, v.kv_layout)
    if v == RIGHT:  # PyTorch's own attention, for the right answer
        out = F.scaled_dot_product_attention(q, k, val, is_causal=True)
    else:
        scale = {None: 1 / math.sqrt(d), "dim": 1 / math.sqrt(cfg.dim)}.get(v.scale, v.scale)
        scores = q @ k.transpose(-2, -1) * scale
        ones = torch.ones(n, n, dtype=torch.bool)
        blocked = {"future": ones.triu(1), "none": None, "past": ones.tril(-1)}.get(
            v.causal, ones.triu(0))  # "diagonal...": the query's own key blocked too
        fill = torch.finfo(scores.dtype).min if v.causal == "diagonal-finite" else float("-inf")
        if blocked is not None:
            scores = scores.masked_fill(blocked, fill)
        # The first query has no key left under "diagonal": zero weights (a guarded softmax),
        # NaN ("diagonal-nan") or, with a finite fill, uniform weights ("diagonal-finite").
        empty = torch.isneginf(scores).all(-1, keepdim=True)
        if v.causal == "diagonal-nan":
            empty = torch.zeros_like(empty)
        scores = scores.masked_fill(empty, 0.0)
        if v.hf32:  # eager attention: the softmax in float32
            weights = torch.softmax(scores, dim=-1, dtype=torch.float32).to(scores.dtype)
        else:
            weights = torch.softmax(scores, dim=-1)
        weights = weights.masked_fill(empty, 0.0)
        out = weights @ val
    return F.linear(out.transpose(1, 2).reshape(b, n, h * d), state[f"{prefix}o_proj.weight"])


def llama_reference(state: dict[str, Tensor], x: Tensor, cfg: Config, positions: Tensor | None,
                    v: Variant = RIGHT) -> Tensor:
    """LlamaBlock as a function of its nine weights (float64 tensors on the CPU)."""
    def norm(t: Tensor, name: str) -> Tensor:
        return rms_norm(t, state[f"{name}.weight"], cfg.eps, v)

    def attend(t: Tensor) -> Tensor:
        return attention(t, state, cfg, positions, v, prefix="self_attn.")

    def mlp(t: Tensor) -> Tensor:
        return swiglu(t, state, v, prefix="mlp.")

    if v.order == "post":
        h = norm(x + attend(x), "input_layernorm")
        return norm(h + mlp(h), "post_attention_layernorm")
    if v.order == "inside":
        h = x + norm(attend(x), "input_layernorm")
        return h + norm(mlp(h), "post_attention_layernorm")
    if v.order == "from-normed":
        a = norm(x, "input_layernorm")
        h = a + attend(a)
        b = norm(h, "post_attention_layernorm")
        return b + mlp(b)
    attended = attend(norm(x, "input_layernorm"))
    h = x + attended if v.residual in ("both", "attn") else attended
    fed = mlp(norm(h, "post_attention_layernorm"))
    return h + fed if v.residual in ("both", "mlp") else fed


# --------------------------------------------------------------------- the mistakes

NORM_MISTAKES = [("rmsnorm-subtracts-mean", Variant(norm=k))
                 for k in ("layernorm", "var", "var-unbiased", "centred")]
NORM_MISTAKES.append(("rmsnorm-eps-outside-sqrt", Variant(norm="eps-outside")))
# Only for half inputs (graders add it where x is float16 or bfloat16).
HALF_NORM_MISTAKES = {dtype: ("rmsnorm-no-upcast", Variant(norm=str(dtype).removeprefix("torch.")))
                      for dtype in (torch.float16, torch.bfloat16)}
MLP_MISTAKES = [("swiglu-gate-swapped", Variant(gate_swapped=True))]
MLP_MISTAKES += [("swiglu-wrong-activation", Variant(act=a))
                 for a in ("gelu", "gelu-tanh", "quick-gelu", "relu", "sigmoid")]
ATTENTION_MISTAKES = [
    ("rope-on-values", Variant(rope_values=True)),
    *(("rope-pairs-mismatch", Variant(pairing=p))
      for p in ("interleaved", "rotate-interleaved", "table-interleaved")),
    *(("rope-positions-ignored", Variant(positions=p)) for p in ("arange", "first-row")),
    *(("rope-wrong-frequency", Variant(frequency=f)) for f in ("model-dim", "i/d", "inverted", "default-base")),
    ("rope-rotation-reversed", Variant(sign=-1.0)),
    ("causal-mask-missing", Variant(causal="none")),
    ("causal-mask-transposed", Variant(causal="past")),
    *(("causal-diagonal", Variant(causal=c))
      for c in ("diagonal", "diagonal-nan", "diagonal-finite")),
    *(("kv-heads-tiled", Variant(kv_layout=t)) for t in ("tile", "tile-k", "tile-v")),
    ("missing-scale", Variant(scale=1.0)),
    ("scale-by-embed-dim", Variant(scale="dim")),
]
BLOCK_MISTAKES = [
    *NORM_MISTAKES, *MLP_MISTAKES, *ATTENTION_MISTAKES,
    ("norm-order-swapped", Variant(order="post")),
    ("norm-inside-residual", Variant(order="inside")),
    ("residual-from-normed", Variant(order="from-normed")),
    *(("missing-residual", Variant(residual=r)) for r in ("attn", "mlp", "none")),
]
