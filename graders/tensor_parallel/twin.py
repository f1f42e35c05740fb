"""Kata 31's twin: every rank of a tensor-parallel layer simulated in one process.

One process computes what each rank of a world of ``ws`` would hold: its shards (correct, or
sliced as a catalogued mistake slices them), its output and its gradients (correct, or as a
mistake in the two Megatron operators would make them). No collective is run: an all-reduce
is a sum over the simulated ranks. The grader compares the ranks' reports with nn.Linear's
and nn.MultiheadAttention's own numbers, and names a mistake when a rank's report equals what
this twin computes with that mistake's switch.

Shapes: x (batch, seq, embed_dim); a state dict is nn.MultiheadAttention's.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

# How a mistake slices the full weights (load_full_state_dict), by slug.
LAYOUTS = {
    "fused": "fused-qkv-sliced-contiguously",  # rows r*3E/ws... of in_proj_weight, then split
    "strided-rows": "heads-not-contiguous",  # rows r, r + ws, r + 2 ws, ...
    "strided-heads": "heads-not-contiguous",  # heads r, r + ws, ... (every rank's, strided)
    "wrong-axis": "sharded-wrong-axis",  # the columns of W_q, W_k, W_v (transposed), W_o's rows
}
# How a mistake runs the layer, by slug.
MODES = {
    "no-backward-all-reduce": "missing-backward-all-reduce",
    "both-directions": "all-reduce-in-both-directions",
    "bias-every-rank": "bias-added-on-every-rank",
    "not-reduced": "output-not-reduced",
    "heads-h": "local-heads-wrong",  # viewed as (b, n, h, d / ws), scaled by 1 / sqrt(d)
    "heads-h-sdpa": "local-heads-wrong",  # the same view, scaled by 1 / sqrt(d / ws)
}
# A switch of the twin -> the catalogued mistake it reproduces.
MISTAKE_OF: dict[str, str] = {**LAYOUTS, **MODES}
PROJECTIONS = ("q_proj", "k_proj", "v_proj")


def rows_of(rank: int, ws: int, width: int) -> slice:
    """This rank's contiguous share of ``width`` rows (or columns)."""
    share = width // ws
    return slice(rank * share, (rank + 1) * share)


def attention_shards(sd: dict[str, Tensor], embed_dim: int, num_heads: int, ws: int, rank: int,
                     layout: str = "correct") -> dict[str, Tensor]:
    """Rank ``rank``'s parameters, by the learner's names, sliced from ``sd``."""
    E, d, share = embed_dim, embed_dim // num_heads, embed_dim // ws
    weights = sd["in_proj_weight"].chunk(3)
    biases = sd["in_proj_bias"].chunk(3) if "in_proj_bias" in sd else (None,) * 3
    mine = rows_of(rank, ws, E)
    if layout == "strided-rows":
        mine = torch.arange(rank, E, ws)
    elif layout == "strided-heads":
        heads = torch.arange(rank, num_heads, ws)
        mine = (heads[:, None] * d + torch.arange(d)).flatten()
    if layout == "fused":
        fused = rows_of(rank, ws, 3 * E)
        weights = sd["in_proj_weight"][fused].chunk(3)
        biases = sd["in_proj_bias"][fused].chunk(3) if biases[0] is not None else biases
    shards = {}
    for name, w, b in zip(PROJECTIONS, weights, biases):
        if layout == "fused":
            shards[f"{name}.weight"] = w
        elif layout == "wrong-axis":
            shards[f"{name}.weight"] = w[:, mine].T
        else:
            shards[f"{name}.weight"] = w[mine]
        if b is not None:
            shards[f"{name}.bias"] = b if layout == "fused" else b[mine]
    w_o = sd["out_proj.weight"]
    if layout == "wrong-axis":
        shards["out_proj.weight"] = w_o[mine].T
    elif layout == "fused":
        shards["out_proj.weight"] = w_o[:, rows_of(rank, ws, E)]
    else:
        shards["out_proj.weight"] = w_o[:, mine]
    if "out_proj.bias" in sd and biases[0] is not None:
        shards["out_proj.bias"] = sd["out_proj.bias"]
    return {k: v.detach().clone().contiguous() for k, v in shards.items()}


def causal(n: int) -> Tensor:
    """The (n, n) bool mask that blocks the future (True = blocked)."""
    return torch.ones(n, n, dtype=torch.bool).triu(1)


def local_attention(q: Tensor, k: Tensor, v: Tensor, heads: int, scale_dim: float,
                    mask: Tensor | None) -> Tensor:
    """Softmax attention of (b, n, width) projections split into ``heads``: (b, n, width)."""
    b, n, width = q.shape

    def split(t: Tensor) -> Tensor:
        return t.view(b, n, heads, width // heads).transpose(1, 2)

    scores = split(q) @ split(k).transpose(-2, -1) / math.sqrt(scale_dim)
    if mask is not None:
        scores = (scores.masked_fill(mask, float("-inf")) if mask.dtype == torch.bool
                  else scores + mask)
    return (torch.softmax(scores, dim=-1) @ split(v)).transpose(1, 2).reshape(b, n, width)


def reduce_and_grads(partials: list[Tensor], biases: list[Tensor | None], leaves: list[dict],
                     xs: list[Tensor], w: Tensor, mode: str) -> list[dict]:
    """Each rank's output and gradients once the partial outputs are combined as ``mode``
    combines them. Rank r backpropagates its own loss (out_r * w).sum() into its own leaves
    (g's backward is the identity, so a sum of the partials gives each rank exactly that);
    f's backward sums the ranks' input gradients."""
    ws = len(partials)
    total = sum(partials)
    every_bias = sum(b for b in biases if b is not None) if biases[0] is not None else None
    results = []
    for r in range(ws):
        out = partials[r] if mode == "not-reduced" else total
        if mode == "bias-every-rank" and every_bias is not None:
            out = out + every_bias
        elif biases[r] is not None:
            out = out + biases[r]
        names = list(leaves[r])
        grads = torch.autograd.grad((out * w).sum(), [leaves[r][n] for n in names] + [xs[r]],
                                    retain_graph=True, allow_unused=True)
        own = dict(zip(names, grads[:-1]))
        if mode == "both-directions":  # g's backward all-reduced: every rank's w, summed
            own = {n: g * ws if not n.endswith("out_proj.bias") and not n == "bias" else g
                   for n, g in own.items()}
        results.append({"out": out.detach(), "grads": own, "x": grads[-1]})
    partial_x = [res["x"] for res in results]
    summed = sum(partial_x)
    for r, res in enumerate(results):
        if mode == "no-backward-all-reduce":
            res["x"] = partial_x[r]
        elif mode == "both-directions":
            res["x"] = summed * ws
        else:
            res["x"] = summed
    return results


def attention_ranks(sd: dict[str, Tensor], embed_dim: int, num_heads: int, ws: int, x: Tensor,
                    mask: Tensor | None, is_causal: bool, w: Tensor, layout: str = "correct",
                    mode: str = "correct") -> list[dict]:
    """Every rank's {"out", "grads": {name: grad}, "x": x.grad} for one forward and backward."""
    d = embed_dim // num_heads
    heads, scale_dim = num_heads // ws, d
    if mode in ("heads-h", "heads-h-sdpa"):
        if d % ws:
            raise ValueError("the head width does not split")
        heads = num_heads
        scale_dim = d if mode == "heads-h" else d // ws
    if is_causal and mask is None:
        mask = causal(x.shape[1])
    leaves, xs, partials, biases = [], [], [], []
    for r in range(ws):
        own = {k: v.clone().requires_grad_() for k, v in
               attention_shards(sd, embed_dim, num_heads, ws, r, layout).items()}
        x_r = x.detach().clone().requires_grad_()
        q, k, v = (F.linear(x_r, own[f"{p}.weight"], own.get(f"{p}.bias")) for p in PROJECTIONS)
        o = local_attention(q, k, v, heads, scale_dim, mask)
        partials.append(F.linear(o, own["out_proj.weight"]))
        biases.append(own.get("out_proj.bias"))
        leaves.append(own)
        xs.append(x_r)
    return reduce_and_grads(partials, biases, leaves, xs, w, mode)


def column_ranks(weight: Tensor, bias: Tensor | None, ws: int, x: Tensor, w: Tensor,
                 mode: str = "correct") -> list[dict]:
    """ColumnParallelLinear on every rank: rank r's loss is (out_r * w[..., rows_r]).sum()."""
    results, partial_x = [], []
    for r in range(ws):
        rows = rows_of(r, ws, weight.shape[0])
        own = {"weight": weight[rows].clone().requires_grad_()}
        if bias is not None:
            own["bias"] = bias[rows].clone().requires_grad_()
        x_r = x.detach().clone().requires_grad_()
        out = F.linear(x_r, own["weight"], own.get("bias"))
        names = list(own)
        grads = torch.autograd.grad((out * w[..., rows]).sum(), [own[n] for n in names] + [x_r])
        partial_x.append(grads[-1])
        results.append({"out": out.detach(), "grads": dict(zip(names, grads[:-1]))})
    for r, res in enumerate(results):
        res["x"] = partial_x[r] if mode == "no-backward-all-reduce" else sum(partial_x)
    return results


def row_ranks(weight: Tensor, bias: Tensor | None, ws: int, x: Tensor, w: Tensor,
              mode: str = "correct") -> list[dict]:
    """RowParallelLinear on every rank: rank r gets x[..., cols_r]; every rank's loss is
    (out * w).sum()."""
    leaves, xs, partials, biases = [], [], [], []
    for r in range(ws):
        cols = rows_of(r, ws, weight.shape[1])
        own = {"weight": weight[:, cols].clone().requires_grad_()}
        if bias is not None:
            own["bias"] = bias.clone().requires_grad_()
        x_r = x[..., cols].detach().clone().requires_grad_()
        partials.append(F.linear(x_r, own["weight"]))
        biases.append(own.get("bias"))
        leaves.append(own)
        xs.append(x_r)
    results = reduce_and_grads(partials, biases, leaves, xs, w, mode)
    for r, res in enumerate(results):  # each rank's input is its own slice: no f here
        res["x"] = torch.autograd.grad(
            ((partials[r] * (ws if mode == "both-directions" else 1)) * w).sum(), xs[r],
            retain_graph=True)[0]
    return results
