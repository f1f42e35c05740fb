"""Multi-head attention's linear algebra, shared by the graders of katas 03 (mha) and 10
(vit): batch-first views, the in-projections, splitting and merging heads (with the
catalogued wrong layouts), and the attention weights that must lie behind an output."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


IDENTITY = (0, 1, 2)  # q, k, v: which third of in_proj_weight / which input feeds each


def to_batch_first(x: Tensor, batch_first: bool) -> Tensor:
    """(seq, batch, E) -> (batch, seq, E) unless it already is."""
    return x if batch_first else x.transpose(0, 1)


def split_heads(x: Tensor, num_heads: int, layout: str = "ok") -> Tensor:
    """(b, len, E) -> (b, h, len, d), as an implementation with ``layout`` would do it.

    "ok": view (b, len, h, d) + transpose, head i = columns i*d:(i+1)*d;
    "reshape": straight to (b, h, len, d) (reshape-without-transpose, batch-first code);
    "reshape-seq-first": PyTorch's (len, b, E) straight to (b*h, len, d) (the same, seq-first);
    "interleaved": the columns split as (d, h) (heads-interleaved);
    "head-major": (b*h) rows ordered head first, then read as batch first (batch-head-order).
    """
    b, length, embed = x.shape
    d = embed // num_heads
    if layout == "ok":
        return x.view(b, length, num_heads, d).transpose(1, 2)
    if layout == "reshape":
        return x.reshape(b, num_heads, length, d)
    if layout == "reshape-seq-first":
        return x.transpose(0, 1).reshape(b, num_heads, length, d)
    if layout == "interleaved":
        return x.reshape(b, length, d, num_heads).permute(0, 3, 1, 2)
    if layout == "head-major":
        by_head = x.reshape(b, length, num_heads, d).permute(2, 0, 1, 3)  # (h, b, len, d)
        return by_head.reshape(b, num_heads, length, d)
    raise ValueError(layout)


def merge_heads(x: Tensor, layout: str = "ok") -> Tensor:
    """(b, h, len, d) -> (b, len, h*d): the inverse of :func:`split_heads` with ``layout``."""
    b, h, length, d = x.shape
    if layout == "ok":
        return x.transpose(1, 2).reshape(b, length, h * d)
    if layout == "reshape":
        return x.reshape(b, length, h * d)
    if layout == "reshape-seq-first":
        return x.reshape(length, b, h * d).transpose(0, 1)
    if layout == "interleaved":
        return x.permute(0, 2, 3, 1).reshape(b, length, h * d)
    if layout == "head-major":
        return x.reshape(h, b, length, d).permute(1, 2, 0, 3).reshape(b, length, h * d)
    raise ValueError(layout)


def in_projections(
    state: dict[str, Tensor],
    xs: list[Tensor],
    *,
    inputs: tuple[int, int, int] = IDENTITY,
    weight_parts: tuple[int, int, int] = IDENTITY,
    bias_parts: tuple[int, int, int] = IDENTITY,
    in_bias: tuple[bool, bool, bool] = (True, True, True),
    strided: tuple[bool, bool] = (False, False),
    per_head: int = 0,
) -> list[Tensor]:
    """q, k, v = F.linear(xs[inputs[i]], W[weight_parts[i]], b[bias_parts[i]]) for i = 0, 1, 2.

    xs are the batch-first (query, key, value); W and b the thirds of in_proj_weight /
    in_proj_bias, or, where ``strided`` says so (for W, for b), every third row instead
    (``view(E, 3, E)`` read as (q, k, v) per row), or with ``per_head`` (the number of
    heads) each head's q, k and v rows side by side (the fused projection viewed as
    (h, 3, d), Megatron's layout, instead of (3, h, d)). The default arguments are the
    correct projections.
    """

    def thirds(t: Tensor, every_third: bool) -> tuple[Tensor, ...]:
        if per_head:
            grouped = t.reshape(per_head, 3, t.size(0) // (3 * per_head), *t.shape[1:])
            return tuple(grouped[:, i].reshape(t.size(0) // 3, *t.shape[1:]) for i in range(3))
        return tuple(t[i::3] for i in range(3)) if every_third else t.chunk(3)

    weights = thirds(state["in_proj_weight"], strided[0])
    bias = state.get("in_proj_bias")
    biases = thirds(bias, strided[1]) if bias is not None else (None, None, None)
    return [F.linear(xs[inputs[i]], weights[weight_parts[i]],
                     biases[bias_parts[i]] if in_bias[i] else None) for i in range(3)]


def weights_behind_output(state, value: Tensor, output: Tensor, num_heads: int,
                          batch_first: bool) -> Tensor:
    """The per-head weights (b, h, n, m) that turn ``value`` into ``output``.

    Undoes out_proj (a square, invertible matrix), splits the heads and solves
    weights @ v_h = attended_h; unique when head_dim >= m.
    """
    state = {name: t.detach().cpu().double() for name, t in state.items()}
    y = to_batch_first(output.detach().cpu().double(), batch_first)
    if state.get("out_proj.bias") is not None:
        y = y - state["out_proj.bias"]
    merged = torch.linalg.solve(state["out_proj.weight"].T, y, left=False)  # x @ W^T = y
    v_bf = to_batch_first(value.detach().cpu().double(), batch_first)
    v = split_heads(in_projections(state, [v_bf, v_bf, v_bf])[2], num_heads)  # (b, h, m, d)
    return split_heads(merged, num_heads) @ torch.linalg.pinv(v)
