"""Kata 31_tensor_parallel (Tensor-parallel attention).

Beside the grader (checks.py), the twin (twin.py) and the ranks it starts (ranks.py), what the
learner does not read: its registry entry with the hint ladder (KATA), the mistakes only it
names (MISTAKES) and its quiz (QUESTIONS). Imports nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

from graders.core.kata import Kata, Mistake
from graders.core.quizzes import CHOICE, INTEGER, Question

KATA = Kata(
    id="31",
    name="31_tensor_parallel",
    file="tensor_parallel.py",
    title="Tensor-parallel attention",
    track="training",
    difficulty="hard",
    target_minutes=40,
    prerequisites=("03",),
    mistakes=(
        "missing-backward-all-reduce",
        "all-reduce-in-both-directions",
        "bias-added-on-every-rank",
        "sharded-wrong-axis",
        "fused-qkv-sliced-contiguously",
        "heads-not-contiguous",
        "local-heads-wrong",
        "output-not-reduced",
        "input-modified-in-place",
        "all-gather-instead-of-reduce",
    ),
    forbidden=(),
    hints=(
        "Each rank keeps h/ws whole heads: their rows of W_q, W_k and W_v (a column-parallel "
        "linear) and the same columns of W_o (a row-parallel one). Heads never talk to each "
        "other, so the only communication is summing the ranks' partial outputs, once forward "
        "and once backward for x's gradient.",
        "f = identity forward, all_reduce(grad) backward: apply it to x once, then the three "
        "local linears give (b, n, E/ws) each; view them as (b, n, h/ws, d) and attend as "
        "usual; out_proj multiplies the (b, n, E/ws) heads by its (E, E/ws) columns, g = "
        "all_reduce forward, identity backward, sums the partials to (b, n, E), then the full "
        "bias is added once. load_full_state_dict: in_proj_weight.chunk(3), then rows r*E/ws "
        "... of each, and those columns of out_proj.weight.",
        "class Reduce(torch.autograd.Function):  # g: sum forward, identity backward\n"
        "    forward = staticmethod(lambda ctx, x: dist.all_reduce(out := x.clone()) or out)\n"
        "    backward = staticmethod(lambda ctx, grad: grad)\n"
        "w_q, w_k, w_v = sd['in_proj_weight'].chunk(3)  # then rows r*E/ws ... of each",
    ),
)


# The mistakes only this kata's grader names (input-modified-in-place is shared:
# graders.core.catalogue).
MISTAKES = (
    Mistake("missing-backward-all-reduce",
            "x's gradient on each rank is only that rank's share: f's backward did not sum the "
            "ranks' gradients (f was the identity both ways).",
            "f (copy_to_tensor_model_parallel_region) is the identity forward and an all_reduce "
            "of the gradient backward: x feeds every rank's heads, so its gradient is the sum."),
    Mistake("all-reduce-in-both-directions",
            "The gradients are ws times too large: g's backward all-reduced again (as "
            "torch.distributed.nn.functional.all_reduce does, which differentiates the sum of "
            "every rank's loss) although every rank already holds the same loss.",
            "g's backward is the identity: every rank gets the same output and the same "
            "gradient, so there is nothing left to sum."),
    Mistake("bias-added-on-every-rank",
            "The output holds ws times out_proj's bias: each rank added the full bias to its "
            "partial output before the all-reduce summed them.",
            "Add the row-parallel layer's bias once, after g (the all-reduce), not to each "
            "rank's partial sum."),
    Mistake("sharded-wrong-axis",
            "A weight is split along the wrong axis: a column-parallel layer keeps this rank's "
            "rows of W (its output features), a row-parallel one its columns (input features).",
            "ColumnParallelLinear.weight is (out/ws, in): W[r*out/ws:(r+1)*out/ws]; "
            "RowParallelLinear.weight is (out, in/ws): W[:, r*in/ws:(r+1)*in/ws]."),
    Mistake("fused-qkv-sliced-contiguously",
            "Each rank took its contiguous rows r*3E/ws ... of the fused in_proj_weight, so "
            "rank 0 got all of W_q and part of W_k, not a third of each.",
            "Split in_proj_weight into W_q, W_k, W_v first (chunk(3)), then take this rank's "
            "rows of each."),
    Mistake("heads-not-contiguous",
            "A rank's rows are strided (r, r + ws, ...) instead of whole contiguous heads: each "
            "local head mixes dimensions of different heads, or the rank holds the wrong heads.",
            "Rank r owns heads r*h/ws ... (r+1)*h/ws - 1: rows r*E/ws ... (r+1)*E/ws - 1 of each "
            "projection, and the same columns of out_proj."),
    Mistake("local-heads-wrong",
            "The local projections were split into h heads instead of h/ws: each head is then "
            "d/ws wide and mixes parts of the real ones.",
            "A rank holds h/ws heads of width d: view (b, n, E/ws) as (b, n, h/ws, d)."),
    Mistake("output-not-reduced",
            "Each rank returned its own partial output (its heads' share of out_proj) without "
            "the all-reduce that sums them.",
            "out_proj is row-parallel: all_reduce its partial x_r W_r^T over the ranks (g), "
            "then add the bias."),
    Mistake("all-gather-instead-of-reduce",
            "The layer gathered the per-head outputs or the weights onto every rank "
            "(all_gather) instead of summing partial outputs: it moves ws times the data and "
            "keeps a full copy of what tensor parallelism splits.",
            "Keep out_proj row-parallel: multiply the local heads by this rank's columns of W_o "
            "and all_reduce the (b, n, E) partial sums."),
)


QUESTIONS = (
    Question("With tensor parallelism over ws ranks, how many all-reduces does one attention "
             "layer need in a training step (forward and backward together)?", 2, INTEGER,
             "One in the forward (g, after out_proj's matmul) and one in the backward (f, for "
             "x's gradient), whatever ws is."),
    Question("E = 16, h = 4, ws = 2: which rows of in_proj_weight (3E, E) does rank 1 keep "
             "for W_k?", "B", CHOICE,
             "W_k is rows 16 ... 31 of in_proj_weight; rank 1 owns heads 2 and 3, i.e. rows "
             "8 ... 15 of W_k: rows 24 ... 31.",
             choices=("rows 8 ... 15", "rows 24 ... 31", "rows 16 ... 23")),
)


# Shared mistakes in this kata's words.
WORDINGS = (
    Mistake("input-modified-in-place",
            "The caller's x (or mask) was modified in place, e.g. all-reduced into itself by f: "
            "x is the same on every rank and the caller may still need it (a residual "
            "connection adds it back).",
            "f is the identity forward (return x, or x.view_as(x)); all-reduce a new tensor, "
            "e.g. the gradient in f's backward or out_proj's partial output in g's forward."),
)
