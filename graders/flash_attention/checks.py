"""Grader for kata 14: ``flash_attention``, attention with an online softmax over key blocks.

Expected numbers come from PyTorch in float64, cast to the input's dtype (lse to float32 for
float16/bfloat16 inputs, as FlashAttention returns it): the output from
``F.scaled_dot_product_attention`` (``is_causal`` for causal), the log-sum-exp from
``torch.logsumexp`` of the scaled (causally masked) scores. Inputs cover block sizes
smaller than, equal to and larger than the key length, key lengths that are no multiple
of the block size, n != m, causal attention, and scores of magnitude 10⁴ of both signs
(a running maximum that is missing, or that starts at 0, overflows or underflows there).

The memory rule is checked by behaviour: while the learner's function runs, a
``TorchDispatchMode`` records the size of every tensor any operation creates (views, which
share their input's memory, aside); none may exceed ``max(n, m) * max(block_size, d)``
elements per (batch, head), so the ``(n, m)`` score matrix can never exist, while copies
of q, k, v and per-block matmuls or einsums stay within it.

:func:`online_attention` is the blockwise algorithm with one switch per catalogued mistake;
a wrong output or lse is named by the mistake whose reproduction it matches.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

from graders.core.i18n import N_, _
from graders.core.compare import (expect_close, expect_grads_close, expect_tracks_grad, expect_tuple,
                                   lse_dtype)
from graders.core.implementation import Implementation
from graders.core.inputs import drawn_cases, grads_of, leaf_copies, randn, weighted_sum
from graders.core.memory import CreatedTensors, is_score_sized, memory_limit
from graders.core.mistakes import Suspect
from graders.core.report import GradingFailure, describe_inputs, verdict, title

__all__ = [
    "test_flash_matches_pytorch",
    "test_flash_block_sizes",
    "test_flash_causal",
    "test_flash_large_scores",
    "test_flash_never_builds_the_score_matrix",
    "test_flash_random_shapes",
    "test_flash_float64",
    "test_flash_gradients",
    "test_flash_half_precision_on_cuda",
]

NEG_INF = float("-inf")


# --------------------------------------------------------------------------- references


def causal_scores_mask(n: int, m: int, device, key_offset: int = 0, shift: int = 0) -> Tensor:
    """(n, m) bool, True where key ``key_offset + j`` is blocked for query i, i.e. when
    key_offset + j > i + shift (shift 0: the causal rule)."""
    queries = torch.arange(n, device=device)[:, None]
    keys = torch.arange(key_offset, key_offset + m, device=device)[None, :]
    return keys > queries + shift


def pytorch_attention(q: Tensor, k: Tensor, v: Tensor, causal: bool) -> tuple[Tensor, Tensor]:
    """(output, lse) from PyTorch in q's dtype, differentiable: F.scaled_dot_product_attention
    and torch.logsumexp of the scaled scores."""
    output = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if causal:
        scores = scores.masked_fill(causal_scores_mask(q.size(-2), k.size(-2), q.device), NEG_INF)
    return output, torch.logsumexp(scores, dim=-1)


def expected_attention(q: Tensor, k: Tensor, v: Tensor, causal: bool) -> tuple[Tensor, Tensor]:
    """The expected (output, lse): PyTorch's in float64, the output cast to q's dtype, lse
    to float32 for half inputs and to q's dtype otherwise (graders.core.compare.lse_dtype)."""
    output, lse = pytorch_attention(*(t.detach().double() for t in (q, k, v)), causal)
    return output.to(q.dtype), lse.to(lse_dtype(q.dtype))


def at_input_precision(lse: Tensor, expected: Tensor, q: Tensor) -> tuple[Tensor, Tensor]:
    """A half input's float32 lse is judged at the input's precision (its scores may be
    rounded to the half type before the float32 statistics, as a bfloat16 matmul returns
    them): both rounded to q's dtype. Other dtypes: unchanged."""
    if q.dtype in (torch.float16, torch.bfloat16):
        return lse.to(q.dtype), expected.to(q.dtype)
    return lse, expected


def expect_lse_dtype(lse: Any, q: Tensor, check: str, on: str) -> None:
    """lse's dtype, with the rule that sets it (float32 for half inputs, FlashAttention's)."""
    want = lse_dtype(q.dtype)
    if isinstance(lse, Tensor) and lse.dtype != want:
        raise verdict(check, on, [
            _("expected dtype {expected}, got {got}", expected=want, got=lse.dtype),
            _("lse is float32 for float16/bfloat16 inputs, as FlashAttention returns it (the "
              "backward rebuilds P = exp(S - lse) from it), and in q's dtype for float32 and "
              "float64"),
        ])


def online_attention(
    q: Tensor, k: Tensor, v: Tensor, block_size: int, causal: bool = False, *,
    scale: float | None = None,
    rescale_acc: bool = True,
    rescale_sum: bool = True,
    running_max: str = "max",
    normalize: str = "end",
    causal_mask: str = "ok",
    lse: str = "ok",
) -> tuple[Tensor, Tensor]:
    """The blockwise online softmax in q's dtype, with switches for the catalogued mistakes.

    q (b, h, n, d), k and v (b, h, m, d); returns (output (b, h, n, d), lse (b, h, n)).
    ``scale`` 1.0: missing-scale. ``rescale_acc`` / ``rescale_sum`` False: the accumulator /
    the running sum not multiplied by exp(m_old - m_new) (accumulator-not-rescaled).
    ``running_max`` "none" (exp of the raw scores), "zero" (a maximum starting at 0, not
    -inf) or "first" (the first block's maximum, never updated): running-max-missing. ``normalize`` "block-sum" (each block's own softmax, summed),
    "block-mean" (averaged over blocks), "twice" (each block normalised, then divided by the
    running sum too): normalized-per-block. ``causal_mask`` "diagonal" (key j blocked when
    j >= i), "one-ahead" (j > i + 1), "local" (the block's own index j - start compared with
    i): causal-block-off-by-one. ``lse`` "log-sum" (log l), "max" (m), "log2" (in bits),
    "unscaled-max" (the maximum of the unscaled scores plus log l): lse-wrong.
    """
    n, m, d = q.size(-2), k.size(-2), q.size(-1)
    scale = 1 / math.sqrt(d) if scale is None else scale
    start_max = {"max": NEG_INF, "zero": 0.0, "none": 0.0, "first": NEG_INF}[running_max]
    row_max = q.new_full((*q.shape[:-1], 1), start_max)
    row_sum = q.new_zeros((*q.shape[:-1], 1))
    acc = q.new_zeros((*q.shape[:-1], v.size(-1)))
    blocks = 0
    for start in range(0, m, block_size):
        k_block, v_block = k[..., start:start + block_size, :], v[..., start:start + block_size, :]
        scores = q @ k_block.transpose(-2, -1) * scale
        if causal:
            shift = {"ok": 0, "diagonal": -1, "one-ahead": 1, "local": 0}[causal_mask]
            offset = 0 if causal_mask == "local" else start
            blocked = causal_scores_mask(n, k_block.size(-2), q.device, offset, shift)
            scores = scores.masked_fill(blocked, NEG_INF)
        blocks += 1
        if normalize in ("block-sum", "block-mean"):
            acc = acc + torch.softmax(scores, dim=-1) @ v_block
            continue
        frozen = running_max == "none" or (running_max == "first" and blocks > 1)
        new_max = row_max if frozen else torch.maximum(row_max, scores.amax(dim=-1, keepdim=True))
        correction = torch.exp(row_max - new_max)
        p = torch.exp(scores - new_max)
        row_sum = row_sum * (correction if rescale_sum else 1) + p.sum(dim=-1, keepdim=True)
        if normalize == "twice":
            p = p / p.sum(dim=-1, keepdim=True)
        acc = acc * (correction if rescale_acc else 1) + p @ v_block
        row_max = new_max
    if normalize == "block-sum":
        return acc, q.new_zeros(q.shape[:-1])
    if normalize == "block-mean":
        return acc / blocks, q.new_zeros(q.shape[:-1])
    output = acc / row_sum
    log_sum = torch.log(row_sum)
    lse_value = {
        "ok": lambda: row_max + log_sum,
        "log-sum": lambda: log_sum,
        "max": lambda: row_max,
        "log2": lambda: (row_max + log_sum) / math.log(2),
        "unscaled-max": lambda: row_max / scale + log_sum,
    }[lse]()
    return output, lse_value.squeeze(-1)


def float32_attention(q: Tensor, k: Tensor, v: Tensor, block_size: int, causal: bool
                      ) -> tuple[Tensor, Tensor]:
    """The blockwise online softmax run in float32 on these inputs, as float64: what an
    implementation that accumulates in float32 gets, to float32 rounding."""
    with torch.no_grad():
        out, lse = online_attention(*(t.detach().float() for t in (q, k, v)), block_size, causal)
    return out.double(), lse.double()


def float32_sized(got: Any, want: Tensor, float32_result) -> str | None:
    """For float64 inputs: the largest difference, formatted, when ``got`` is off from
    ``want`` by no more than float32 arithmetic on the same inputs is (ten times that, for
    another order of operations), and None otherwise (or for another dtype)."""
    if want.dtype != torch.float64 or not isinstance(got, Tensor) or got.dtype != torch.float64 \
            or got.shape != want.shape:
        return None
    got64, want64 = got.detach().cpu(), want.detach().cpu()
    finite = torch.isfinite(want64)
    if not bool(torch.equal(torch.isfinite(got64), finite)):
        return None  # inf or NaN where the answer is finite: not a rounding
    diff = float((got64 - want64)[finite].abs().max()) if bool(finite.any()) else 0.0
    ref = float((float32_result().cpu() - want64)[finite].abs().max()) if bool(finite.any()) else 0.0
    scale = float(want64[finite].abs().max()) if bool(finite.any()) else 0.0
    bound = 10 * max(ref, torch.finfo(torch.float32).eps * max(scale, 1.0))
    return f"{diff:.3g}" if 0 < diff <= bound else None


def precision_verdict(failure: GradingFailure, got: Any, want: Tensor, float32_result,
                      check: str, on: str) -> GradingFailure:
    """A float64 mismatch no mistake explains, of the size of float32 rounding: say it is
    the precision of the arithmetic (a float32 accumulator, scores or cast), not the inputs
    (the large scores) that the check is about."""
    if failure.slug is not None:
        return failure
    diff = float32_sized(got, want, float32_result)
    if diff is None:
        return failure
    lines = str(failure).splitlines()[1:]
    precision = verdict(check, on, [
        _("your values are float32-accurate, not float64-accurate: the largest difference, "
          "{diff}, is the size of float32 rounding on these inputs", diff=diff),
        _("this is precision, not the size of the scores: float64 inputs are computed in "
          "float64 throughout — the scores, the running maximum, the running sum and the "
          "accumulator in q's dtype, no float32 step or cast in between"),
    ])
    precision = GradingFailure("\n".join([str(precision), *lines]))
    precision.pictures = failure.pictures
    return precision


def flash_suspects(q, k, v, block_size: int, causal: bool) -> tuple[list[Suspect], list[Suspect]]:
    """What each catalogued mistake would return on this input: for the output, for the lse."""
    d = q.size(-1)
    variants: list[tuple[str, dict[str, Any]]] = [
        ("missing-scale", {"scale": 1.0}),
        ("wrong-scale", {"scale": 1 / d}),
        ("wrong-scale", {"scale": math.sqrt(d)}),
        ("accumulator-not-rescaled", {"rescale_acc": False, "rescale_sum": False}),
        ("accumulator-not-rescaled", {"rescale_acc": False}),
        ("accumulator-not-rescaled", {"rescale_sum": False}),
        ("running-max-missing", {"running_max": "none"}),
        ("running-max-missing", {"running_max": "zero"}),
        ("running-max-missing", {"running_max": "first"}),
        ("normalized-per-block", {"normalize": "block-sum"}),
        ("normalized-per-block", {"normalize": "block-mean"}),
        ("normalized-per-block", {"normalize": "twice"}),
        ("lse-wrong", {"lse": "log-sum"}),
        ("lse-wrong", {"lse": "max"}),
        ("lse-wrong", {"lse": "log2"}),
        ("lse-wrong", {"lse": "unscaled-max"}),
    ]
    if causal:
        variants += [("causal-block-off-by-one", {"causal_mask": mode})
                     for mode in ("diagonal", "one-ahead", "local")]

    @functools.cache
    def run(i: int) -> tuple[Tensor, Tensor]:
        with torch.no_grad():
            return online_attention(q, k, v, block_size, causal, **variants[i][1])

    def predict(i: int, index: int):
        return lambda: run(i)[index]

    out_suspects = [Suspect(slug, predict=predict(i, 0)) for i, (slug, switches) in enumerate(variants)
                    if "lse" not in switches]
    lse_suspects = [Suspect(slug, predict=predict(i, 1)) for i, (slug, switches) in enumerate(variants)
                    if not switches.get("normalize")]
    if causal:
        # The diagonal blocked leaves query 0 no key: its row is NaN from the online softmax
        # as written, or zeros (lse -inf) where the learner guards an empty sum.
        def guarded(index: int) -> Tensor:
            out, lse = online_attention(q, k, v, block_size, causal, causal_mask="diagonal")
            out, lse = out.clone(), lse.clone()
            out[..., 0, :], lse[..., 0] = 0.0, NEG_INF
            return (out, lse)[index]

        out_suspects.append(Suspect("causal-block-off-by-one", predict=lambda: guarded(0)))
        lse_suspects.append(Suspect("causal-block-off-by-one", predict=lambda: guarded(1)))
        out_suspects.append(misplaced_causal_suspect(q, k, v, 0))
        lse_suspects.append(misplaced_causal_suspect(q, k, v, 1))
    return out_suspects, lse_suspects


def prefix_attention(q: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
    """Every query attending to every prefix of the keys, float64: output (b, h, n, m+1, d)
    and lse (b, h, n, m+1), index L the attention over keys 0 ... L-1 (L = 0: no key, zeros
    and -inf)."""
    q64, k64, v64 = (t.detach().to("cpu", torch.float64) for t in (q, k, v))
    m = k.size(-2)
    scores = q64 @ k64.transpose(-2, -1) / math.sqrt(q.size(-1))  # (b, h, n, m)
    blocked = torch.arange(m)[None, :] >= torch.arange(m + 1)[:, None]  # (L, key)
    masked = scores[..., None, :].masked_fill(blocked, NEG_INF)  # (b, h, n, m+1, m)
    lse = torch.logsumexp(masked, dim=-1)
    weights = torch.exp(masked - lse[..., None]).nan_to_num(nan=0.0)
    return weights @ v64[..., None, :, :], lse


def misplaced_causal_suspect(q: Tensor, k: Tensor, v: Tensor, index: int) -> Suspect:
    """causal-block-off-by-one by behaviour: every query attended to a prefix of the keys
    (what any causal mask does), but for some query not the prefix 0 ... i: the diagonal
    block left unmasked, a block's end off by one, the diagonal itself blocked (a query
    with no key left may give zeros or NaN). ``index`` 0 judges the output, 1 the lse. Not
    named when every query saw every key (causal ignored altogether)."""

    def matches(got: Any) -> bool:
        prefixes = prefix_attention(q, k, v)[index]  # (b, h, n, m+1[, d])
        m = k.size(-2)
        if not isinstance(got, Tensor) or got.shape != prefixes.select(3, 0).shape:
            return False
        got64 = got.detach().to("cpu", torch.float64)[..., None, :] if index == 0 else \
            got.detach().to("cpu", torch.float64)[..., None]
        close = torch.isclose(got64, prefixes, rtol=1e-3, atol=1e-4)
        # Query 0 with no key at all (the diagonal blocked) may be left NaN by the online
        # softmax as written; NaN elsewhere is another mistake's (an overflow).
        no_key = (torch.arange(m + 1) == 0) & (torch.arange(close.size(2))[:, None] == 0)
        if index == 0:
            close = close.all(-1) | (torch.isnan(got64).all(-1) & no_key)
        else:
            close = close | (torch.isnan(got64) & no_key)
        seen = close.flatten(0, 1).all(0)  # (n, m+1): which prefixes every (batch, head) fits
        if not bool(seen.any(-1).all()):
            return False
        lengths = [set(torch.nonzero(row).flatten().tolist()) for row in seen]
        if all(i + 1 in fits for i, fits in enumerate(lengths)):
            return False  # the right answer
        return not all(m in fits for fits in lengths)  # not causal ignored altogether

    return Suspect("causal-block-off-by-one", matches=matches)


# ------------------------------------------------------------------------------ checks


def describe_call(q, k, v, block_size: int | None, causal: bool) -> str:
    extra = {} if block_size is None else {"block_size": block_size}
    if causal:
        extra["causal"] = True
    return describe_inputs(q=q, k=k, v=v, **extra)


def run_flash(impl: Implementation, q, k, v, block_size: int | None, causal: bool, on: str,
              recorder: CreatedTensors | None = None) -> tuple[Any, Any]:
    """The learner's (output, lse); arguments left at their defaults are not passed.
    With ``recorder``, every tensor created during the call is recorded."""
    fn = impl.attr("flash_attention")
    if recorder is not None:
        inner = fn

        @functools.wraps(inner)
        def fn(*args, **kwargs):
            with recorder:
                return inner(*args, **kwargs)

    kwargs: dict[str, Any] = {} if block_size is None else {"block_size": block_size}
    if causal:
        kwargs["causal"] = True
    result = impl.call(fn, q, k, v, what="flash_attention", on=on, **kwargs)
    return expect_tuple(result, 2, "flash_attention", on, "output, lse")


def check_flash(impl: Implementation, q: Tensor, k: Tensor, v: Tensor, block_size: int | None,
                causal: bool = False, *, check_grads: bool = False, check_memory: bool = False,
                slack: float = 1.0, note: str = "") -> None:
    """Output and lse against PyTorch's (float64, cast to q's dtype), mistakes named, and
    optionally gradients; or, with ``check_memory``, the memory rule alone."""
    block = 64 if block_size is None else block_size
    on = describe_call(q, k, v, block_size, causal) + note
    inputs = leaf_copies(q, k, v) if check_grads else (q, k, v)
    recorder = CreatedTensors() if check_memory else None
    output, lse = run_flash(impl, *inputs, block_size, causal, on, recorder)

    if recorder is not None:
        limit = memory_limit(q, k, block)
        numel, shape, op = recorder.largest or (0, (), "")
        if numel > limit:
            b_h = q[..., 0, 0].numel()
            slug = "full-score-matrix" if is_score_sized(shape, numel, q, k) else None
            raise verdict(_("the size of every tensor flash_attention creates"), on, [
                _("your code created a tensor of shape {shape} ({count} elements, by {op})",
                  shape=shape, count=f"{numel:,}", op=op),
                _("the limit is max(n, m) * max(block_size, d) = {per_head} elements per "
                  "(batch, head), {total} in all: one (n, block_size) block of scores",
                  per_head=f"{limit // b_h:,}", total=f"{limit:,}"),
                _("build each block's scores (and causal mask) from a slice of k; never all of "
                  "them"),
            ], slug)
        # The memory rule only: accuracy is every other check's (a wrong answer made
        # within the memory rule does not fail this one).
        return

    exp_out, exp_lse = expected_attention(q, k, v, causal)
    out_suspects, lse_suspects = flash_suspects(q, k, v, block, causal)
    float32_run = functools.cache(lambda: float32_attention(q, k, v, block, causal))
    for index, (got, want, suspects, check) in enumerate((
            (output, exp_out, out_suspects, _("the output (b, h, n, d)")),
            (lse, exp_lse, lse_suspects, _("the log-sum-exp lse (b, h, n)")))):
        if index == 1 and isinstance(lse, Tensor) and lse.shape == exp_lse.shape:
            expect_lse_dtype(lse, q, check, on)
            got, want = at_input_precision(lse, exp_lse, q)
        try:
            expect_close(got, want, check, on, suspects, slack=slack)
        except GradingFailure as failure:
            raise precision_verdict(failure, got, want, lambda: float32_run()[index], check, on)

    if not check_grads:
        return
    check = _("backward through output and lse")
    expect_tracks_grad({_("the output"): output, "lse": lse}, check, on)
    got = grads_of(weighted_sum([output, lse], seed=7), dict(zip("qkv", inputs)))
    ref_inputs = leaf_copies(q, k, v)
    ref_out, ref_lse = pytorch_attention(*ref_inputs, causal)
    want = grads_of(weighted_sum([ref_out, ref_lse], seed=7), dict(zip("qkv", ref_inputs)))
    expect_grads_close({f"`{name}`": g for name, g in got.items()},
                       {f"`{name}`": g for name, g in want.items()}, check, on)


def qkv(b: int, h: int, n: int, m: int, d: int, seed: int, dtype=torch.float32,
        device="cpu") -> tuple[Tensor, Tensor, Tensor]:
    return (randn(b, h, n, d, seed=seed, dtype=dtype, device=device),
            randn(b, h, m, d, seed=seed + 1, dtype=dtype, device=device),
            randn(b, h, m, d, seed=seed + 2, dtype=dtype, device=device))


def large_scores(b: int, h: int, n: int, m: int, d: int, magnitude: float, seed: int,
                 dtype) -> tuple[Tensor, Tensor, Tensor]:
    """Scores of about +magnitude for queries 0, 3, 6, ..., about -magnitude for queries
    1, 4, 7, ... and of order 1 for the rest, each row still spread by order-1 terms:
    q[..., 0] = ±a and k[..., 0] = c with a * c / sqrt(d) = magnitude."""
    q, k, v = qkv(b, h, n, m, d, seed, torch.float64)
    a = math.sqrt(magnitude * math.sqrt(d))
    sign = torch.tensor([1.0, -1.0, 0.0], dtype=torch.float64).repeat(n)[:n]
    q[..., 0] = sign * a
    k[..., 0] = a
    return q.to(dtype), k.to(dtype), v.to(dtype)


def rising_scores(b: int, h: int, n: int, m: int, d: int, magnitude: float,
                  seed: int) -> tuple[Tensor, Tensor, Tensor]:
    """float64 scores that rise along the keys from about 0 to about +magnitude, so that the
    maximum grows with every block (the first block's maximum is far too small)."""
    q, k, v = qkv(b, h, n, m, d, seed, torch.float64)
    a = math.sqrt(magnitude * math.sqrt(d))
    q[..., 0] = a
    k[..., 0] = a * torch.linspace(0, 1, m, dtype=torch.float64)
    return q, k, v


# ------------------------------------------------------------------------------ core


@title(N_("FlashAttention against PyTorch"))
@pytest.mark.core
def test_flash_matches_pytorch(impl):
    """Output against F.scaled_dot_product_attention and lse against torch.logsumexp:
    batch > 1, heads > 1, n != m, m not a multiple of block_size, several blocks."""
    check_flash(impl, *qkv(2, 3, 7, 11, 8, seed=10), block_size=4)
    check_flash(impl, *qkv(2, 2, 9, 5, 4, seed=20), block_size=2)
    check_flash(impl, *qkv(3, 2, 6, 13, 5, seed=30), block_size=5)


@title(N_("every block size"))
@pytest.mark.core
def test_flash_block_sizes(impl):
    """block_size 1, smaller than m, equal to m, larger than m, and the default (64) with
    m > 64: the answer never depends on it."""
    q, k, v = qkv(2, 2, 5, 9, 4, seed=40)
    for block_size in (1, 4, 9, 16):
        check_flash(impl, q, k, v, block_size)
    check_flash(impl, *qkv(1, 2, 3, 70, 4, seed=50), block_size=None)


@title(N_("causal FlashAttention"))
@pytest.mark.core
def test_flash_causal(impl):
    """causal=True (n == m): query i sees keys 0..i, for block sizes 1, 3 (m not a multiple),
    4, m and more than m."""
    q, k, v = qkv(2, 2, 10, 10, 4, seed=60)
    for block_size in (3, 1, 4, 10, 16):
        check_flash(impl, q, k, v, block_size, causal=True)


@title(N_("large scores"))
@pytest.mark.core
def test_flash_large_scores(impl):
    """Scores of magnitude 10⁴, positive for some queries and negative for others (a
    running maximum left out overflows, one that starts at 0 underflows), and rising along
    the keys (a maximum that is not updated overflows), float64; then magnitude 150 in
    float32 (beyond what float32's exp can hold either way)."""
    note = _("; scores of about +1e4, -1e4 and order 1")
    check_flash(impl, *large_scores(2, 2, 6, 11, 4, 1e4, seed=70, dtype=torch.float64), 4, note=note)
    check_flash(impl, *large_scores(2, 2, 6, 6, 4, 1e4, seed=80, dtype=torch.float64), 4,
                causal=True, note=note)
    check_flash(impl, *rising_scores(2, 2, 5, 13, 4, 1e4, seed=85), 4,
                note=_("; scores rising along the keys from about 0 to 1e4"))
    # float32 resolves scores of 150 to about 1e-5: a little more room than for order 1.
    check_flash(impl, *large_scores(2, 2, 6, 11, 4, 150.0, seed=90, dtype=torch.float32), 4,
                slack=5.0, note=_("; scores of about +150, -150 and order 1"))


@title(N_("never builds the whole score matrix"))
@pytest.mark.core
def test_flash_never_builds_the_score_matrix(impl):
    """Every tensor created during the call holds at most max(n, m) * max(block_size, d)
    elements per (batch, head): no (n, m) score matrix (or mask), with and without causal.
    Only the memory is judged here: the values are the other checks'."""
    check_flash(impl, *qkv(2, 2, 40, 48, 4, seed=100), 8, check_memory=True)
    check_flash(impl, *qkv(1, 2, 40, 40, 4, seed=110), 8, causal=True, check_memory=True)


def flash_case(rng):
    b, h, d = rng.randint(1, 2), rng.randint(1, 3), rng.randint(1, 6)
    causal = rng.random() < 0.4
    n = rng.randint(1, 9)
    m = n if causal else rng.randint(1, 12)
    return b, h, n, m, d, rng.randint(1, 13), causal, rng.randint(0, 10_000)


@title(N_("FlashAttention on random shapes"))
@pytest.mark.core
def test_flash_random_shapes(impl):
    """Random shapes, block sizes and causal, drawn from a fixed seed (the same every run)."""
    for b, h, n, m, d, block_size, causal, seed in drawn_cases(flash_case):
        check_flash(impl, *qkv(b, h, n, m, d, seed), block_size, causal=causal)


# ------------------------------------------------------------------------- follow-ups


@title(N_("FlashAttention in float64"))
@pytest.mark.followup
def test_flash_float64(impl):
    """float64 in, float64 out (output and lse), at float64 precision."""
    check_flash(impl, *qkv(2, 2, 7, 10, 6, seed=200, dtype=torch.float64), 3)
    check_flash(impl, *qkv(2, 3, 8, 8, 4, seed=210, dtype=torch.float64), 3, causal=True)


@title(N_("FlashAttention's gradients"))
@pytest.mark.followup
def test_flash_gradients(impl):
    """Gradients of q, k and v through output and lse equal PyTorch's."""
    check_flash(impl, *qkv(2, 2, 6, 9, 4, seed=300), 4, check_grads=True)
    check_flash(impl, *qkv(2, 2, 7, 7, 4, seed=310, dtype=torch.float64), 3, causal=True,
                check_grads=True)


@title(N_("half precision on a CUDA GPU"))
@pytest.mark.followup
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_flash_half_precision_on_cuda(impl):
    """float16 and bfloat16 on the GPU: the output keeps their dtype and device, lse is
    float32 (FlashAttention's) on the same device."""
    for i, dtype in enumerate((torch.float16, torch.bfloat16)):
        q, k, v = qkv(2, 2, 24, 40, 16, seed=400 + i, dtype=dtype, device="cuda")
        check_flash(impl, q, k, v, 16)
        check_flash(impl, *qkv(2, 2, 24, 24, 16, seed=410 + i, dtype=dtype, device="cuda"), 8,
                    causal=True)
