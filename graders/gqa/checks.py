"""Grader for kata 13: ``GroupedQueryAttention`` and ``kv_cache_bytes``.

Expected outputs come from PyTorch: the module's four projections as ``F.linear`` with
random weights (and nonzero biases where the module has them), the attention as
``F.scaled_dot_product_attention(..., enable_gqa=True)``, which gives query head j the
key/value head ``j // (num_heads // num_kv_heads)`` (its boolean mask means "may attend",
so ours is negated for it; ``attn_mask`` and ``is_causal`` together are merged into one
mask, since PyTorch takes only one of them). Every check that can tell tiling from
interleaving runs with ``1 < num_kv_heads < num_heads`` (at 1 and at num_heads the two
agree); multi-query (1) and multi-head (num_heads) attention are graded too.

:func:`gqa_reference` is the module as a function of its weights, with one switch per
catalogued mistake; a wrong output is named by the mistake whose reproduction it matches.
``kv_cache_bytes`` must be an exact plain int, checked against the ``nbytes`` of the
cache's key and value tensors (built on the meta device: shapes only, no memory).
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graders.core.i18n import N_, _
from graders.core.compare import (
    expect_close,
    expect_grads_close,
    expect_tracks_grad,
    shape_mismatches,
)
from graders.core.implementation import Implementation
from graders.core.inputs import (
    bool_mask,
    drawn_cases,
    float_mask,
    grads_of,
    leaf_copies,
    randn,
    weighted_sum,
)
from graders.core.mistakes import Suspect
from graders.twins.reference import NEG_INF
from graders.core.report import describe_inputs, describe_value, verdict, title
from graders.core.integers import expect_int, int_suspects
from graders.twins.heads import expand_kv_heads

__all__ = [
    "test_gqa_parameters",
    "test_gqa_matches_pytorch",
    "test_gqa_masks",
    "test_gqa_causal",
    "test_gqa_random_shapes",
    "test_kv_cache_bytes",
    "test_gqa_with_bias",
    "test_gqa_float64",
    "test_gqa_gradients",
    "test_gqa_fully_masked_rows",
    "test_kv_cache_bytes_exact_and_dtypes",
    "test_gqa_half_precision_on_cuda",
]

PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj")


# --------------------------------------------------------------------------- references


def causal_blocked(n: int, device) -> Tensor:
    """(n, n) bool, True above the diagonal: key j is blocked for query i when j > i."""
    return torch.ones(n, n, dtype=torch.bool, device=device).triu(diagonal=1)


def merged_mask(mask: Tensor | None, is_causal: bool, n: int, device) -> Tensor | None:
    """Our attn_mask (bool True = blocked, or float added) and is_causal as one mask of the
    same kind; None when there is neither."""
    if not is_causal:
        return mask
    future = causal_blocked(n, device)
    if mask is None:
        return future
    if mask.dtype == torch.bool:
        return mask | future
    return torch.where(future, torch.full((), NEG_INF, dtype=mask.dtype, device=device), mask)


def project(state: dict[str, Tensor], x: Tensor, name: str) -> Tensor:
    return F.linear(x, state[f"{name}.weight"], state.get(f"{name}.bias"))


def heads(t: Tensor, count: int) -> Tensor:
    """(b, n, count * d) -> (b, count, n, d)."""
    b, n, width = t.shape
    return t.view(b, n, count, width // count).transpose(1, 2)


def pytorch_gqa(state: dict[str, Tensor], x: Tensor, num_heads: int, num_kv_heads: int,
                mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
    """The expected output (b, n, E): F.scaled_dot_product_attention(enable_gqa=True)."""
    b, n, embed = x.shape
    q = heads(project(state, x, "q_proj"), num_heads)
    k = heads(project(state, x, "k_proj"), num_kv_heads)
    v = heads(project(state, x, "v_proj"), num_kv_heads)
    merged = merged_mask(mask, is_causal, n, x.device)
    if merged is not None and merged.dtype == torch.bool:
        merged = ~merged  # PyTorch's bool mask: True = may attend
    attended = F.scaled_dot_product_attention(q, k, v, attn_mask=merged, enable_gqa=True)
    return project(state, attended.transpose(1, 2).reshape(b, n, embed), "o_proj")


def gqa_reference(state: dict[str, Tensor], x: Tensor, num_heads: int, num_kv_heads: int,
                  mask: Tensor | None = None, is_causal: bool = False, *,
                  kv_layout: str = "interleave", scale: float | None = None,
                  invert_mask: bool = False, causal_diagonal: int = 1,
                  fill_value: float | None = None) -> Tensor:
    """The module as a function of its weights, with switches for the catalogued mistakes.

    ``kv_layout``: "interleave" (query head j reads kv head j // group, correct), "tile"
    (kv head j % num_kv_heads: kv-heads-tiled), "tile-k" or "tile-v" (only the keys, or
    only the values, tiled); ``scale`` 1.0: missing-scale, 1/sqrt(E): scale-by-embed-dim;
    ``invert_mask``: a bool attn_mask read as "may attend" (mask-inverted);
    ``causal_diagonal`` 0: is_causal blocks the diagonal too (causal-diagonal);
    ``fill_value``: a bool mask filled with a large finite number instead of -inf
    (finite-mask-fill: Hugging Face's `torch.finfo(dtype).min`). A query whose keys are all
    blocked gets zero weights, forward and backward free of NaN.
    """
    b, n, embed = x.shape
    group = num_heads // num_kv_heads
    q = heads(project(state, x, "q_proj"), num_heads)
    k = heads(project(state, x, "k_proj"), num_kv_heads)
    v = heads(project(state, x, "v_proj"), num_kv_heads)
    k, v = expand_kv_heads(k, v, group, kv_layout)
    if scale is None:
        scale = 1 / math.sqrt(embed // num_heads)
    scores = q @ k.transpose(-2, -1) * scale
    if mask is not None and mask.dtype == torch.bool:
        fill = NEG_INF if fill_value is None else fill_value
        scores = scores.masked_fill(~mask if invert_mask else mask, fill)
    elif mask is not None:
        scores = scores + mask
    if is_causal:
        future = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(causal_diagonal)
        scores = scores.masked_fill(future, NEG_INF)
    blocked = torch.isneginf(scores).all(dim=-1, keepdim=True)
    weights = torch.softmax(scores.masked_fill(blocked, 0.0), dim=-1).masked_fill(blocked, 0.0)
    return project(state, (weights @ v).transpose(1, 2).reshape(b, n, embed), "o_proj")


def gqa_suspects(state, x, num_heads: int, num_kv_heads: int, mask, is_causal) -> list[Suspect]:
    def variant(slug: str, **switches) -> Suspect:
        return Suspect(slug, predict=lambda: gqa_reference(
            state, x, num_heads, num_kv_heads, mask, is_causal, **switches))

    embed_dim = x.size(-1)
    suspects = [variant("kv-heads-tiled", kv_layout=layout) for layout in ("tile", "tile-k", "tile-v")]
    suspects += [variant("missing-scale", scale=1.0),
                 variant("scale-by-embed-dim", scale=1 / math.sqrt(embed_dim)),
                 variant("scale-by-embed-dim", scale=1 / embed_dim)]
    if mask is not None and mask.dtype == torch.bool:
        suspects.append(variant("mask-inverted", invert_mask=True))
    if is_causal:
        suspects.append(variant("causal-diagonal", causal_diagonal=0))
    return suspects


# ------------------------------------------------------------------------ the module


def expected_shapes(embed_dim: int, num_heads: int, num_kv_heads: int,
                    bias: bool) -> dict[str, tuple[int, ...]]:
    kv_width = num_kv_heads * (embed_dim // num_heads)
    out = {"q_proj": embed_dim, "k_proj": kv_width, "v_proj": kv_width, "o_proj": embed_dim}
    shapes: dict[str, tuple[int, ...]] = {}
    for name in PROJECTIONS:
        shapes[f"{name}.weight"] = (out[name], embed_dim)
        if bias:
            shapes[f"{name}.bias"] = (out[name],)
    return shapes


def random_state(embed_dim: int, num_heads: int, num_kv_heads: int, bias: bool, seed: int,
                 dtype=torch.float32, device="cpu") -> dict[str, Tensor]:
    """Random weights of order 1/sqrt(E) (scores of order 1) and nonzero biases."""
    scale = 1 / math.sqrt(embed_dim)
    return {name: randn(*shape, seed=seed + i, dtype=dtype, device=device) * scale
            for i, (name, shape) in enumerate(
                expected_shapes(embed_dim, num_heads, num_kv_heads, bias).items())}


def module_name(embed_dim: int, num_heads: int, num_kv_heads: int, bias: bool) -> str:
    extra = ", bias=True" if bias else ""
    return f"GroupedQueryAttention({embed_dim}, {num_heads}, {num_kv_heads}{extra})"


def parameters_slug(got: dict[str, tuple[int, ...]], expected: dict[str, tuple[int, ...]],
                    embed_dim: int) -> str | None:
    """k_proj / v_proj of width E where num_kv_heads * head_dim is expected, all else right."""
    if set(got) != set(expected):
        return None
    wrong = {name for name in expected if got[name] != expected[name]}
    kv_names = {f"{p}.{kind}" for p in ("k_proj", "v_proj") for kind in ("weight", "bias")}
    if not wrong or not wrong <= kv_names:
        return None
    if all(got[name][0] == embed_dim for name in wrong):
        return "kv-proj-full-width"
    return None


def build_module(impl: Implementation, embed_dim: int, num_heads: int, num_kv_heads: int,
                 bias: bool, state: dict[str, Tensor], dtype, device) -> nn.Module:
    """The learner's module with ``state`` loaded. bias=False is left to the default."""
    what = module_name(embed_dim, num_heads, num_kv_heads, bias)
    cls = impl.attr("GroupedQueryAttention")
    kwargs = {"bias": True} if bias else {}
    module = impl.call(cls, embed_dim, num_heads, num_kv_heads, what=what, on=_("construction"),
                       **kwargs)
    if not isinstance(module, nn.Module):
        raise verdict(what, _("construction"),
                      [_("expected an nn.Module, got {value}", value=describe_value(module))])
    expected = expected_shapes(embed_dim, num_heads, num_kv_heads, bias)
    params = impl.call(lambda: dict(module.named_parameters()), what=f"{what}.named_parameters",
                       on=_("construction"))
    got = {name: tuple(p.shape) for name, p in params.items()}
    if got != expected:
        details = shape_mismatches(got, expected)
        head_dim = embed_dim // num_heads
        details.append(_("expected q_proj and o_proj {outer}, k_proj and v_proj {inner} "
                         "(num_kv_heads * head_dim), bias={bias}",
                         outer=f"nn.Linear({embed_dim}, {embed_dim})",
                         inner=f"nn.Linear({embed_dim}, {num_kv_heads * head_dim})", bias=bias)
                       + ("" if bias else _(" (the default)")))
        raise verdict(_("the parameters of {module}", module=what), _("construction"), details,
                      parameters_slug(got, expected, embed_dim))
    module = impl.call(module.to, device=device, dtype=dtype, what=f"{what}.to", on=_("construction"))
    impl.call(module.load_state_dict, state, strict=False, what=f"{what}.load_state_dict",
              on=_("random weights for q_proj, k_proj, v_proj, o_proj"))
    return module


def describe_call(x: Tensor, mask: Tensor | None, is_causal: bool, name: str) -> str:
    causal = ", is_causal=True" if is_causal else ""
    return _("{inputs} with {module}", inputs=describe_inputs(x=x, attn_mask=mask) + causal,
             module=name)


def run_forward(impl: Implementation, module: nn.Module, x: Tensor, mask: Tensor | None,
                is_causal: bool, on: str) -> Any:
    """The learner's forward; arguments left at their defaults are not passed."""
    kwargs: dict[str, Any] = {}
    if mask is not None:
        kwargs["attn_mask"] = mask
    if is_causal:
        kwargs["is_causal"] = True
    return impl.call(module, x, what="GroupedQueryAttention.forward", on=on, **kwargs)


def make_mask(kind: str | None, shape: str, b: int, h: int, n: int, seed: int, dtype,
              device, is_causal: bool = False) -> Tensor | None:
    """kind None | "bool" | "float"; shape "batch" (b, 1, n, n), "heads" (b, h, n, n),
    "shared" (n, n) or "keys" (b, 1, 1, n) (key padding). With is_causal the diagonal (key
    0 for a key padding mask) is never blocked, so that no query loses every key: the
    contract's rule for those rows is graded on its own (test_gqa_fully_masked_rows)."""
    if kind is None:
        return None
    dims = {"batch": (b, 1, n, n), "heads": (b, h, n, n), "shared": (n, n), "keys": (b, 1, 1, n)}[shape]
    if kind == "bool":
        mask = bool_mask(*dims, seed=seed, device=device)
    else:
        mask = float_mask(*dims, seed=seed, dtype=dtype, device=device)
    if is_causal:
        if shape == "keys":  # (n,): key 0, which every query sees under is_causal
            seen = torch.arange(n, device=device) == 0
        else:  # (n, n): each query's own key
            seen = torch.eye(n, dtype=torch.bool, device=device)
        mask = mask & ~seen if kind == "bool" else torch.where(seen, 0.5, mask).to(dtype)
    return mask


# Llama's attention (and Hugging Face's eager attention) takes the softmax in float32 and
# casts back: `softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)`. Correct, and in
# float64 precise to float32's digits only, so the float64 checks allow for that: they grade
# the dtype and the behaviour in float64, not its last digits.
FLOAT64_SLACK = 100.0


def check_gqa(impl: Implementation, *, embed_dim: int, num_heads: int, num_kv_heads: int,
              b: int, n: int, bias: bool = False, mask_kind: str | None = None,
              mask_shape: str = "batch", is_causal: bool = False, dtype=torch.float32,
              device="cpu", seed: int, check_grads: bool = False) -> None:
    """The learner's module against PyTorch's attention with the same weights."""
    state = random_state(embed_dim, num_heads, num_kv_heads, bias, seed, dtype, device)
    name = module_name(embed_dim, num_heads, num_kv_heads, bias)
    module = build_module(impl, embed_dim, num_heads, num_kv_heads, bias, state, dtype, device)
    base = randn(b, n, embed_dim, seed=seed + 10, dtype=dtype, device=device)
    mask = make_mask(mask_kind, mask_shape, b, num_heads, n, seed + 11, dtype, device, is_causal)
    (x,) = leaf_copies(base) if check_grads else (base,)
    on = describe_call(base, mask, is_causal, name)
    output = run_forward(impl, module, x, mask, is_causal, on)

    ref_state = {k: t.clone().requires_grad_(check_grads) for k, t in state.items()}
    (ref_x,) = leaf_copies(base) if check_grads else (base,)
    expected = pytorch_gqa(ref_state, ref_x, num_heads, num_kv_heads, mask, is_causal)
    suspects = gqa_suspects(state, base, num_heads, num_kv_heads, mask, is_causal)
    slack = FLOAT64_SLACK if dtype == torch.float64 else 1.0
    expect_close(output, expected, _("the output (b, n, E)"), on, suspects, slack=slack)
    if not check_grads:
        return
    check = _("backward through the output")
    expect_tracks_grad({_("the output"): output}, check, on)
    got = grads_of(weighted_sum([output], seed=seed + 12), {"x": x, **dict(module.named_parameters())})
    want = grads_of(weighted_sum([expected], seed=seed + 12), {"x": ref_x, **ref_state})
    expect_grads_close(got, want, check, on, slack=slack)


# Head counts: (E, num_heads, num_kv_heads) with 1 < kv < h (where tiling and interleaving
# differ), multi-query (kv = 1) and multi-head (kv = h).
GROUPED = [(16, 4, 2), (24, 6, 3), (32, 8, 2)]
MQA, MHA = (12, 3, 1), (12, 3, 3)


# ------------------------------------------------------------------------------ core


@title(N_("the module's parameters"))
@pytest.mark.core
def test_gqa_parameters(impl):
    """q_proj, o_proj E -> E; k_proj, v_proj E -> num_kv_heads * head_dim; bias=False by
    default, True when asked."""
    for embed_dim, num_heads, num_kv_heads in [*GROUPED[:2], MQA, MHA]:
        for bias in (False, True):
            state = random_state(embed_dim, num_heads, num_kv_heads, bias, seed=1)
            build_module(impl, embed_dim, num_heads, num_kv_heads, bias, state,
                         torch.float32, "cpu")


@title(N_("grouped-query attention against PyTorch"))
@pytest.mark.core
def test_gqa_matches_pytorch(impl):
    """No mask: grouped (1 < kv < h), multi-query (kv = 1) and multi-head (kv = h)
    attention against F.scaled_dot_product_attention(enable_gqa=True); batch > 1."""
    for i, (embed_dim, num_heads, num_kv_heads) in enumerate([*GROUPED, MQA, MHA]):
        check_gqa(impl, embed_dim=embed_dim, num_heads=num_heads, num_kv_heads=num_kv_heads,
                  b=2 + i % 2, n=5 + i, seed=100 + 10 * i)


@title(N_("grouped-query attention with masks"))
@pytest.mark.core
def test_gqa_masks(impl):
    """attn_mask bool (True = blocked) and float, differing per batch element, per head,
    shared (n, n) and key padding (b, 1, 1, n)."""
    cases = [("bool", "batch"), ("bool", "heads"), ("bool", "shared"), ("bool", "keys"),
             ("float", "batch"), ("float", "shared")]
    for i, (kind, shape) in enumerate(cases):
        embed_dim, num_heads, num_kv_heads = GROUPED[i % 2]
        check_gqa(impl, embed_dim=embed_dim, num_heads=num_heads, num_kv_heads=num_kv_heads,
                  b=3, n=6, mask_kind=kind, mask_shape=shape, seed=200 + 10 * i)
    check_gqa(impl, embed_dim=12, num_heads=3, num_kv_heads=1, b=2, n=5, mask_kind="bool",
              seed=270)


@title(N_("causal grouped-query attention"))
@pytest.mark.core
def test_gqa_causal(impl):
    """is_causal=True: query i sees keys 0..i; with attn_mask too, both apply."""
    embed_dim, num_heads, num_kv_heads = GROUPED[0]
    check_gqa(impl, embed_dim=embed_dim, num_heads=num_heads, num_kv_heads=num_kv_heads,
              b=2, n=6, is_causal=True, seed=300)
    for i, kind in enumerate(("bool", "float")):
        check_gqa(impl, embed_dim=24, num_heads=6, num_kv_heads=2, b=3, n=5, mask_kind=kind,
                  is_causal=True, seed=310 + 10 * i)
    check_gqa(impl, embed_dim=12, num_heads=3, num_kv_heads=1, b=2, n=4, mask_kind="bool",
              mask_shape="keys", is_causal=True, seed=330)


def gqa_case(rng):
    num_kv_heads = rng.randint(1, 3)
    num_heads = num_kv_heads * rng.randint(1, 3)
    embed_dim = num_heads * rng.randint(1, 5)
    b, n = rng.randint(1, 3), rng.randint(1, 6)
    mask_kind = rng.choice([None, "bool", "float"])
    mask_shape = rng.choice(["batch", "heads", "shared", "keys"])
    return (embed_dim, num_heads, num_kv_heads, b, n, mask_kind, mask_shape,
            rng.random() < 0.3, rng.random() < 0.5, rng.randint(0, 10_000))


@title(N_("grouped-query attention on random shapes"))
@pytest.mark.core
def test_gqa_random_shapes(impl):
    """Random widths, head and kv-head counts, lengths, masks, is_causal and bias, drawn
    from a fixed seed (the same cases every run)."""
    for (embed_dim, num_heads, num_kv_heads, b, n, mask_kind, mask_shape, is_causal, bias,
         seed) in drawn_cases(gqa_case):
        check_gqa(impl, embed_dim=embed_dim, num_heads=num_heads, num_kv_heads=num_kv_heads,
                  b=b, n=n, mask_kind=mask_kind, mask_shape=mask_shape, is_causal=is_causal,
                  bias=bias, seed=seed)


# ------------------------------------------------------------------ kv_cache_bytes


def cache_bytes(batch_size: int, seq_len: int, num_layers: int, embed_dim: int,
                num_heads: int, num_kv_heads: int, dtype: torch.dtype) -> int:
    """The nbytes of every layer's key and value cache, (b, num_kv_heads, seq, head_dim)
    each, built on the meta device (shapes only)."""
    head_dim = embed_dim // num_heads
    with torch.device("meta"):
        keys = torch.empty(batch_size, num_kv_heads, seq_len, head_dim, dtype=dtype)
        values = torch.empty(batch_size, num_kv_heads, seq_len, head_dim, dtype=dtype)
    return num_layers * (keys.nbytes + values.nbytes)


def check_cache_bytes(impl: Implementation, b: int, seq: int, layers: int, embed_dim: int,
                      num_heads: int, num_kv_heads: int, dtype: torch.dtype | None) -> None:
    """dtype=None calls with the default (float16)."""
    kwargs = {} if dtype is None else {"dtype": dtype}
    on = describe_inputs(batch_size=b, seq_len=seq, num_layers=layers, embed_dim=embed_dim,
                         num_heads=num_heads, num_kv_heads=num_kv_heads, **kwargs)
    got = impl.call(impl.attr("kv_cache_bytes"), b, seq, layers, embed_dim, num_heads,
                    num_kv_heads, what="kv_cache_bytes", on=on, **kwargs)
    dtype = torch.float16 if dtype is None else dtype
    expected = cache_bytes(b, seq, layers, embed_dim, num_heads, num_kv_heads, dtype)
    head_dim = embed_dim // num_heads
    itemsize = torch.empty((), dtype=dtype).element_size()
    variants = [
        ("kv-cache-missing-values", expected // 2),
        ("kv-cache-per-query-head", 2 * b * seq * layers * num_heads * head_dim * itemsize),
        # One element size whatever the dtype. For float32, 2 bytes gives the same number
        # as counting keys only: both slugs explain it, so neither is named there.
        *(("kv-cache-dtype-ignored", expected // itemsize * fixed) for fixed in (2, 4)),
    ]
    against = _("the nbytes of {layers} layers' keys and values, each {shape} {dtype}",
                layers=layers, shape=(b, num_kv_heads, seq, head_dim),
                dtype=str(dtype).removeprefix("torch."))
    expect_int(got, expected, _("{function} against {formula}", function="kv_cache_bytes",
                                formula=against), on, int_suspects(variants))


# (batch, seq, layers, E, h, kv): kv < h everywhere but the last (multi-head), no two equal.
CACHE_CASES = [(3, 17, 5, 64, 8, 2), (2, 100, 7, 96, 12, 4), (5, 9, 3, 48, 6, 1),
               (4, 11, 6, 40, 5, 5)]


@title(N_("kv_cache_bytes"))
@pytest.mark.core
def test_kv_cache_bytes(impl):
    """Keys and values of every layer, num_kv_heads heads of head_dim = E // num_heads;
    float16 by default."""
    for i, case in enumerate(CACHE_CASES):
        check_cache_bytes(impl, *case, dtype=None if i % 2 == 0 else torch.float16)


# ------------------------------------------------------------------------- follow-ups


@title(N_("with bias"))
@pytest.mark.followup
def test_gqa_with_bias(impl):
    """bias=True: every projection has a bias, with masks and is_causal."""
    check_gqa(impl, embed_dim=16, num_heads=4, num_kv_heads=2, b=2, n=5, bias=True, seed=400)
    check_gqa(impl, embed_dim=24, num_heads=6, num_kv_heads=3, b=3, n=4, bias=True,
              mask_kind="bool", is_causal=True, seed=410)


@title(N_("grouped-query attention in float64"))
@pytest.mark.followup
def test_gqa_float64(impl):
    """float64 weights and inputs give float64 results (see FLOAT64_SLACK)."""
    check_gqa(impl, embed_dim=16, num_heads=4, num_kv_heads=2, b=2, n=5, mask_kind="float",
              dtype=torch.float64, seed=500)
    check_gqa(impl, embed_dim=12, num_heads=3, num_kv_heads=1, b=3, n=4, mask_kind="bool",
              is_causal=True, dtype=torch.float64, seed=510)


@title(N_("gradients of the input and the weights"))
@pytest.mark.followup
def test_gqa_gradients(impl):
    """Gradients of x and of every projection's weight (and bias) equal PyTorch's; k_proj
    and v_proj collect the gradients of every query head in their groups."""
    check_gqa(impl, embed_dim=16, num_heads=4, num_kv_heads=2, b=2, n=5, mask_kind="bool",
              seed=600, check_grads=True)
    check_gqa(impl, embed_dim=24, num_heads=6, num_kv_heads=3, b=2, n=4, bias=True,
              mask_kind="float", is_causal=True, dtype=torch.float64, seed=610, check_grads=True)


def fully_masked_mask(kind: str, b: int, n: int, seed: int, dtype) -> tuple[Tensor, Tensor]:
    """A (b, 1, n, n) mask whose queries (0, 1) and (1, n - 1) have every key blocked, and
    a (b, n) bool marking those rows."""
    mask = make_mask(kind, "batch", b, 1, n, seed, dtype, "cpu")
    rows = torch.zeros(b, n, dtype=torch.bool)
    rows[0, 1] = rows[1, n - 1] = True
    if kind == "bool":
        mask = mask | rows[:, None, :, None]
    else:
        mask = mask.masked_fill(rows[:, None, :, None], NEG_INF)
    return mask, rows


def nan_on_rows(rows: Tensor) -> Suspect:
    """nan-on-fully-masked: NaN in the fully masked queries' outputs. The comparison it
    serves sees those rows only."""
    return Suspect("nan-on-fully-masked",
                   matches=lambda got: bool(torch.isnan(got.detach()[rows]).any()))


@title(N_("fully masked rows"))
@pytest.mark.followup
def test_gqa_fully_masked_rows(impl):
    """A query whose keys are all blocked (bool and float masks) gets zero attention, so
    its output is o_proj's bias; backward gives finite gradients equal to the reference's
    (the other queries against PyTorch)."""
    embed_dim, num_heads, num_kv_heads, b, n = 16, 4, 2, 2, 5
    for i, kind in enumerate(("bool", "float")):
        seed = 700 + 10 * i
        state = random_state(embed_dim, num_heads, num_kv_heads, True, seed)
        name = module_name(embed_dim, num_heads, num_kv_heads, True)
        module = build_module(impl, embed_dim, num_heads, num_kv_heads, True, state,
                              torch.float32, "cpu")
        base = randn(b, n, embed_dim, seed=seed + 10)
        mask, rows = fully_masked_mask(kind, b, n, seed + 11, torch.float32)
        (x,) = leaf_copies(base)
        on = describe_call(base, mask, False, name) + _("; queries (0, 1) and (1, 4) fully masked")
        output = run_forward(impl, module, x, mask, False, on)

        ref_state = {k: t.clone().requires_grad_(True) for k, t in state.items()}
        (ref_x,) = leaf_copies(base)
        expected = gqa_reference(ref_state, ref_x, num_heads, num_kv_heads, mask)
        # Where no row is fully masked, the reference is PyTorch's.
        expect_close(output, pytorch_gqa(state, base, num_heads, num_kv_heads, mask),
                     _("the output of the queries that can attend"), on, mask=~rows[..., None])
        suspects = [nan_on_rows(rows)]
        if kind == "bool":  # torch.finfo(dtype).min or -1e9: uniform weights on those rows
            suspects.append(Suspect("finite-mask-fill", predict=lambda: gqa_reference(
                state, base, num_heads, num_kv_heads, mask, fill_value=-1e9)))
        expect_close(output, expected, _("the output of fully masked queries (o_proj's bias)"), on,
                     suspects, mask=rows[..., None])
        check = _("backward through a fully masked query")
        expect_tracks_grad({_("the output"): output}, check, on)
        got = grads_of(weighted_sum([output], seed=seed + 12),
                       {"x": x, **dict(module.named_parameters())})
        for grad_name, grad in got.items():
            if grad is not None and not bool(torch.isfinite(grad).all()):
                raise verdict(check, on, [
                    _("the gradient of {name} holds NaN or inf; a fully masked query must give "
                      "finite gradients", name=grad_name),
                    _("the softmax of an all -inf row is NaN, and so is its backward even when "
                      "the NaN is replaced afterwards: fill those rows' scores with 0 before the "
                      "softmax, then zero their weights")])
        want = grads_of(weighted_sum([expected], seed=seed + 12), {"x": ref_x, **ref_state})
        expect_grads_close(got, want, check, on)


@title(N_("kv_cache_bytes: huge sizes and every dtype"))
@pytest.mark.followup
def test_kv_cache_bytes_exact_and_dtypes(impl):
    """bfloat16 and float16 (2 bytes), float64 (8), float32 (4); a Llama-2-70B-sized cache
    (80 layers, E = 8192, 64 heads, 8 kv heads) and sizes far beyond 2**53, as exact ints."""
    for dtype in (torch.bfloat16, torch.float16, torch.float64, torch.float32):
        check_cache_bytes(impl, 3, 17, 5, 64, 8, 2, dtype)
    check_cache_bytes(impl, 1, 4096, 80, 8192, 64, 8, None)
    check_cache_bytes(impl, 1_000_003, 999_983, 10_007, 12_288, 96, 12, torch.float32)


@title(N_("half precision on a CUDA GPU"))
@pytest.mark.followup
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gqa_half_precision_on_cuda(impl):
    """float16 and bfloat16 on the GPU keep their dtype and device; compared with PyTorch
    in float32 on the same (rounded) weights and inputs, so only the learner's rounding counts."""
    embed_dim, num_heads, num_kv_heads, b, n = 32, 8, 2, 2, 6
    for i, dtype in enumerate((torch.float16, torch.bfloat16)):
        seed = 900 + 10 * i
        state = random_state(embed_dim, num_heads, num_kv_heads, True, seed, dtype, "cuda")
        module = build_module(impl, embed_dim, num_heads, num_kv_heads, True, state, dtype, "cuda")
        x = randn(b, n, embed_dim, seed=seed + 10, dtype=dtype, device="cuda")
        mask = make_mask("bool", "batch", b, num_heads, n, seed + 11, dtype, "cuda", True)
        on = describe_call(x, mask, True, module_name(embed_dim, num_heads, num_kv_heads, True))
        output = run_forward(impl, module, x, mask, True, on + _(" on {device}", device="cuda"))
        wide = {k: t.float() for k, t in state.items()}
        expected = pytorch_gqa(wide, x.float(), num_heads, num_kv_heads, mask, True)
        expect_close(output, expected.to(dtype), _("the output (b, n, E)"),
                     on + _(" on {device}", device="cuda"))
