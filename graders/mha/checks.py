"""Grader for kata 03: ``MultiheadAttention``.

Expected numbers come from ``nn.MultiheadAttention(E, h, ...)`` with random weights and
nonzero biases, called with ``average_attn_weights=False``; the learner's module loads
the very same state dict. :func:`mha_reference` is the module as a function of its
weights, with one switch per catalogued mistake; a wrong answer is named by the mistake
whose reproduction it matches, and only when no other mistake reproduces it as well.
Dropout is checked by behaviour: nothing in eval mode; in training mode every weight is
either dropped (0) or scaled by 1/(1-p), and the output follows the returned weights.
"""

from __future__ import annotations

import functools
import math
from itertools import permutations, product
from typing import Any, Callable

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graders.core.i18n import N_, _
from graders.twins.reference import attend
from graders.core.compare import (MISTAKE_SLACK, expect_close, expect_grads_close, expect_tensor,
                                  expect_tracks_grad, expect_tuple, shape_mismatches, tolerance)
from graders.core.implementation import Implementation
from graders.core.inputs import drawn_cases, grads_of, leaf_copies, randn, randomize_, weighted_sum
from graders.core.mistakes import Suspect
from graders.core.report import describe_inputs, describe_tensor, describe_value, verdict, title
from graders.twins.projections import (IDENTITY, to_batch_first, split_heads, merge_heads,
                                      in_projections, weights_behind_output)

__all__ = [
    "test_mha_matches_pytorch",
    "test_mha_random_shapes",
    "test_mha_need_weights_false",
    "test_mha_batch_first",
    "test_mha_without_bias",
    "test_mha_float64",
    "test_mha_gradients",
    "test_mha_dropout_off_in_eval",
    "test_mha_dropout_in_training",
    "test_mha_half_precision_on_cuda",
]


def slug_for_exception(exc: BaseException) -> str | None:
    """``.view()`` on a transposed tensor (merging heads) raises this characteristic error."""
    if isinstance(exc, RuntimeError) and "view size is not compatible" in str(exc):
        return "non-contiguous-view"
    return None


# --------------------------------------------------------------------------- references


def mha_reference(
    state: dict[str, Tensor],
    query: Tensor,
    key: Tensor,
    value: Tensor,
    num_heads: int,
    batch_first: bool,
    *,
    read_batch_first: bool | None = None,
    write_batch_first: bool | None = None,
    split: str = "ok",
    merge: str = "ok",
    scale: float | None = None,
    softmax_dim: int | str = -1,
    out_proj: bool = True,
    out_bias: bool = True,
    weights_view: str = "ok",
    dropped_weights: Tensor | None = None,
    **projection_switches: Any,
) -> tuple[Tensor, Tensor]:
    """nn.MultiheadAttention as a function of its state dict, with mistake switches.

    query (n, b, E), key and value (m, b, E), or batch first. Returns the output shaped like
    query and the per-head weights (b, h, n, m). Switches: how the inputs are read and the
    output written (batch-first-ignored), head layouts (:func:`split_heads`), the scale,
    the softmax axis ("batch*heads": over PyTorch's (b*h) rows), the projections
    (:func:`in_projections`), out_proj and its bias, the returned weights averaged over
    heads or with their (b*h) rows read head-major.
    ``dropped_weights`` replaces the softmax: the output those weights give.
    """
    read_bf = batch_first if read_batch_first is None else read_batch_first
    write_bf = batch_first if write_batch_first is None else write_batch_first
    xs = [to_batch_first(x, read_bf) for x in (query, key, value)]
    projected = in_projections(state, xs, **projection_switches)
    q, k, v = (split_heads(x, num_heads, split) for x in projected)
    if dropped_weights is not None:
        weights = dropped_weights
        attended = weights @ v
    elif softmax_dim == "batch*heads":
        b, h = q.shape[:2]
        flat = [t.reshape(b * h, *t.shape[2:]) for t in (q, k, v)]
        attended, weights = attend(*flat, scale=scale, softmax_dim=0)
        attended, weights = (t.view(b, h, *t.shape[1:]) for t in (attended, weights))
    else:
        attended, weights = attend(q, k, v, scale=scale, softmax_dim=softmax_dim)
    output = merge_heads(attended, merge)
    if out_proj:
        bias = state.get("out_proj.bias") if out_bias else None
        output = F.linear(output, state["out_proj.weight"], bias)
    output = output if write_bf else output.transpose(0, 1)
    if weights_view == "mean":
        weights = weights.mean(dim=1)
    elif weights_view == "mean-keepdim":
        weights = weights.mean(dim=1, keepdim=True)
    elif weights_view == "head-major":  # PyTorch's batch-major (b*h) rows read as (h, b)
        b, h = weights.shape[:2]
        weights = weights.reshape(h, b, *weights.shape[2:]).transpose(0, 1)
    return output, weights


# ---------------------------------------------------------------------- mistake models

Candidate = tuple[str, Callable[[], Any]]


def mha_candidates(state, query, key, value, num_heads: int,
                   batch_first: bool) -> tuple[list[Candidate], list[Candidate]]:
    """(slug, prediction) for every modelled mistake: for the output, and for the weights.

    Several ways of writing each mistake are modelled, so that it is recognised however
    it was coded. Each variant runs at most once, for both lists.
    """
    variants: list[tuple[str, dict[str, Any]]] = []

    def variant(slug: str, **switches) -> None:
        variants.append((slug, switches))

    embed = state["in_proj_weight"].size(1)
    head_dim = embed // num_heads
    has_bias = state.get("in_proj_bias") is not None

    # Heads: split and/or merge wrong, each way of getting it wrong in its own family.
    families = {
        "reshape-without-transpose": ("reshape", "reshape-seq-first"),
        "heads-interleaved": ("interleaved",),
        "batch-head-order": ("head-major",),
    }
    for slug, layouts in families.items():
        for split, merge in product(("ok", *layouts), repeat=2):
            if (split, merge) != ("ok", "ok"):
                variant(slug, split=split, merge=merge)

    # The scale: none, the embedding width (with and without the root), other wrong ones.
    for slug, scale in (("missing-scale", 1.0),
                        ("scale-by-embed-dim", 1 / math.sqrt(embed)),
                        ("scale-by-embed-dim", 1 / embed),
                        ("wrong-scale", 1 / head_dim),
                        ("wrong-scale", math.sqrt(head_dim)),
                        ("wrong-scale", 1 / math.sqrt(num_heads))):
        variant(slug, scale=scale)
    for dim in (-2, 1, 0, "batch*heads"):
        variant("softmax-wrong-dim", softmax_dim=dim)

    # Projections: the thirds of in_proj cut in another order (weights and/or biases) ...
    orders = list(permutations(IDENTITY))
    for weight_parts in orders:
        for bias_parts in (orders if has_bias else [weight_parts]):
            if (weight_parts, bias_parts) != (IDENTITY, IDENTITY):
                variant("qkv-chunk-order", weight_parts=weight_parts, bias_parts=bias_parts)
    for strided in ((True, True), (True, False), (False, True)) if has_bias else ((True, False),):
        variant("qkv-chunk-order", strided=strided)
    variant("qkv-chunk-order", per_head=num_heads)  # the fused projection read as (h, 3, d)
    # ... versus a projection fed the wrong input, or one third used twice.
    for choice in product(IDENTITY, repeat=3):
        if choice != IDENTITY:
            variant("wrong-projection", inputs=choice)
        if choice not in orders:
            variant("wrong-projection", weight_parts=choice, bias_parts=choice)
            if has_bias:
                variant("wrong-projection", weight_parts=choice)

    # Biases: any of the in_proj thirds left out, or out_proj's (a k bias alone is invisible).
    if has_bias:
        for kept in product((True, False), repeat=3):
            if not all(kept):
                variant("missing-bias", in_bias=kept)
                variant("missing-bias", in_bias=kept, out_bias=False)
        variant("missing-bias", out_bias=False)
    variant("missing-out-proj", out_proj=False)

    # Layout: inputs read in the other layout, or the output not put back.
    for read, write in ((not batch_first, not batch_first), (batch_first, not batch_first),
                        (not batch_first, batch_first)):
        variant("batch-first-ignored", read_batch_first=read, write_batch_first=write)

    variant("weights-averaged", weights_view="mean")
    variant("weights-averaged", weights_view="mean-keepdim")
    variant("batch-head-order", weights_view="head-major")

    @functools.cache
    def run(i: int) -> tuple[Tensor, Tensor]:
        return mha_reference(state, query, key, value, num_heads, batch_first, **variants[i][1])

    def predict(i: int, index: int) -> Callable[[], Tensor]:
        return lambda: run(i)[index]

    return tuple([(slug, predict(i, index)) for i, (slug, _) in enumerate(variants)]
                 for index in (0, 1))


NOT_DROPPED = N_("no weight was dropped: in training mode dropout acts on the attention "
                 "weights, and the weights returned are the ones after dropout")


def dropout_problems(got: Tensor, clean: Tensor, p: float,
                     tol: tuple[float, float] | None = None) -> tuple[list[str], float]:
    """Why ``got`` is not ``clean`` after dropout(p), and the share of weights dropped.

    No problems when every weight is either 0 (dropped) or clean / (1 - p) (kept), and
    both kinds occur. Weights too small to tell 0 from clean / (1 - p) are not counted.
    """
    rtol, atol = tol or tolerance(clean.dtype, MISTAKE_SLACK)
    got64, clean64 = got.detach().cpu().double(), clean.detach().cpu().double()
    scaled = clean64 / (1 - p)
    visible = scaled.abs() > 2 * atol  # where dropping a weight can be seen
    zero = got64.abs() <= atol
    kept = torch.isclose(got64, scaled, rtol=rtol, atol=atol)
    dropped = zero & visible
    share = float(dropped.sum()) / max(int(visible.sum()), 1)
    if bool((zero | kept).all()):
        if not bool(dropped.any()):
            return [_(NOT_DROPPED)], share
        if not bool((kept & visible & ~zero).any()):
            return [_("every weight was zeroed")], share
        return [], share
    if bool((zero | torch.isclose(got64, clean64, rtol=rtol, atol=atol)).all()):
        if not bool(dropped.any()):
            return [_(NOT_DROPPED)], share
        return [_("weights were zeroed, but the survivors were not scaled by 1/(1-p) = "
                  "{factor}", factor=f"{1 / (1 - p):g}")], share
    bad = int((~(zero | kept)).sum())
    return [_("{bad} of {total} weights are neither 0 nor the undropped weight times "
              "1/(1-p) = {factor}", bad=bad, total=got64.numel(), factor=f"{1 / (1 - p):g}")], share


def dropout_in_eval_suspects(state, value, clean_weights: Tensor, p: float, num_heads: int,
                             batch_first: bool, index: int) -> list[Suspect]:
    """dropout-in-eval: the weights (index 1), or those behind the output (index 0), are the
    clean weights with dropout's pattern (zeros, survivors scaled by 1/(1-p))."""

    def matches(got) -> bool:
        if index == 1:
            return (got.shape == clean_weights.shape
                    and not dropout_problems(got, clean_weights, p)[0])
        inferred = weights_behind_output(state, value, got, num_heads, batch_first)
        return inferred.shape == clean_weights.shape and not dropout_problems(
            inferred, clean_weights, p, tol=(1e-2, 1e-3))[0]

    return [Suspect("dropout-in-eval", matches=matches)]


# ------------------------------------------------------------------------ the module


def pytorch_twin(embed_dim: int, num_heads: int, *, dropout: float = 0.0, bias: bool = True,
                 batch_first: bool = False, seed: int, dtype=torch.float32,
                 device="cpu") -> nn.MultiheadAttention:
    """nn.MultiheadAttention with random weights and nonzero biases of order 1/sqrt(E), so
    that projections and scores stay of order 1 (weights not saturated) whatever E is."""
    twin = nn.MultiheadAttention(embed_dim, num_heads, dropout=dropout, bias=bias,
                                 batch_first=batch_first, dtype=dtype, device=device)
    return randomize_(twin, seed, scale=1 / math.sqrt(embed_dim))


def module_name(twin: nn.MultiheadAttention) -> str:
    """e.g. ``MultiheadAttention(8, 2, batch_first=True)``, non-default arguments only."""
    args = [str(twin.embed_dim), str(twin.num_heads)]
    if twin.dropout:
        args.append(f"dropout={twin.dropout}")
    if twin.in_proj_bias is None:
        args.append("bias=False")
    if twin.batch_first:
        args.append("batch_first=True")
    return f"MultiheadAttention({', '.join(args)})"


def missing_parameters_slug(missing: set[str], unexpected: set[str]) -> str | None:
    """A module without out_proj, or without the biases bias=True asks for, says so."""
    if unexpected or not missing:
        return None
    if "out_proj.weight" in missing:
        return "missing-out-proj"
    if missing <= {"in_proj_bias", "out_proj.bias"}:
        return "missing-bias"
    return None


def build_module(impl: Implementation, twin: nn.MultiheadAttention, dtype=None,
                 device=None) -> nn.Module:
    """The learner's module, with the twin's state dict loaded and in the twin's mode."""
    what = module_name(twin)
    cls = impl.attr("MultiheadAttention")
    module = impl.call(cls, twin.embed_dim, twin.num_heads, dropout=twin.dropout,
                       bias=twin.in_proj_bias is not None, batch_first=twin.batch_first,
                       what=what, on=_("construction"))
    if not isinstance(module, nn.Module):
        raise verdict(what, _("construction"),
                      [_("expected an nn.Module, got {value}", value=describe_value(module))])
    expected = {name: tuple(t.shape) for name, t in twin.state_dict().items()}
    got = {name: tuple(t.shape) for name, t in
           impl.call(module.state_dict, what=f"{what}.state_dict", on=_("construction")).items()}
    if got != expected:
        details = shape_mismatches(got, expected)
        details.append(_("nn.MultiheadAttention has in_proj_weight (3E, E), in_proj_bias (3E) "
                         "or None, and out_proj = nn.Linear(E, E, bias=bias)"))
        raise verdict(_("the parameters of {module}", module=what), _("construction"), details,
                      missing_parameters_slug(set(expected) - set(got), set(got) - set(expected)))
    module = impl.call(module.to, device=device or twin.in_proj_weight.device,
                       dtype=dtype or twin.in_proj_weight.dtype,
                       what=f"{what}.to", on=_("construction"))
    impl.call(module.load_state_dict, twin.state_dict(), what=f"{what}.load_state_dict",
              on=_("nn.MultiheadAttention's state dict"))
    module.train(twin.training)
    return module


def make_inputs(twin: nn.MultiheadAttention, b: int, n: int, m: int, seed: int,
                dtype=None, device=None) -> tuple[Tensor, Tensor, Tensor]:
    """query (n, b, E), key and value (m, b, E), or batch first as the twin is."""
    dtype = dtype or twin.in_proj_weight.dtype
    device = device or twin.in_proj_weight.device
    embed = twin.embed_dim

    def shape(length: int) -> tuple[int, int, int]:
        return (b, length, embed) if twin.batch_first else (length, b, embed)

    return tuple(randn(*shape(length), seed=seed + i, dtype=dtype, device=device)
                 for i, length in enumerate((n, m, m)))


def describe_call(twin: nn.MultiheadAttention, inputs, extra: str = "") -> str:
    q, k, v = inputs
    mode = "" if twin.training else _(", eval mode")
    return _("{inputs} with {module}", inputs=describe_inputs(query=q, key=k, value=v),
             module=module_name(twin)) + mode + extra


def run_module(impl: Implementation, module: nn.Module, inputs, on: str, **kwargs):
    """The learner's forward; returns (attn_output, attn_weights)."""
    result = impl.call(module, *inputs, what="MultiheadAttention.forward", on=on, **kwargs)
    return expect_tuple(result, 2, "MultiheadAttention.forward", on, "attn_output, attn_weights")


def twin_forward(twin: nn.MultiheadAttention, inputs) -> tuple[Tensor, Tensor]:
    return twin(*inputs, need_weights=True, average_attn_weights=False)


def check_mha(impl: Implementation, *, embed_dim: int, num_heads: int, b: int, n: int, m: int,
              bias: bool = True, batch_first: bool = False, dtype=torch.float32, seed: int,
              need_weights: bool | None = None, dropout: float = 0.0, training: bool = True,
              check_grads: bool = False, self_attention: bool = False) -> None:
    """The learner's module against nn.MultiheadAttention with the same state dict.

    ``self_attention``: query, key and value are one and the same tensor (m = n), for
    implementations with a fused path for that case.
    """
    twin = pytorch_twin(embed_dim, num_heads, dropout=dropout, bias=bias,
                        batch_first=batch_first, seed=seed, dtype=dtype).train(training)
    module = build_module(impl, twin)
    base = make_inputs(twin, b, n, m, seed=seed + 1)
    if self_attention:
        base = (base[0], base[0], base[0])
    inputs = leaf_copies(*base) if check_grads else base
    extra = "" if need_weights is None else f", need_weights={need_weights}"
    extra += _(" (query, key and value the same tensor)") if self_attention else ""
    on = describe_call(twin, base, extra)
    kwargs = {} if need_weights is None else {"need_weights": need_weights}
    output, weights = run_module(impl, module, inputs, on, **kwargs)

    ref_inputs = leaf_copies(*base) if check_grads else base
    ref_out, ref_w = twin_forward(twin, ref_inputs)
    state = twin.state_dict()
    out_candidates, w_candidates = mha_candidates(state, *base, num_heads, batch_first)
    # graders.core.mistakes.identify names a slug only when no other slug's mistake matches too.
    out_suspects = [Suspect(slug, predict=predict) for slug, predict in out_candidates]
    w_suspects = [Suspect(slug, predict=predict) for slug, predict in w_candidates]
    if dropout and not training:
        clean = ref_w.detach()
        for index, suspects in enumerate((out_suspects, w_suspects)):
            suspects += dropout_in_eval_suspects(state, base[2], clean, dropout, num_heads,
                                                 batch_first, index)
    expect_close(output, ref_out, _("the attention output"), on, out_suspects)
    if need_weights is False:
        if weights is not None:
            raise verdict(_("the attention weights"), on,
                          [_("expected None with need_weights=False, got {value}",
                             value=describe_value(weights))])
        return
    expect_close(weights, ref_w, _("the attention weights (b, h, n, m)"), on, w_suspects)
    if not check_grads:
        return

    named = {"query": inputs[0], "key": inputs[1], "value": inputs[2],
             **dict(module.named_parameters())}
    expect_tracks_grad({"attn_output": output, "attn_weights": weights},
                       _("backward through output and weights"), on)
    got = grads_of(weighted_sum([output, weights], seed=seed + 7), named, on=on)
    ref_named = {"query": ref_inputs[0], "key": ref_inputs[1], "value": ref_inputs[2],
                 **dict(twin.named_parameters())}
    expected = grads_of(weighted_sum([ref_out, ref_w], seed=seed + 7), ref_named)
    expect_grads_close(got, expected, _("backward through output and weights"), on)


# ------------------------------------------------------------------------------ core


@title(N_("multi-head attention against nn.MultiheadAttention"))
@pytest.mark.core
def test_mha_matches_pytorch(impl):
    """(seq, batch, E) inputs, heads > 1, batch > 1; query length == and != key length;
    self-attention (one tensor for query, key and value)."""
    check_mha(impl, embed_dim=12, num_heads=3, b=3, n=4, m=4, seed=100)
    check_mha(impl, embed_dim=8, num_heads=2, b=2, n=5, m=7, seed=110)
    check_mha(impl, embed_dim=16, num_heads=4, b=2, n=3, m=6, seed=120)
    check_mha(impl, embed_dim=12, num_heads=2, b=3, n=5, m=5, seed=130, self_attention=True)


def mha_case(rng):
    num_heads, head_dim = rng.randint(1, 4), rng.randint(1, 5)
    b, n, m = rng.randint(1, 3), rng.randint(1, 6), rng.randint(1, 6)
    return num_heads * head_dim, num_heads, b, n, m, rng.randint(0, 10_000)


@title(N_("multi-head attention on random shapes"))
@pytest.mark.core
def test_mha_random_shapes(impl):
    """Random widths, head counts, batch sizes and lengths, drawn from a fixed seed."""
    for embed_dim, num_heads, b, n, m, seed in drawn_cases(mha_case):
        check_mha(impl, embed_dim=embed_dim, num_heads=num_heads, b=b, n=n, m=m, seed=seed)


@title(N_("need_weights=False"))
@pytest.mark.core
def test_mha_need_weights_false(impl):
    """need_weights=False returns (attn_output, None), the output unchanged."""
    check_mha(impl, embed_dim=8, num_heads=2, b=2, n=5, m=7, seed=200, need_weights=False)
    check_mha(impl, embed_dim=8, num_heads=2, b=2, n=5, m=7, seed=210, need_weights=True)


# ------------------------------------------------------------------------- follow-ups


@title(N_("batch_first=True"))
@pytest.mark.followup
def test_mha_batch_first(impl):
    """batch_first=True takes (batch, seq, E) and returns the output batch first; also
    self-attention (one tensor for query, key and value)."""
    check_mha(impl, embed_dim=12, num_heads=3, b=3, n=4, m=4, batch_first=True, seed=300)
    check_mha(impl, embed_dim=8, num_heads=2, b=2, n=5, m=7, batch_first=True, seed=310)
    check_mha(impl, embed_dim=12, num_heads=2, b=3, n=5, m=5, batch_first=True, seed=320,
              self_attention=True)


@title(N_("without bias"))
@pytest.mark.followup
def test_mha_without_bias(impl):
    """bias=False: in_proj_bias is None and out_proj has no bias, in both layouts."""
    check_mha(impl, embed_dim=12, num_heads=3, b=3, n=4, m=6, bias=False, seed=400)
    check_mha(impl, embed_dim=8, num_heads=2, b=2, n=5, m=3, bias=False, batch_first=True, seed=410)


@title(N_("multi-head attention in float64"))
@pytest.mark.followup
def test_mha_float64(impl):
    """float64 weights and inputs give float64 results, at float64 precision."""
    check_mha(impl, embed_dim=12, num_heads=3, b=2, n=4, m=6, dtype=torch.float64, seed=500)
    check_mha(impl, embed_dim=8, num_heads=4, b=3, n=5, m=2, dtype=torch.float64,
              batch_first=True, bias=False, seed=510)


@title(N_("gradients of inputs and weights"))
@pytest.mark.followup
def test_mha_gradients(impl):
    """Gradients of query, key, value and every parameter equal PyTorch's."""
    check_mha(impl, embed_dim=12, num_heads=3, b=2, n=4, m=6, seed=600, check_grads=True)
    check_mha(impl, embed_dim=8, num_heads=2, b=3, n=5, m=3, dtype=torch.float64,
              batch_first=True, bias=False, seed=610, check_grads=True)


@title(N_("no dropout in eval mode"))
@pytest.mark.followup
def test_mha_dropout_off_in_eval(impl):
    """With dropout=0.5 in eval mode, nothing is dropped: equal to PyTorch's eval mode."""
    # head_dim (8) >= m (5): the weights behind a wrong output can be recovered and
    # recognised as dropped ones.
    check_mha(impl, embed_dim=16, num_heads=2, b=3, n=4, m=5, dropout=0.5, training=False, seed=700)


@title(N_("dropout on the weights in training"))
@pytest.mark.followup
def test_mha_dropout_in_training(impl):
    """In training mode each weight is dropped (0) or scaled by 1/(1-p), so rows no longer
    sum to 1, and the output is the one those returned weights give. Behaviour only:
    never compared seed for seed with PyTorch."""
    p = 0.5
    twin = pytorch_twin(16, 2, dropout=p, seed=800).train()
    module = build_module(impl, twin)
    b, n, m = 3, 6, 7  # 3 * 2 * 6 * 7 = 252 weights: the dropped share is 0.5 +- 0.03
    inputs = make_inputs(twin, b, n, m, seed=801)
    on = describe_call(twin, inputs, _(", training mode"))
    with torch.random.fork_rng():
        torch.manual_seed(802)
        output, weights = run_module(impl, module, inputs, on)

    with torch.no_grad():
        clean = twin.eval()(*inputs, need_weights=True, average_attn_weights=False)[1]
    check = _("dropout on the attention weights (p={p})", p=p)
    weights = expect_tensor(weights, check, on)
    if weights.shape != clean.shape:
        raise verdict(check, on, [_("expected weights of shape {expected}, got {got}",
                                    expected=tuple(clean.shape), got=tuple(weights.shape))])
    problems, share = dropout_problems(weights, clean, p)
    if not problems and not 0.3 <= share <= 0.7:
        problems = [_("{share} of the weights were dropped; about {p} should be",
                       share=f"{share:.0%}", p=f"{p:.0%}")]
    if problems:
        raise verdict(check, on, problems + [
            _("undropped weights {value}", value=describe_tensor(clean)),
            _("got               {value}", value=describe_tensor(weights))])
    expected = mha_reference(twin.state_dict(), *inputs, twin.num_heads, twin.batch_first,
                             dropped_weights=weights.detach())[0]
    expect_close(output, expected, _("the output, given the dropped weights it returned"), on)


def check_half_precision(impl: Implementation, device: str) -> None:
    """float16 and bfloat16 keep their dtype and device; compared with PyTorch in float32
    on the same (rounded) weights and inputs, so only the learner's rounding counts."""
    for dtype in (torch.float16, torch.bfloat16):
        twin = pytorch_twin(16, 4, seed=900, device=device)
        with torch.no_grad():  # the learner gets these weights rounded: start from the same
            for param in twin.parameters():
                param.copy_(param.to(dtype))
        module = build_module(impl, twin, dtype=dtype)
        inputs = make_inputs(twin, 2, 5, 7, seed=901, dtype=dtype)
        on = describe_call(twin, inputs, _(" on {device}", device=device))
        output, weights = run_module(impl, module, inputs, on)
        ref_out, ref_w = twin_forward(twin, [x.float() for x in inputs])
        expect_close(output, ref_out.to(dtype), _("the attention output"), on)
        expect_close(weights, ref_w.to(dtype), _("the attention weights (b, h, n, m)"), on)


@title(N_("half precision on a CUDA GPU"))
@pytest.mark.followup
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_mha_half_precision_on_cuda(impl):
    """float16 and bfloat16 on the GPU keep their dtype and device."""
    check_half_precision(impl, "cuda")
