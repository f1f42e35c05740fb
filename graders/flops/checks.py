"""Grader for kata 07: parameter count, FLOPs and score memory of attention, as exact ints.

Expected numbers are the contract's closed forms, checked against PyTorch where PyTorch
can say: the parameters of ``nn.MultiheadAttention``, what
``torch.utils.flop_counter.FlopCounterMode`` counts on a real ``nn.MultiheadAttention``
(grad mode, ``need_weights=True``: its unfused path, whose QK^T and AV are ``bmm`` calls
the counter sees; the fused CPU kernel is not counted) and on the feed-forward linears,
and the ``nbytes`` of a real score tensor.

:func:`attention_flops` and :func:`encoder_flops` are references with one switch per
catalogued mistake; the grader runs them with a switch flipped to recognise a wrong
number. Every answer must be a plain Python int: the sizes go far beyond 2**53, where a
float computation is no longer exact.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable

import pytest
import torch
from torch import nn

from graders.core.i18n import N_, _
from graders.core import torch_shortcuts
from graders.core.implementation import Implementation
from graders.core.inputs import drawn_cases, randn
from graders.core.report import describe_inputs, describe_value, verdict, title
from graders.core.integers import Variant, int_suspects, expect_int

__all__ = [
    "test_param_count",
    "test_mha_flops",
    "test_cross_attention_flops",
    "test_encoder_layer_flops",
    "test_attention_scores_bytes",
    "test_flops_random_sizes",
    "test_param_count_matches_pytorch",
    "test_mha_flops_match_flop_counter",
    "test_cross_attention_flops_match_flop_counter",
    "test_encoder_layer_flops_match_flop_counter",
    "test_huge_sizes_exact_ints",
    "test_attention_scores_bytes_dtypes",
    "test_flops_independent_of_num_heads",
]


MHA_FORM = "8*l*b*d^2 + 4*l^2*b*d"
CROSS_FORM = "4*n*b*d^2 + 4*m*b*d^2 + 4*n*m*b*d"
ENCODER_FORM = "8*l*b*d^2 + 4*l^2*b*d + 4*l*b*d*d_ff"


# --------------------------------------------------------------------------- references


def attention_flops(
    n: int,
    m: int,
    b: int,
    d: int,
    *,
    flops_per_mac: int = 2,
    out_proj: bool = True,
    attention_matmuls: int = 2,
    batch_in_projections: bool = True,
    batch_in_attention: bool = True,
    projection_factor: Fraction = Fraction(1),
    attention_factor: Fraction = Fraction(1),
    scale: Fraction = Fraction(1),
) -> Fraction:
    """FLOPs of attention from n queries to m keys/values (self-attention: n = m = l),
    batch b, width d, with switches for the catalogued mistakes.

    Projections: Q and out over n*b tokens, K and V over m*b tokens, each (tokens, d) @ (d, d).
    Attention: scores (n, d) @ (d, m) and weighted sum (n, m) @ (m, d) per batch element
    (over h heads of width d/h: h cancels). ``attention_matmuls`` = how many of those two
    are counted; the factors model a head count divided or multiplied in.
    """
    b_proj = b if batch_in_projections else 1
    b_attn = b if batch_in_attention else 1
    projected_tokens = n + 2 * m + (n if out_proj else 0)
    projections = b_proj * projected_tokens * d * d * Fraction(projection_factor)
    attention = b_attn * attention_matmuls * n * m * d * Fraction(attention_factor)
    return flops_per_mac * (projections + attention) * Fraction(scale)


def encoder_flops(
    l: int,
    b: int,
    d: int,
    d_ff: int,
    *,
    ffn_flops_per_mac: int = 2,
    batch_in_ffn: bool = True,
    scale: Fraction = Fraction(1),
    **attention_switches: Any,
) -> Fraction:
    """Self-attention (see :func:`attention_flops`) plus the feed-forward linears
    (l*b, d) @ (d, d_ff) and (l*b, d_ff) @ (d_ff, d)."""
    b_ffn = b if batch_in_ffn else 1
    feed_forward = ffn_flops_per_mac * 2 * l * b_ffn * d * d_ff
    return (attention_flops(l, l, b, d, **attention_switches) + feed_forward) * Fraction(scale)


def param_count(d: int, bias: bool) -> int:
    """in_proj_weight (3d, d) + out_proj.weight (d, d); in_proj_bias (3d) + out_proj.bias (d)."""
    return 4 * d * d + (4 * d if bias else 0)


def scores_bytes(l: int, b: int, h: int, dtype: torch.dtype) -> int:
    """nbytes of a real (b, h, l, l) score tensor: Q K^T of (b, h, l, 2) tensors in dtype."""
    q = randn(b, h, l, 2, seed=l + b + h, dtype=dtype)
    return (q @ q.transpose(-2, -1)).nbytes


# --------------------------------------------------------------------------- mistakes


def attention_switch_variants(h: int) -> list[tuple[str, dict[str, Any]]]:
    """Each catalogued slip in attention, written in the ways a learner plausibly writes it."""
    per_head = Fraction(1, h)
    return [
        ("macs-not-flops", {"flops_per_mac": 1}),
        ("missing-out-proj-flops", {"out_proj": False}),
        ("missing-attention-flops", {"attention_matmuls": 0}),
        ("missing-attention-flops", {"attention_matmuls": 1}),  # QK^T or AV forgotten
        # one head of width d/h counted, not summed over heads (or h full-width heads)
        ("per-head-divided", {"attention_factor": per_head}),
        ("per-head-divided", {"attention_factor": h}),
        ("per-head-divided", {"projection_factor": per_head}),
        ("per-head-divided", {"projection_factor": h}),
        ("per-head-divided", {"scale": per_head}),
        ("per-head-divided", {"scale": h}),
        ("batch-ignored", {"batch_in_projections": False, "batch_in_attention": False}),
        ("batch-ignored", {"batch_in_projections": False}),
        ("batch-ignored", {"batch_in_attention": False}),
    ]


def cross_variants(n: int, m: int, b: int, d: int, h: int) -> list[Variant]:
    return [(slug, attention_flops(n, m, b, d, **switches))
            for slug, switches in attention_switch_variants(h)]


def encoder_variants(l: int, b: int, d: int, h: int, d_ff: int) -> list[Variant]:
    """A slip in the attention part (e.g. a wrong mha_flops reused), or in the whole layer."""
    variants = [(slug, encoder_flops(l, b, d, d_ff, **switches))
                for slug, switches in attention_switch_variants(h)]
    variants += [
        ("macs-not-flops", encoder_flops(l, b, d, d_ff, flops_per_mac=1, ffn_flops_per_mac=1)),
        ("batch-ignored", encoder_flops(l, b, d, d_ff, batch_in_ffn=False)),
        ("batch-ignored", encoder_flops(l, b, d, d_ff, batch_in_ffn=False,
                                        batch_in_projections=False, batch_in_attention=False)),
        ("per-head-divided", encoder_flops(l, b, d, d_ff, scale=Fraction(1, h))),
        ("per-head-divided", encoder_flops(l, b, d, d_ff, scale=h)),
    ]
    return variants


def param_variants(d: int, bias: bool) -> list[Variant]:
    variants = [("missing-out-proj-flops", Fraction(3 * d * d + (3 * d if bias else 0)))]
    if bias:
        variants += [("bias-not-counted", Fraction(4 * d * d + extra)) for extra in (0, d, 3 * d)]
    return variants


def bytes_variants(l: int, b: int, h: int, itemsize: int) -> list[Variant]:
    return [("batch-ignored", Fraction(h * l * l * itemsize))]


# --------------------------------------------------------------------------- learner calls


def mha_on(l: int, b: int, d: int, h: int) -> str:
    return describe_inputs(seq_len=l, batch_size=b, d_model=d, num_heads=h)


def cross_on(n: int, m: int, b: int, d: int, h: int) -> str:
    return describe_inputs(tgt_len=n, src_len=m, batch_size=b, d_model=d, num_heads=h)


def encoder_on(l: int, b: int, d: int, h: int, d_ff: int) -> str:
    return describe_inputs(seq_len=l, batch_size=b, d_model=d, num_heads=h, dim_feedforward=d_ff)


def call(impl: Implementation, name: str, *args: Any, on: str, **kwargs: Any) -> Any:
    return impl.call(impl.attr(name), *args, what=name, on=on, **kwargs)


def check_param_count(impl, d: int, bias: bool | None, expected: int | None = None,
                      against: str = N_("4*d^2 + 4*d (4*d^2 without bias)")) -> None:
    """bias=None calls with the default (bias=True)."""
    kwargs = {} if bias is None else {"bias": bias}
    on = describe_inputs(d_model=d, **kwargs)
    got = call(impl, "mha_param_count", d, on=on, **kwargs)
    bias = True if bias is None else bias
    exact = param_count(d, bias)
    check = _("{function} against {formula}", function="mha_param_count", formula=_(against))
    expect_int(got, exact if expected is None else expected, check, on,
               int_suspects(param_variants(d, bias)))


def check_mha_flops(impl, l: int, b: int, d: int, h: int, expected: int | None = None,
                    against: str = MHA_FORM) -> None:
    on = mha_on(l, b, d, h)
    got = call(impl, "mha_flops", l, b, d, h, on=on)
    exact = int(attention_flops(l, l, b, d))
    check = _("{function} against {formula}", function="mha_flops", formula=against)
    expect_int(got, exact if expected is None else expected, check, on,
               int_suspects(cross_variants(l, l, b, d, h)))


def check_cross_flops(impl, n: int, m: int, b: int, d: int, h: int, expected: int | None = None,
                      against: str = CROSS_FORM) -> None:
    on = cross_on(n, m, b, d, h)
    got = call(impl, "cross_attention_flops", n, m, b, d, h, on=on)
    exact = int(attention_flops(n, m, b, d))
    expect_int(got, exact if expected is None else expected,
               _("{function} against {formula}", function="cross_attention_flops",
                 formula=against), on,
               int_suspects(cross_variants(n, m, b, d, h)))


def check_encoder_flops(impl, l: int, b: int, d: int, h: int, d_ff: int,
                        expected: int | None = None, against: str = ENCODER_FORM) -> None:
    on = encoder_on(l, b, d, h, d_ff)
    got = call(impl, "encoder_layer_flops", l, b, d, h, d_ff, on=on)
    exact = int(encoder_flops(l, b, d, d_ff))
    expect_int(got, exact if expected is None else expected,
               _("{function} against {formula}", function="encoder_layer_flops",
                 formula=against), on,
               int_suspects(encoder_variants(l, b, d, h, d_ff)))


def check_scores_bytes(impl, l: int, b: int, h: int, dtype: torch.dtype | None,
                       expected: int | None = None) -> None:
    """dtype=None calls with the default (float32). Expected: a real score tensor's nbytes."""
    kwargs = {} if dtype is None else {"dtype": dtype}
    on = describe_inputs(seq_len=l, batch_size=b, num_heads=h, **kwargs)
    got = call(impl, "attention_scores_bytes", l, b, h, on=on, **kwargs)
    dtype = torch.float32 if dtype is None else dtype
    itemsize = torch.empty((), dtype=dtype).element_size()
    if expected is None:
        expected = scores_bytes(l, b, h, dtype)
        against = _("the nbytes of a real {shape} {dtype} score tensor", shape=(b, h, l, l),
                    dtype=str(dtype)[6:])
    else:
        against = "b*h*l*l*itemsize"
    expect_int(got, expected, _("{function} against {formula}", function="attention_scores_bytes",
                 formula=against), on,
               int_suspects(bytes_variants(l, b, h, itemsize)))


# --------------------------------------------------------------------------- core checks


# b > 1 everywhere (b = 1 would hide batch-ignored), h > 2 (h = 2 would make a head
# slip look like a factor-2 slip), l != d, and no two sizes equal.
MHA_CASES = [(7, 3, 12, 4), (10, 5, 24, 6), (33, 3, 20, 5)]
CROSS_CASES = [(5, 9, 7, 12, 4), (11, 4, 5, 24, 3), (7, 13, 6, 32, 8)]
ENCODER_CASES = [(7, 3, 12, 4, 40), (9, 5, 16, 4, 24), (12, 7, 30, 5, 50)]


@title(N_("mha_param_count"))
@pytest.mark.core
def test_param_count(impl):
    """4d^2 weights (in_proj 3d x d, out_proj d x d) plus 4d biases; bias=False has none."""
    for d in (12, 64, 10):
        check_param_count(impl, d, True)
        check_param_count(impl, d, False)
    check_param_count(impl, 16, None)


@title(N_("mha_flops"))
@pytest.mark.core
def test_mha_flops(impl):
    """Self-attention: four d x d projections over l*b tokens, QK^T and AV over l x l."""
    for case in MHA_CASES:
        check_mha_flops(impl, *case)


@title(N_("cross_attention_flops"))
@pytest.mark.core
def test_cross_attention_flops(impl):
    """n queries attend to m keys: Q and out over n, K and V over m, n x m attention."""
    for case in CROSS_CASES:
        check_cross_flops(impl, *case)


@title(N_("encoder_layer_flops"))
@pytest.mark.core
def test_encoder_layer_flops(impl):
    """Self-attention plus the two feed-forward linears d -> d_ff -> d."""
    for case in ENCODER_CASES:
        check_encoder_flops(impl, *case)


@title(N_("attention_scores_bytes"))
@pytest.mark.core
def test_attention_scores_bytes(impl):
    """(b, h, l, l) float32 scores: the default dtype and dtype=torch.float32."""
    check_scores_bytes(impl, 7, 3, 4, None)
    check_scores_bytes(impl, 5, 6, 3, torch.float32)


def attention_sizes(rng):
    b = rng.randint(2, 9)
    h = rng.randint(1, 8)
    d = h * rng.randint(1, 16)
    l, n, m = (rng.randint(1, 64) for _ in range(3))
    return l, n, m, b, d, h, rng.randint(1, 128)


@title(N_("counts on random sizes"))
@pytest.mark.core
def test_flops_random_sizes(impl):
    """Random sizes (h divides d, b > 1), drawn from a fixed seed (the same cases every run)."""
    for l, n, m, b, d, h, d_ff in drawn_cases(attention_sizes, count=20):
        check_mha_flops(impl, l, b, d, h)
        check_cross_flops(impl, n, m, b, d, h)
        check_encoder_flops(impl, l, b, d, h, d_ff)


# --------------------------------------------------------------------------- follow-ups


def counted_flops(run: Callable[[], Any]) -> int:
    """What FlopCounterMode counts while ``run()`` runs, with grad mode on: PyTorch's
    fused inference kernel (taken under no_grad) is invisible to the counter."""
    # Imported here, not at the top: it costs a fifth of `import torch`, and kata 13's
    # grader imports this module for expect_int alone.
    import torch.utils.flop_counter
    from torch.utils.flop_counter import FlopCounterMode

    mode = getattr(torch.utils.flop_counter, "_FlopCounterMode", None)
    if mode is not None:
        torch_shortcuts.skip_dynamo_import(mode)
    counter = FlopCounterMode(display=False)
    with torch.enable_grad(), counter:
        run()
    return counter.get_total_flops()


def counted_attention(n: int, m: int, b: int, d: int, h: int, batch_first: bool = False) -> int:
    """FlopCounterMode's count for nn.MultiheadAttention(d, h) from n queries to m keys."""
    mha = nn.MultiheadAttention(d, h, batch_first=batch_first)
    shape = (lambda length: (b, length, d)) if batch_first else (lambda length: (length, b, d))
    query, key = randn(*shape(n), seed=n), randn(*shape(m), seed=m + 1)
    return counted_flops(lambda: mha(query, key, key, need_weights=True))


def counted_encoder(l: int, b: int, d: int, h: int, d_ff: int) -> int:
    """FlopCounterMode's count for nn.TransformerEncoderLayer(d, h, d_ff)'s countable parts:
    its self_attn with need_weights=True, and linear1 and linear2."""
    layer = nn.TransformerEncoderLayer(d, h, d_ff)
    x = randn(l, b, d, seed=l)

    def run():
        layer.self_attn(x, x, x, need_weights=True)
        layer.linear2(layer.activation(layer.linear1(x)))

    return counted_flops(run)


def skip_unless_counter_agrees(counted: int, closed: int, what: str) -> None:
    """The counter is the witness only where it counts what the contract counts."""
    if counted != closed:
        pytest.skip(_("FlopCounterMode on torch {version} counts {counted} for {what}, not the "
                      "{closed} matmul FLOPs of the closed form, so there is nothing to compare with",
                      version=torch.__version__, counted=f"{counted:,}", what=what,
                      closed=f"{closed:,}"))


@title(N_("the parameter count against PyTorch"))
@pytest.mark.followup
def test_param_count_matches_pytorch(impl):
    """The number of parameters of a real nn.MultiheadAttention(d, h, bias=bias)."""
    for d, h, bias in [(24, 4, True), (24, 4, False), (36, 3, True)]:
        mha = nn.MultiheadAttention(d, h, bias=bias)
        total = sum(p.numel() for p in mha.parameters())
        check_param_count(impl, d, bias, total,
                          against=_("the parameters of {module}",
                                    module=f"nn.MultiheadAttention({d}, {h}, bias={bias})"))


@title(N_("mha_flops against FlopCounterMode"))
@pytest.mark.followup
def test_mha_flops_match_flop_counter(impl):
    """FlopCounterMode on nn.MultiheadAttention (need_weights=True) counts the projections
    (addmm/mm) and QK^T, AV (bmm): exactly 8lbd^2 + 4l^2bd."""
    for (l, b, d, h), batch_first in [((6, 3, 16, 4), False), ((9, 5, 24, 8), True)]:
        # The learner's code first, so that an unwritten function fails before any counting.
        call(impl, "mha_flops", l, b, d, h, on=mha_on(l, b, d, h))
        counted = counted_attention(l, l, b, d, h, batch_first)
        skip_unless_counter_agrees(counted, int(attention_flops(l, l, b, d)), _("self-attention"))
        check_mha_flops(impl, l, b, d, h, counted,
                        _("FlopCounterMode on {module} with need_weights=True",
                          module=f"nn.MultiheadAttention({d}, {h}, batch_first={batch_first})"))


@title(N_("cross_attention_flops against FlopCounterMode"))
@pytest.mark.followup
def test_cross_attention_flops_match_flop_counter(impl):
    """FlopCounterMode on nn.MultiheadAttention with a query of length n, keys of length m."""
    for n, m, b, d, h in [(5, 9, 3, 16, 4), (12, 7, 4, 24, 3)]:
        call(impl, "cross_attention_flops", n, m, b, d, h, on=cross_on(n, m, b, d, h))
        counted = counted_attention(n, m, b, d, h)
        skip_unless_counter_agrees(counted, int(attention_flops(n, m, b, d)), _("cross-attention"))
        check_cross_flops(impl, n, m, b, d, h, counted,
                          _("FlopCounterMode on {module} with query length {n}, key length {m}, "
                            "need_weights=True", module=f"nn.MultiheadAttention({d}, {h})", n=n,
                            m=m))


@title(N_("encoder_layer_flops against FlopCounterMode"))
@pytest.mark.followup
def test_encoder_layer_flops_match_flop_counter(impl):
    """FlopCounterMode on nn.TransformerEncoderLayer's self_attn (need_weights=True),
    linear1 and linear2."""
    for l, b, d, h, d_ff in [(6, 3, 16, 4, 40), (10, 4, 24, 3, 64)]:
        call(impl, "encoder_layer_flops", l, b, d, h, d_ff, on=encoder_on(l, b, d, h, d_ff))
        counted = counted_encoder(l, b, d, h, d_ff)
        skip_unless_counter_agrees(counted, int(encoder_flops(l, b, d, d_ff)), _("an encoder layer"))
        check_encoder_flops(impl, l, b, d, h, d_ff, counted,
                            _("FlopCounterMode on {module}: self_attn, linear1, linear2",
                              module=f"nn.TransformerEncoderLayer({d}, {h}, {d_ff})"))


# Sizes whose answers are far above 2**53 and not representable as floats, so a float
# computation (a / somewhere, float(), math.pow) cannot come out exact by luck.
HUGE_L, HUGE_B, HUGE_D, HUGE_H, HUGE_FF = 1_000_003, 33, 10_000, 16, 40_000
HUGE_SRC = 999_983
HUGE_BYTES = (1_000_003, 4_097, 12)  # (l, b, h)
HUGE_D_PARAMS = 150_000_001

@title(N_("exact ints at huge sizes"))
@pytest.mark.followup
def test_huge_sizes_exact_ints(impl):
    """l = 10**6 + 3, d = 10**4, ...: exact Python ints, no float anywhere."""
    l, b, d, h, d_ff = HUGE_L, HUGE_B, HUGE_D, HUGE_H, HUGE_FF
    check_mha_flops(impl, l, b, d, h)
    check_cross_flops(impl, l, HUGE_SRC, b, d, h)
    check_encoder_flops(impl, l, b, d, h, d_ff)
    check_param_count(impl, HUGE_D_PARAMS, True)
    bl, bb, bh = HUGE_BYTES
    for dtype in (torch.float32, torch.bfloat16):
        itemsize = torch.empty((), dtype=dtype).element_size()
        check_scores_bytes(impl, bl, bb, bh, dtype, bb * bh * bl * bl * itemsize)


@title(N_("attention_scores_bytes for every dtype"))
@pytest.mark.followup
def test_attention_scores_bytes_dtypes(impl):
    """float16, bfloat16 (2 bytes), float32 (4), float64 (8): a real score tensor's nbytes."""
    for dtype in (torch.float16, torch.bfloat16, torch.float64, torch.float32):
        check_scores_bytes(impl, 6, 3, 5, dtype)


@title(N_("the count does not depend on the number of heads"))
@pytest.mark.followup
def test_flops_independent_of_num_heads(impl):
    """h heads of width d/h cost what one head of width d costs: the same count for
    h = 1, 2, 4, 8."""
    l, n, m, b, d = 6, 5, 9, 3, 48
    heads = (1, 2, 4, 8)
    checks = [
        ("mha_flops", lambda h: (l, b, d, h), lambda h: mha_on(l, b, d, h),
         lambda h: check_mha_flops(impl, l, b, d, h)),
        ("cross_attention_flops", lambda h: (n, m, b, d, h), lambda h: cross_on(n, m, b, d, h),
         lambda h: check_cross_flops(impl, n, m, b, d, h)),
    ]
    for name, args, on, check in checks:
        counts = {h: call(impl, name, *args(h), on=on(h)) for h in heads}
        if len({repr(c) for c in counts.values()}) == 1:
            check(heads[0])
            continue
        # It changes with h: grade each head count, most heads first (at h = 2 a head slip
        # and a factor-2 slip give the same number, so the slip is named from h = 8).
        for h in reversed(heads):
            check(h)
        raise verdict(_("{function} for num_heads in {heads}", function=name, heads=heads),
                      on(heads[0]).rsplit(",", 1)[0],
                      [_("got {value}", value=", ".join(f"h={h}: {describe_value(c)}"
                                                        for h, c in counts.items())),
                       _("the count must not depend on num_heads")])
