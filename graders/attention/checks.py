"""Grader for kata 01: ``scaled_dot_product_attention`` and ``SingleHeadAttention``.

Expected numbers come from PyTorch: ``F.scaled_dot_product_attention`` (its bool mask
means "may attend", so ours is negated for it) and ``nn.MultiheadAttention(d, 1)``
loaded with the same weights. :func:`attend` is a reference with one switch per
catalogued mistake; the grader runs it with a switch flipped to recognise that mistake.
"""

from __future__ import annotations

import itertools
import math

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graders.core.i18n import N_, _
from graders.core.compare import expect_close, expect_grads_close, expect_tracks_grad, expect_tuple
from graders.core.implementation import Implementation
from graders.core.inputs import (
    drawn_cases,
    bool_mask,
    float_mask,
    grads_of,
    leaf_copies,
    randn,
    randomize_,
    weighted_sum,
)
from graders.core.mistakes import Suspect
from graders.twins.reference import NEG_INF, additive_mask, attend
from graders.core.report import describe_inputs, title

__all__ = [
    "test_attention_without_mask",
    "test_attention_bool_mask",
    "test_attention_float_mask",
    "test_attention_random_shapes",
    "test_single_head_matches_pytorch",
    "test_attention_float64",
    "test_attention_gradients",
    "test_attention_fully_masked_rows",
    "test_attention_fully_masked_gradients",
    "test_attention_half_precision_on_cuda",
    "test_single_head_batch_first_and_no_bias",
    "test_single_head_masks",
    "test_single_head_gradients",
    "test_single_head_fully_masked_rows",
]

# --------------------------------------------------------------------------- references


def attention_suspects(query, key, value, mask, index: int) -> list[Suspect]:
    """What each catalogued mistake would return (output if index 0, weights if 1)."""

    def variant(slug: str, **switches) -> Suspect:
        return Suspect(slug, predict=lambda: attend(query, key, value, mask, **switches)[index])

    d_k, d_v = query.size(-1), value.size(-1)
    n, m = query.size(-2), key.size(-2)
    suspects = [variant("missing-scale", scale=1.0)]
    for wrong in (1 / d_k, 1 / math.sqrt(d_v), 1 / math.sqrt(m), 1 / math.sqrt(n),
                  math.sqrt(d_k), 1 / d_v):
        suspects.append(variant("wrong-scale", scale=wrong))
    for dim in range(-2, -query.dim() - 1, -1):
        suspects.append(variant("softmax-wrong-dim", softmax_dim=dim))
    if mask is not None and mask.dtype == torch.bool:
        suspects.append(variant("mask-inverted", invert_mask=True))
    if mask is not None:
        suspects.append(variant("mask-after-softmax", mask_after_softmax="zero"))
        suspects.append(variant("mask-after-softmax", mask_after_softmax="add"))
    return suspects


def pytorch_attention(query, key, value, mask) -> Tensor:
    """PyTorch's output. F.scaled_dot_product_attention's bool mask means 'may attend'."""
    if mask is not None and mask.dtype == torch.bool:
        mask = ~mask
    return F.scaled_dot_product_attention(query, key, value, attn_mask=mask)


# ------------------------------------------------------------- scaled_dot_product_attention


def run_attention(impl: Implementation, query, key, value, mask=None):
    """Call the learner's function; returns (output, weights, description of the input)."""
    on = describe_inputs(query=query, key=key, value=value, attn_mask=mask)
    fn = impl.attr("scaled_dot_product_attention")
    kwargs = {} if mask is None else {"attn_mask": mask}
    result = impl.call(fn, query, key, value, what="scaled_dot_product_attention", on=on, **kwargs)
    output, weights = expect_tuple(result, 2, "scaled_dot_product_attention", on, "output, weights")
    return output, weights, on


def check_attention(impl: Implementation, query, key, value, mask=None) -> None:
    """Output against PyTorch's, weights against the reference, mistakes named."""
    output, weights, on = run_attention(impl, query, key, value, mask)
    expect_close(output, pytorch_attention(query, key, value, mask), _("the output"), on,
                 attention_suspects(query, key, value, mask, 0))
    expect_close(weights, attend(query, key, value, mask)[1], _("the attention weights"), on,
                 attention_suspects(query, key, value, mask, 1))


def qkv(lead: tuple[int, ...], n: int, m: int, d_k: int, d_v: int, seed: int,
        dtype=torch.float32, device="cpu"):
    return (randn(*lead, n, d_k, seed=seed, dtype=dtype, device=device),
            randn(*lead, m, d_k, seed=seed + 1, dtype=dtype, device=device),
            randn(*lead, m, d_v, seed=seed + 2, dtype=dtype, device=device))


@title(N_("attention without a mask"))
@pytest.mark.core
def test_attention_without_mask(impl):
    """(b, n, d), (b, h, n, d) and unbatched (n, d) inputs; n != m, d_k != d_v."""
    for lead, n, m, d_k, d_v in [((2,), 5, 7, 8, 6), ((2, 3), 4, 6, 8, 8), ((), 5, 3, 4, 5)]:
        check_attention(impl, *qkv(lead, n, m, d_k, d_v, seed=10 + n))


@title(N_("attention with a bool mask"))
@pytest.mark.core
def test_attention_bool_mask(impl):
    """True = blocked. A mask per batch element, one shared (n, m), one broadcast over heads."""
    q, k, v = qkv((3,), 4, 6, 8, 5, seed=20)
    check_attention(impl, q, k, v, bool_mask(3, 4, 6, seed=21))
    check_attention(impl, q, k, v, bool_mask(4, 6, seed=22))
    q, k, v = qkv((2, 3), 5, 4, 6, 6, seed=23)
    check_attention(impl, q, k, v, bool_mask(2, 1, 5, 4, seed=24))


@title(N_("attention with a float mask"))
@pytest.mark.core
def test_attention_float_mask(impl):
    """A float mask is added to the logits (values and -inf)."""
    q, k, v = qkv((2,), 4, 6, 8, 5, seed=30)
    check_attention(impl, q, k, v, float_mask(2, 4, 6, seed=31))
    check_attention(impl, q, k, v, randn(4, 6, seed=32))


def attention_case(rng):
    lead = tuple(rng.randint(1, 3) for _ in range(rng.randint(0, 2)))
    n, m = rng.randint(1, 6), rng.randint(1, 6)
    d_k, d_v = rng.randint(1, 8), rng.randint(1, 8)
    mask_kind = rng.choice([None, "bool", "float"])
    mask_lead = rng.choice([lead, ()])  # per batch element, or shared
    return lead, n, m, d_k, d_v, mask_kind, mask_lead, rng.randint(0, 10_000)


@title(N_("attention on random shapes and masks"))
@pytest.mark.core
def test_attention_random_shapes(impl):
    """Random shapes and masks, drawn from a fixed seed (the same cases every run)."""
    for lead, n, m, d_k, d_v, mask_kind, mask_lead, seed in drawn_cases(attention_case):
        mask = None
        if mask_kind == "bool":
            mask = bool_mask(*mask_lead, n, m, seed=seed + 3)
        elif mask_kind == "float":
            mask = randn(*mask_lead, n, m, seed=seed + 3)
        check_attention(impl, *qkv(lead, n, m, d_k, d_v, seed=seed), mask)


@title(N_("attention in float64"))
@pytest.mark.followup
def test_attention_float64(impl):
    """float64 in, float64 out, at float64 precision."""
    q, k, v = qkv((2,), 4, 6, 8, 5, seed=40, dtype=torch.float64)
    check_attention(impl, q, k, v, bool_mask(2, 4, 6, seed=41))


@title(N_("gradients of the inputs"))
@pytest.mark.followup
def test_attention_gradients(impl):
    """Gradients of query, key and value (through output and weights) equal PyTorch's."""
    base = qkv((2, 2), 4, 6, 8, 5, seed=50)
    mask = bool_mask(2, 1, 4, 6, seed=51)
    q, k, v = leaf_copies(*base)
    output, weights, on = run_attention(impl, q, k, v, mask)
    expect_close(output, pytorch_attention(*base, mask), _("the output"), on,
                 attention_suspects(*base, mask, 0))
    expect_tracks_grad({_("the output"): output, _("the weights"): weights}, _("backward"), on)
    got = grads_of(weighted_sum([output, weights], seed=52), {"query": q, "key": k, "value": v},
                   on=on)
    rq, rk, rv = leaf_copies(*base)
    ref_out = pytorch_attention(rq, rk, rv, mask)
    ref_w = attend(rq, rk, rv, mask)[1]
    expected = grads_of(weighted_sum([ref_out, ref_w], seed=52), {"query": rq, "key": rk, "value": rv})
    expect_grads_close(got, expected, _("backward through output and weights"), on)


def fully_masked_case(seed: int):
    """(2, 4, 6) inputs whose mask blocks every key of queries (0, 1) and (1, 3)."""
    q, k, v = qkv((2,), 4, 6, 8, 5, seed=seed)
    mask = bool_mask(2, 4, 6, seed=seed + 3)
    mask[0, 1] = True
    mask[1, 3] = True
    rows = torch.zeros(2, 4, 1, dtype=torch.bool)
    rows[0, 1] = rows[1, 3] = True
    return q, k, v, mask, rows


def nan_on_rows(rows: Tensor) -> Suspect:
    """The nan-on-fully-masked mistake: NaN in the fully masked rows (and only there)."""

    def matches(got) -> bool:
        nan = torch.isnan(got.detach().cpu())
        return bool(nan[rows.expand_as(nan)].any()) and not bool(nan[~rows.expand_as(nan)].any())

    return Suspect("nan-on-fully-masked", matches=matches)


def has_nan(got) -> bool:
    """In a gradient: where the forward is right, NaN can only come from the masked rows."""
    return isinstance(got, Tensor) and bool(torch.isnan(got.detach()).any())


# What the annotated transformer writes: masked_fill(mask, -1e9). Right until a row is
# fully masked, where it attends uniformly instead of giving zeros.
ANNOTATED_FILL = -1e9


def fully_masked_suspects(rows: Tensor, reproduce) -> list[Suspect]:
    """NaN in the fully masked rows, or the -1e9 fill; ``reproduce(**switches)`` computes
    what the code under test would return with one of :func:`attend`'s switches."""
    return [nan_on_rows(rows),
            Suspect("finite-mask-fill", predict=lambda: reproduce(fill_value=ANNOTATED_FILL))]


def as_float_mask(mask: Tensor, seed: int) -> Tensor:
    """The same blocked positions as a float mask: -inf there, moderate values elsewhere."""
    return randn(*mask.shape, seed=seed).masked_fill(mask, NEG_INF)


@title(N_("fully masked rows give zeros (not NaN)"))
@pytest.mark.followup
def test_attention_fully_masked_rows(impl):
    """A query whose keys are all blocked gets zero weights and a zero output, not NaN."""
    q, k, v, mask, rows = fully_masked_case(seed=60)
    output, weights, on = run_attention(impl, q, k, v, mask)
    on += _("; queries (0, 1) and (1, 3) fully masked")
    expected_out, expected_w = attend(q, k, v, mask)
    expect_close(weights, expected_w, _("the attention weights"), on,
                 fully_masked_suspects(rows, lambda **s: attend(q, k, v, mask, **s)[1]))
    expect_close(output, expected_out, _("the output"), on,
                 fully_masked_suspects(rows, lambda **s: attend(q, k, v, mask, **s)[0]))


@title(N_("finite gradients through fully masked rows"))
@pytest.mark.followup
def test_attention_fully_masked_gradients(impl):
    """Backward through fully masked rows gives finite gradients (those rows contribute
    nothing), with a bool mask and with a float mask whose row is all -inf."""
    base_q, base_k, base_v, bool_blocked, rows = fully_masked_case(seed=65)
    for mask in (bool_blocked, as_float_mask(bool_blocked, seed=69)):
        q, k, v = leaf_copies(base_q, base_k, base_v)
        output, weights, on = run_attention(impl, q, k, v, mask)
        on += _("; queries (0, 1) and (1, 3) fully masked")
        rq, rk, rv = leaf_copies(base_q, base_k, base_v)
        ref_out, ref_w = attend(rq, rk, rv, mask)
        for got, ref, what, index in ((weights, ref_w, _("the attention weights"), 1),
                                      (output, ref_out, _("the output"), 0)):
            expect_close(got, ref.detach(), what, on, fully_masked_suspects(
                rows, lambda index=index, **s: attend(base_q, base_k, base_v, mask, **s)[index]))
        expect_tracks_grad({_("the output"): output, _("the weights"): weights}, _("backward"), on)
        got = grads_of(weighted_sum([output, weights], seed=66),
                       {"query": q, "key": k, "value": v}, on=on)
        expected = grads_of(weighted_sum([ref_out, ref_w], seed=66),
                            {"query": rq, "key": rk, "value": rv})
        expect_grads_close(got, expected, _("backward through fully masked rows"), on,
                           [Suspect("nan-on-fully-masked", matches=has_nan)])


@title(N_("half precision on a CUDA GPU"))
@pytest.mark.followup
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_attention_half_precision_on_cuda(impl):
    """float16 and bfloat16 on the GPU keep their dtype and device."""
    for dtype in (torch.float16, torch.bfloat16):
        q, k, v = qkv((2, 2), 5, 7, 16, 8, seed=70, dtype=dtype, device="cuda")
        check_attention(impl, q, k, v, bool_mask(2, 1, 5, 7, seed=71, device="cuda"))


# ------------------------------------------------------------------ SingleHeadAttention


def pytorch_twin(d_model: int, bias: bool, batch_first: bool, seed: int,
                 dtype=torch.float32) -> nn.MultiheadAttention:
    """nn.MultiheadAttention(d_model, 1) with random weights and biases."""
    twin = nn.MultiheadAttention(d_model, 1, bias=bias, batch_first=batch_first, dtype=dtype)
    return randomize_(twin, seed)


def learner_state(twin: nn.MultiheadAttention) -> dict[str, Tensor]:
    """The twin's weights under the kata's names: in_proj_weight is q, k, v stacked."""
    state = {}
    for name, w in zip(("q_proj", "k_proj", "v_proj"), twin.in_proj_weight.detach().chunk(3)):
        state[f"{name}.weight"] = w.clone()
    state["out_proj.weight"] = twin.out_proj.weight.detach().clone()
    if twin.in_proj_bias is not None:
        for name, b in zip(("q_proj", "k_proj", "v_proj"), twin.in_proj_bias.detach().chunk(3)):
            state[f"{name}.bias"] = b.clone()
        state["out_proj.bias"] = twin.out_proj.bias.detach().clone()
    return state


def build_single_head(impl: Implementation, twin: nn.MultiheadAttention,
                      state: dict[str, Tensor]) -> nn.Module:
    """The learner's module with the twin's weights (``state``, see :func:`learner_state`)."""
    d, bias, batch_first = twin.embed_dim, twin.in_proj_bias is not None, twin.batch_first
    what = f"SingleHeadAttention({d}, bias={bias}, batch_first={batch_first})"
    cls = impl.attr("SingleHeadAttention")
    module = impl.call(cls, d, bias=bias, batch_first=batch_first, what=what, on=_("construction"))
    module = module.to(twin.in_proj_weight.dtype)
    impl.call(module.load_state_dict, state, what=f"{what}.load_state_dict",
              on=_("the submodules q_proj, k_proj, v_proj, out_proj"))
    return module


def single_head_reference(state: dict[str, Tensor], query, key, value, mask, batch_first: bool,
                          projections=("q_proj", "k_proj", "v_proj"), sources=(0, 1, 2),
                          out_proj: bool = True, **switches) -> tuple[Tensor, Tensor]:
    """The module as a function of its weights, with mistake switches (see :func:`attend`).

    ``projections`` names the weights applied to (query, key, value); ``sources`` says
    which input each projection is fed (0 query, 1 key, 2 value).
    """

    def linear(name, x):
        return F.linear(x, state[f"{name}.weight"], state.get(f"{name}.bias"))

    if not batch_first:
        query, key, value = (x.transpose(0, 1) for x in (query, key, value))
    inputs = [(query, key, value)[i] for i in sources]
    projected = [linear(p, x) for p, x in zip(projections, inputs)]
    attended, weights = attend(*projected, mask, **switches)
    output = linear("out_proj", attended) if out_proj else attended
    return (output if batch_first else output.transpose(0, 1)), weights


def single_head_suspects(state, query, key, value, mask, batch_first, index) -> list[Suspect]:
    def variant(slug, **switches) -> Suspect:
        return Suspect(slug, predict=lambda: single_head_reference(
            state, query, key, value, mask, batch_first, **switches)[index])

    names = ("q_proj", "k_proj", "v_proj")
    suspects = [variant("missing-out-proj", out_proj=False)]
    for a, b, c in itertools.product(range(3), repeat=3):
        if (a, b, c) != (0, 1, 2):
            suspects.append(variant("wrong-projection", projections=(names[a], names[b], names[c])))
            suspects.append(variant("wrong-projection", sources=(a, b, c)))
    d = query.size(-1)
    suspects += [variant("missing-scale", scale=1.0), variant("wrong-scale", scale=1 / d),
                 variant("softmax-wrong-dim", softmax_dim=-2)]
    if mask is not None and mask.dtype == torch.bool:
        suspects.append(variant("mask-inverted", invert_mask=True))
    if mask is not None:
        suspects.append(variant("mask-after-softmax", mask_after_softmax="zero"))
    return suspects


def check_single_head(impl, *, d=8, n=5, m=7, b=3, bias=True, batch_first=False, mask=None,
                      dtype=torch.float32, seed=100, check_grads=False) -> None:
    """The learner's module against nn.MultiheadAttention(d, 1) with the same weights."""
    twin = pytorch_twin(d, bias, batch_first, seed, dtype)
    state = learner_state(twin)
    module = build_single_head(impl, twin, state)
    shape = (lambda length: (b, length, d)) if batch_first else (lambda length: (length, b, d))
    base = (randn(*shape(n), seed=seed + 1, dtype=dtype), randn(*shape(m), seed=seed + 2, dtype=dtype),
            randn(*shape(m), seed=seed + 3, dtype=dtype))
    q, k, v = leaf_copies(*base)
    on = describe_inputs(query=q, key=k, value=v, attn_mask=mask) + \
        f" (batch_first={batch_first}, bias={bias})"
    result = impl.call(module, q, k, v, what="SingleHeadAttention.forward", on=on,
                       **({} if mask is None else {"attn_mask": mask}))
    output, weights = expect_tuple(result, 2, "SingleHeadAttention.forward", on, "output, weights")
    rq, rk, rv = leaf_copies(*base)
    ref_out, ref_w = twin(rq, rk, rv, attn_mask=mask, need_weights=True)
    expect_close(output, ref_out, _("the output"), on,
                 single_head_suspects(state, *base, mask, batch_first, 0))
    expect_close(weights, ref_w, _("the attention weights (batch, n, m)"), on,
                 single_head_suspects(state, *base, mask, batch_first, 1))
    if not check_grads:
        return
    params = dict(module.named_parameters())
    expect_tracks_grad({_("the output"): output, _("the weights"): weights}, _("backward"), on)
    got = grads_of(weighted_sum([output, weights], seed=seed + 4),
                   {"query": q, "key": k, "value": v, **params}, on=on)
    ref_grads = grads_of(weighted_sum([ref_out, ref_w], seed=seed + 4),
                         {"query": rq, "key": rk, "value": rv, **dict(twin.named_parameters())})
    expected = {"query": ref_grads["query"], "key": ref_grads["key"], "value": ref_grads["value"],
                "out_proj.weight": ref_grads["out_proj.weight"],
                "out_proj.bias": ref_grads.get("out_proj.bias")}
    for name, g in zip(("q_proj", "k_proj", "v_proj"), ref_grads["in_proj_weight"].chunk(3)):
        expected[f"{name}.weight"] = g
    if bias:
        for name, g in zip(("q_proj", "k_proj", "v_proj"), ref_grads["in_proj_bias"].chunk(3)):
            expected[f"{name}.bias"] = g
    expect_grads_close(got, expected, _("backward through output and weights"), on)


@title(N_("single head against nn.MultiheadAttention"))
@pytest.mark.core
def test_single_head_matches_pytorch(impl):
    """(seq, batch, d) inputs, query length != key length, against nn.MultiheadAttention(d, 1)."""
    check_single_head(impl, seed=100)


@title(N_("single head: batch_first and no bias"))
@pytest.mark.followup
def test_single_head_batch_first_and_no_bias(impl):
    """batch_first=True takes (batch, seq, d); bias=False has no biases at all."""
    check_single_head(impl, batch_first=True, seed=110)
    check_single_head(impl, bias=False, seed=120)
    check_single_head(impl, bias=False, batch_first=True, dtype=torch.float64, seed=130)


@title(N_("single head with masks"))
@pytest.mark.followup
def test_single_head_masks(impl):
    """attn_mask (n, m) float and (batch, n, m) bool, differing per batch element."""
    check_single_head(impl, mask=randn(5, 7, seed=140), seed=141)
    check_single_head(impl, mask=bool_mask(3, 5, 7, seed=150), seed=151)


@title(N_("single head: gradients of inputs and weights"))
@pytest.mark.followup
def test_single_head_gradients(impl):
    """Gradients of the inputs and of every projection's weight and bias equal PyTorch's."""
    check_single_head(impl, mask=bool_mask(3, 5, 7, seed=160), seed=161, check_grads=True)


@title(N_("single head: fully masked rows"))
@pytest.mark.followup
def test_single_head_fully_masked_rows(impl):
    """A query whose keys are all blocked: zero weights, and an output that is what out_proj
    makes of a zero context (its bias), with a bool and with a float mask."""
    d, b = 8, 2
    blocked, rows = fully_masked_case(seed=170)[3:]  # (b, n, m) = (2, 4, 6)
    n, m = blocked.shape[-2:]
    for mask, batch_first in ((blocked, False), (as_float_mask(blocked, seed=171), True)):
        twin = pytorch_twin(d, True, batch_first, seed=172)
        state = learner_state(twin)
        module = build_single_head(impl, twin, state)
        shape = (lambda length: (b, length, d)) if batch_first else (lambda length: (length, b, d))
        q, k, v = (randn(*shape(length), seed=173 + i)
                   for i, length in enumerate((n, m, m)))
        on = describe_inputs(query=q, key=k, value=v, attn_mask=mask) + \
            f" (batch_first={batch_first})" + _("; queries (0, 1) and (1, 3) fully masked")
        result = impl.call(module, q, k, v, attn_mask=mask, what="SingleHeadAttention.forward",
                           on=on)
        output, weights = expect_tuple(result, 2, "SingleHeadAttention.forward", on,
                                       "output, weights")

        def reproduce(index, **switches):
            return single_head_reference(state, q, k, v, mask, batch_first, **switches)[index]

        out_rows = rows if batch_first else rows.transpose(0, 1)
        expect_close(weights, reproduce(1), _("the attention weights (batch, n, m)"), on,
                     fully_masked_suspects(rows, lambda **s: reproduce(1, **s)))
        expect_close(output, reproduce(0), _("the output (out_proj's bias on fully masked rows)"),
                     on, fully_masked_suspects(out_rows, lambda **s: reproduce(0, **s)))
