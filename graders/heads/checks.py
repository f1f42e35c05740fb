"""Grader for kata 02: ``split_heads`` / ``merge_heads`` and their seq-first twins.

Expected layouts are PyTorch's own: ``F.multi_head_attention_forward`` splits a projected
``(seq, batch, E)`` tensor with ``q.view(seq, batch * heads, head_dim).transpose(0, 1)`` and
merges with ``attn.transpose(0, 1).contiguous().view(...)``. The references below write
that down, with one switch per catalogued mistake; the grader runs a reference with a
switch flipped to recognise that mistake. Beyond the layouts themselves, multi-head
attention is assembled from the learner's functions (projections and attention done by
the grader with the weights of a random ``nn.MultiheadAttention``) and compared, output
and per-head weights, with ``nn.MultiheadAttention`` itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graders.core.i18n import N_, _
from graders.twins.reference import attend
from graders.core.compare import expect_close, expect_grads_close, expect_tracks_grad
from graders.core.implementation import Implementation
from graders.core.inputs import (
    drawn_cases,
    bool_mask,
    grads_of,
    leaf_copies,
    randn,
    randomize_,
    weighted_sum,
)
from graders.core.mistakes import Suspect
from graders.core.report import describe_inputs, title

__all__ = [
    "test_split_heads",
    "test_merge_heads",
    "test_split_heads_seq_first",
    "test_merge_heads_seq_first",
    "test_seq_first_heads_match_pytorch_attention",
    "test_batch_first_heads_match_pytorch_attention",
    "test_heads_random_shapes",
    "test_heads_non_contiguous_inputs",
    "test_heads_gradients",
    "test_heads_float64",
    "test_heads_half_precision_on_cuda",
]

# A switch of the references below -> the catalogued mistake it reproduces.
MISTAKE_OF = {
    "reshape": "reshape-without-transpose",
    # seq-first: batch moved to the front, but the heads reshaped without their transpose
    "reshape-batch-first": "reshape-without-transpose",
    "interleaved": "heads-interleaved",
    "head-major": "batch-head-order",
}


def slug_for_exception(exc: BaseException) -> str | None:
    """``.view`` on a tensor whose memory does not allow it (typically after a transpose)."""
    if isinstance(exc, RuntimeError) and "view size is not compatible" in str(exc):
        return "non-contiguous-view"
    return None


# --------------------------------------------------------------------------- references
# reshape (not view) everywhere, so the references accept non-contiguous inputs too.


def split_heads_ref(x: Tensor, num_heads: int, mistake: str | None = None) -> Tensor:
    """(batch, seq, heads*head_dim) -> (batch, heads, seq, head_dim)."""
    batch, seq, width = x.shape
    h, d = num_heads, width // num_heads
    if mistake == "reshape":
        return x.reshape(batch, h, seq, d)
    if mistake == "interleaved":  # head i gets columns i, i+h, i+2h, ...
        return x.reshape(batch, seq, d, h).permute(0, 3, 1, 2)
    return x.reshape(batch, seq, h, d).transpose(1, 2)


def merge_heads_ref(x: Tensor, batch_size: int | None = None, mistake: str | None = None) -> Tensor:
    """(batch, heads, seq, head_dim) -> (batch, seq, heads*head_dim). ``batch_size`` is unused:
    it is there to share a signature with :func:`merge_heads_seq_first_ref`."""
    batch, h, seq, d = x.shape
    if mistake == "reshape":
        return x.reshape(batch, seq, h * d)
    if mistake == "interleaved":  # column k*h + i taken from head i
        return x.permute(0, 2, 3, 1).reshape(batch, seq, d * h)
    return x.transpose(1, 2).reshape(batch, seq, h * d)


def split_heads_seq_first_ref(x: Tensor, num_heads: int, mistake: str | None = None) -> Tensor:
    """(seq, batch, heads*head_dim) -> (batch*heads, seq, head_dim), row i*heads + j = (i, j)."""
    seq, batch, width = x.shape
    h, d = num_heads, width // num_heads
    if mistake == "reshape":
        return x.reshape(batch * h, seq, d)
    if mistake == "reshape-batch-first":
        return x.transpose(0, 1).reshape(batch * h, seq, d)
    if mistake == "interleaved":
        return x.reshape(seq, batch, d, h).permute(1, 3, 0, 2).reshape(batch * h, seq, d)
    if mistake == "head-major":  # row j*batch + i
        return x.reshape(seq, batch, h, d).permute(2, 1, 0, 3).reshape(h * batch, seq, d)
    # What F.multi_head_attention_forward does to q, k and v.
    return x.reshape(seq, batch * h, d).transpose(0, 1)


def merge_heads_seq_first_ref(x: Tensor, batch_size: int, mistake: str | None = None) -> Tensor:
    """(batch*heads, seq, head_dim) -> (seq, batch, heads*head_dim)."""
    rows, seq, d = x.shape
    batch, h = batch_size, rows // batch_size
    if mistake == "reshape":
        return x.reshape(seq, batch, h * d)
    if mistake == "reshape-batch-first":
        return x.reshape(batch, seq, h * d).transpose(0, 1)
    if mistake == "interleaved":
        return x.reshape(batch, h, seq, d).permute(2, 0, 3, 1).reshape(seq, batch, d * h)
    if mistake == "head-major":
        return x.reshape(h, batch, seq, d).permute(2, 1, 0, 3).reshape(seq, batch, h * d)
    return x.transpose(0, 1).reshape(seq, batch, h * d)


@dataclass(frozen=True)
class Layout:
    """One pair of functions: the learner's names, the references, the mistakes that apply."""

    split: str
    merge: str
    split_ref: Callable[..., Tensor]
    merge_ref: Callable[..., Tensor]
    mistakes: tuple[str, ...]
    batch_first: bool

    def split_input(self, b, n, h, d, seed, dtype=torch.float32, device="cpu", *,
                    contiguous=True) -> Tensor:
        """(b, n, h*d) or (n, b, h*d); a transposed view of the other layout if not contiguous."""
        shape = (b, n) if self.batch_first ^ (not contiguous) else (n, b)
        x = randn(*shape, h * d, seed=seed, dtype=dtype, device=device)
        return x if contiguous else x.transpose(0, 1)

    def merge_input(self, b, n, h, d, seed, dtype=torch.float32, device="cpu", *,
                    contiguous=True) -> Tensor:
        """(b, h, n, d) or (b*h, n, d); with the last two axes transposed if not contiguous."""
        lead = (b, h) if self.batch_first else (b * h,)
        if contiguous:
            return randn(*lead, n, d, seed=seed, dtype=dtype, device=device)
        return randn(*lead, d, n, seed=seed, dtype=dtype, device=device).transpose(-2, -1)


BATCH_FIRST = Layout("split_heads", "merge_heads", split_heads_ref, merge_heads_ref,
                     ("reshape", "interleaved"), batch_first=True)
SEQ_FIRST = Layout("split_heads_seq_first", "merge_heads_seq_first", split_heads_seq_first_ref,
                   merge_heads_seq_first_ref,
                   ("reshape", "reshape-batch-first", "interleaved", "head-major"),
                   batch_first=False)
LAYOUTS = (BATCH_FIRST, SEQ_FIRST)


def split_suspects(layout: Layout, x: Tensor, num_heads: int) -> list[Suspect]:
    return [Suspect(MISTAKE_OF[m], predict=lambda m=m: layout.split_ref(x, num_heads, m))
            for m in layout.mistakes]


def merge_suspects(layout: Layout, x: Tensor, batch_size: int) -> list[Suspect]:
    return [Suspect(MISTAKE_OF[m], predict=lambda m=m: layout.merge_ref(x, batch_size, m))
            for m in layout.mistakes]


def round_trip_suspects(layout: Layout, x: Tensor, num_heads: int) -> list[Suspect]:
    """merge(split(x)) with a mistake in just one of the two (the same one in both cancels)."""
    batch = x.size(0 if layout.batch_first else 1)
    suspects = []
    for m in layout.mistakes:
        for ms, mm in ((m, None), (None, m)):
            suspects.append(Suspect(MISTAKE_OF[m], predict=lambda ms=ms, mm=mm: layout.merge_ref(
                layout.split_ref(x, num_heads, ms), batch, mm)))
    return suspects


# --------------------------------------------------------------------- calling the learner


def call_split(impl: Implementation, layout: Layout, x: Tensor, num_heads: int,
               note: str = "") -> tuple[Tensor, str]:
    on = describe_inputs(x=x, num_heads=num_heads) + note
    got = impl.call(impl.attr(layout.split), x, num_heads, what=layout.split, on=on)
    return got, on


def call_merge(impl: Implementation, layout: Layout, x: Tensor, batch_size: int,
               note: str = "") -> tuple[Tensor, str]:
    if layout.batch_first:
        on = describe_inputs(x=x) + note
        got = impl.call(impl.attr(layout.merge), x, what=layout.merge, on=on)
    else:
        on = describe_inputs(x=x, batch_size=batch_size) + note
        got = impl.call(impl.attr(layout.merge), x, batch_size, what=layout.merge, on=on)
    return got, on


def check_split(impl, layout: Layout, x: Tensor, num_heads: int, note: str = "") -> Tensor:
    """The learner's split of ``x`` against the reference; returns the learner's output."""
    got, on = call_split(impl, layout, x, num_heads, note)
    expect_close(got, layout.split_ref(x, num_heads), layout.split, on,
                 split_suspects(layout, x, num_heads))
    return got


def check_merge(impl, layout: Layout, x: Tensor, batch_size: int, note: str = "") -> Tensor:
    got, on = call_merge(impl, layout, x, batch_size, note)
    expect_close(got, layout.merge_ref(x, batch_size), layout.merge, on,
                 merge_suspects(layout, x, batch_size))
    return got


def check_round_trip(impl, layout: Layout, x: Tensor, num_heads: int, note: str = "") -> None:
    """merge(split(x)) gives x back; merge gets split's (usually non-contiguous) output."""
    heads, on = call_split(impl, layout, x, num_heads, note)
    batch = x.size(0 if layout.batch_first else 1)
    back, _ = call_merge(impl, layout, heads, batch, note)
    expect_close(back, x, f"{layout.merge}({layout.split}(x)) == x", on,
                 round_trip_suspects(layout, x, num_heads))


def check_layout(impl, layout: Layout, b, n, h, d, seed, dtype=torch.float32, device="cpu",
                 contiguous=True) -> None:
    """Split, merge and the round trip, on inputs of the given sizes.

    A non-contiguous input is first given as a contiguous copy, so that a wrong layout is
    named as such before .view() gets a chance to fail on the strides.
    """
    note = "" if contiguous else _(" (non-contiguous: a transposed tensor)")
    x = layout.split_input(b, n, h, d, seed, dtype, device, contiguous=contiguous)
    y = layout.merge_input(b, n, h, d, seed + 1, dtype, device, contiguous=contiguous)
    if not contiguous:
        check_split(impl, layout, x.contiguous(), h)
        check_merge(impl, layout, y.contiguous(), b)
    check_split(impl, layout, x, h, note)
    check_merge(impl, layout, y, b, note)
    check_round_trip(impl, layout, x, h, note)


# Sizes (batch, seq, heads, head_dim): batch != heads, seq != head_dim, and a batch of one.
SHAPES = ((2, 5, 3, 4), (3, 4, 2, 6), (1, 6, 4, 2))


@title(N_("split_heads"))
@pytest.mark.core
def test_split_heads(impl):
    """(b, n, h*d) -> (b, h, n, d): head i holds columns i*d:(i+1)*d."""
    for i, (b, n, h, d) in enumerate(SHAPES):
        check_split(impl, BATCH_FIRST, BATCH_FIRST.split_input(b, n, h, d, seed=10 + i), h)


@title(N_("merge_heads"))
@pytest.mark.core
def test_merge_heads(impl):
    """(b, h, n, d) -> (b, n, h*d), and merge_heads(split_heads(x)) == x."""
    for i, (b, n, h, d) in enumerate(SHAPES):
        check_merge(impl, BATCH_FIRST, BATCH_FIRST.merge_input(b, n, h, d, seed=20 + i), b)
        check_round_trip(impl, BATCH_FIRST, BATCH_FIRST.split_input(b, n, h, d, seed=25 + i), h)


@title(N_("split_heads_seq_first"))
@pytest.mark.core
def test_split_heads_seq_first(impl):
    """(n, b, h*d) -> (b*h, n, d), row i*h + j = batch i, head j (PyTorch's layout)."""
    for i, (b, n, h, d) in enumerate(SHAPES):
        check_split(impl, SEQ_FIRST, SEQ_FIRST.split_input(b, n, h, d, seed=30 + i), h)


@title(N_("merge_heads_seq_first"))
@pytest.mark.core
def test_merge_heads_seq_first(impl):
    """(b*h, n, d) -> (n, b, h*d), and the round trip gives x back."""
    for i, (b, n, h, d) in enumerate(SHAPES):
        check_merge(impl, SEQ_FIRST, SEQ_FIRST.merge_input(b, n, h, d, seed=40 + i), b)
        check_round_trip(impl, SEQ_FIRST, SEQ_FIRST.split_input(b, n, h, d, seed=45 + i), h)


# ------------------------------------------------- multi-head attention built on the heads


def pytorch_twin(embed_dim: int, num_heads: int, batch_first: bool, seed: int,
                 dtype=torch.float32) -> nn.MultiheadAttention:
    """nn.MultiheadAttention with random weights and biases, in eval mode (no dropout)."""
    twin = nn.MultiheadAttention(embed_dim, num_heads, batch_first=batch_first, dtype=dtype)
    return randomize_(twin, seed).eval()


Split = Callable[[Tensor, int], Tensor]  # (x, num_heads) -> heads
Merge = Callable[[Tensor, int], Tensor]  # (heads, batch_size) -> x


def attention_from_heads(twin: nn.MultiheadAttention, query, key, value, mask,
                         split: Split, merge: Merge) -> tuple[Tensor, Tensor]:
    """nn.MultiheadAttention's computation with the heads made by ``split`` and ``merge``.

    ``mask`` is bool (batch*heads, n, m), rows batch-major as nn.MultiheadAttention reads
    them. Returns the output (shaped like query) and per-head weights (batch, heads, n, m).
    """
    h = twin.num_heads
    weights_qkv = twin.in_proj_weight.chunk(3)
    biases_qkv = twin.in_proj_bias.chunk(3)
    q, k, v = (F.linear(x, w, bias) for x, w, bias in zip((query, key, value), weights_qkv,
                                                          biases_qkv))
    seq_dim, batch_dim = (1, 0) if twin.batch_first else (0, 1)
    batch, n, m = query.size(batch_dim), query.size(seq_dim), key.size(seq_dim)
    heads_mask = mask.view(batch, h, n, m) if twin.batch_first else mask
    attended, weights = attend(split(q, h), split(k, h), split(v, h), heads_mask)
    output = F.linear(merge(attended, batch), twin.out_proj.weight, twin.out_proj.bias)
    return output, weights.reshape(batch, h, n, m)


def expect_form(got, expected: Tensor, check: str, on: str, suspects) -> None:
    """Fail (naming a mistake if possible) unless ``got`` is a tensor of expected's shape,
    dtype and device; values are compared later, further down the computation."""
    if (not isinstance(got, Tensor) or got.shape != expected.shape or got.dtype != expected.dtype
            or got.device != expected.device):
        expect_close(got, expected, check, on, suspects)


def learner_heads(impl: Implementation, layout: Layout) -> tuple[Split, Merge]:
    """The learner's split and merge, each output checked for shape/dtype before use."""

    def split(x: Tensor, num_heads: int) -> Tensor:
        got, on = call_split(impl, layout, x, num_heads)
        expect_form(got, layout.split_ref(x, num_heads), layout.split, on,
                    split_suspects(layout, x, num_heads))
        return got

    def merge(x: Tensor, batch_size: int) -> Tensor:
        got, on = call_merge(impl, layout, x, batch_size)
        expect_form(got, layout.merge_ref(x, batch_size), layout.merge, on,
                    merge_suspects(layout, x, batch_size))
        return got

    return split, merge


def attention_suspects(layout: Layout, twin, query, key, value, mask, index: int) -> list[Suspect]:
    """Attention built on a mistaken split, a mistaken merge, or both (output if index 0,
    weights if 1)."""
    pairs = [(ms, mm) for ms in (None, *layout.mistakes) for mm in (None, *layout.mistakes)
             if (ms, mm) != (None, None)
             and (ms is None or mm is None or MISTAKE_OF[ms] == MISTAKE_OF[mm])]

    def predict(ms, mm):
        return attention_from_heads(
            twin, query, key, value, mask,
            lambda x, h: layout.split_ref(x, h, ms), lambda x, b: layout.merge_ref(x, b, mm),
        )[index]

    return [Suspect(MISTAKE_OF[ms or mm], predict=lambda ms=ms, mm=mm: predict(ms, mm))
            for ms, mm in pairs]


def check_attention_from_heads(impl, layout: Layout, *, b=3, n=5, m=7, h=3, d=4, seed=100,
                               dtype=torch.float32, check_grads=False) -> None:
    """Attention assembled from the learner's heads against nn.MultiheadAttention."""
    embed_dim = h * d
    twin = pytorch_twin(embed_dim, h, layout.batch_first, seed, dtype)

    def sequence(length: int, offset: int) -> Tensor:
        shape = (b, length, embed_dim) if layout.batch_first else (length, b, embed_dim)
        return randn(*shape, seed=seed + offset, dtype=dtype)

    base = (sequence(n, 1), sequence(m, 2), sequence(m, 3))
    # A different mask for every (batch, head) row: a row in the wrong place shows.
    mask = bool_mask(b * h, n, m, seed=seed + 4)
    q, k, v = leaf_copies(*base)
    on = describe_inputs(query=q, key=k, value=v, attn_mask=mask, num_heads=h)
    check = _("attention built on your {split} / {merge} vs nn.MultiheadAttention (same "
              "weights)", split=layout.split, merge=layout.merge)
    output, weights = attention_from_heads(twin, q, k, v, mask, *learner_heads(impl, layout))
    rq, rk, rv = leaf_copies(*base)
    ref_out, ref_w = twin(rq, rk, rv, attn_mask=mask, need_weights=True,
                          average_attn_weights=False)
    expect_close(output, ref_out, _("{check}: the output", check=check), on,
                 attention_suspects(layout, twin, *base, mask, 0))
    expect_close(weights, ref_w, _("{check}: the weights (batch, heads, n, m)", check=check), on,
                 attention_suspects(layout, twin, *base, mask, 1))
    if not check_grads:
        return
    expect_tracks_grad({_("the output"): output}, _("{check}: backward", check=check), on)
    got = grads_of(weighted_sum([output], seed=seed + 5), {"query": q, "key": k, "value": v},
                   on=on)
    expected = grads_of(weighted_sum([ref_out], seed=seed + 5),
                        {"query": rq, "key": rk, "value": rv})
    expect_grads_close(got, expected, _("{check}: backward", check=check), on)


@title(N_("seq-first heads against PyTorch's attention"))
@pytest.mark.core
def test_seq_first_heads_match_pytorch_attention(impl):
    """(seq, batch, E) attention from split_heads_seq_first / merge_heads_seq_first equals
    nn.MultiheadAttention's output and per-head weights (n != m, a mask per batch and head)."""
    check_attention_from_heads(impl, SEQ_FIRST, seed=100)
    check_attention_from_heads(impl, SEQ_FIRST, b=2, n=4, m=3, h=4, d=2, seed=110)


@title(N_("batch-first heads against PyTorch's attention"))
@pytest.mark.core
def test_batch_first_heads_match_pytorch_attention(impl):
    """The same with batch_first=True, from split_heads / merge_heads."""
    check_attention_from_heads(impl, BATCH_FIRST, seed=120)
    check_attention_from_heads(impl, BATCH_FIRST, b=2, n=4, m=3, h=4, d=2, seed=130)


def head_sizes(rng):
    b, n = rng.randint(1, 3), rng.randint(1, 5)
    h, d = rng.randint(1, 4), rng.randint(1, 5)
    return b, n, h, d, rng.randint(0, 10_000)


@title(N_("heads on random shapes"))
@pytest.mark.core
def test_heads_random_shapes(impl):
    """Random sizes, drawn from a fixed seed (the same cases every run), both layouts."""
    for b, n, h, d, seed in drawn_cases(head_sizes):
        for layout in LAYOUTS:
            check_layout(impl, layout, b, n, h, d, seed)


# ------------------------------------------------------------------------------ follow-ups


@title(N_("non-contiguous inputs"))
@pytest.mark.followup
def test_heads_non_contiguous_inputs(impl):
    """Inputs that are transposed views (a batch-first tensor handed over as seq-first, say):
    .view() may refuse them, .reshape() does not."""
    for layout in LAYOUTS:
        check_layout(impl, layout, 2, 5, 3, 4, seed=200, contiguous=False)


@title(N_("gradients flow through every function"))
@pytest.mark.followup
def test_heads_gradients(impl):
    """Gradients flow back through every function (no detach, no rebuilt tensors), and through
    attention built on the heads they equal nn.MultiheadAttention's."""
    b, n, h, d = 2, 5, 3, 4
    for i, layout in enumerate(LAYOUTS):
        x, y = leaf_copies(layout.split_input(b, n, h, d, seed=300 + i),
                           layout.merge_input(b, n, h, d, seed=305 + i))
        split = check_split(impl, layout, x, h)
        merged = check_merge(impl, layout, y, b)
        on = f"{describe_inputs(x=x, num_heads=h)}; heads {tuple(y.shape)}"
        check = _("backward through {split} and {merge}", split=layout.split, merge=layout.merge)
        expect_tracks_grad({_("the output of {name}", name=layout.split): split,
                            _("the output of {name}", name=layout.merge): merged}, check, on)
        got = grads_of(weighted_sum([split, merged], seed=310), {"x": x, "heads": y}, on=on)
        rx, ry = leaf_copies(x, y)
        expected = grads_of(
            weighted_sum([layout.split_ref(rx, h), layout.merge_ref(ry, b)], seed=310),
            {"x": rx, "heads": ry})
        expect_grads_close(got, expected, check, on)
    check_attention_from_heads(impl, SEQ_FIRST, seed=320, check_grads=True)
    check_attention_from_heads(impl, BATCH_FIRST, seed=330, check_grads=True)


@title(N_("heads in float64"))
@pytest.mark.followup
def test_heads_float64(impl):
    """float64 in, float64 out; attention built on the heads at float64 precision."""
    for layout in LAYOUTS:
        check_layout(impl, layout, 2, 5, 3, 4, seed=400, dtype=torch.float64)
    check_attention_from_heads(impl, SEQ_FIRST, seed=410, dtype=torch.float64)
    check_attention_from_heads(impl, BATCH_FIRST, seed=420, dtype=torch.float64)


@title(N_("half precision on a CUDA GPU"))
@pytest.mark.followup
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_heads_half_precision_on_cuda(impl):
    """float16 and bfloat16 on the GPU keep their dtype and device."""
    for dtype in (torch.float16, torch.bfloat16):
        for layout in LAYOUTS:
            check_layout(impl, layout, 2, 5, 3, 4, seed=500, dtype=dtype, device="cuda")
