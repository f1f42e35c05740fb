"""Grader for kata 18: ``sliding_window_mask``, ``sliding_window_attention`` and
``RollingKVCache`` (Mistral's sliding window, StreamingLLM's attention sinks, the rolling
key/value cache).

Expected numbers come from a dense float64 reference: every (query, key) pair scored, the
contract's mask applied, softmax, cast to the input's dtype. The mask mistakes are each a
different set of allowed (query, key) pairs (or, for sinks-counted-twice, a sink key
weighted twice), so a wrong mask or output is named by recomputing each mistake's set on
the same input and matching.

The memory rule is checked by behaviour (graders.core.memory): the largest tensor the call
creates, with n far larger than the window, may not hold n² / 2 elements per (batch, head).
The cache is fed a fresh tensor per append and judged on the positions its keys_values()
returns (found by matching each returned key, bit for bit, against the appended ones), on
decoding with them, and on the storages its attributes keep alive.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
from torch import Tensor

from graders.core.compare import expect_close, expect_grads_close, expect_tracks_grad, expect_tuple
from graders.core.i18n import N_, _
from graders.core.implementation import Implementation
from graders.core.inputs import drawn_cases, grads_of, leaf_copies, randn, weighted_sum
from graders.core.memory import CreatedTensors, kept_storages
from graders.core.report import describe_inputs, describe_value, title, verdict
from graders.sliding_window.twin import (
    allowed_pairs,
    attention_suspects,
    cache_mistake,
    dense_attention,
    expected_attention,
    expected_positions,
    key_weights,
    mask_suspects,
)

__all__ = [
    "test_mask_matches_the_rule",
    "test_attention_matches_reference",
    "test_attention_edge_windows",
    "test_attention_never_builds_the_score_matrix",
    "test_attention_random_shapes",
    "test_attention_sinks_far_from_the_queries",
    "test_cache_decodes_like_the_whole_sequence",
    "test_cache_returns_the_right_positions",
    "test_cache_memory_is_bounded",
    "test_attention_float64",
    "test_attention_gradients",
    "test_half_precision_on_cuda",
]

# Hugging Face's eager attention (and Llama's) takes the softmax in float32 and casts back:
# correct, and for float64 inputs precise to float32's digits only (abs diff ~1e-7), which
# the contract allows (as in katas 13 and 15): the float64 checks grade the dtype and the
# behaviour, not the last digits.
FLOAT64_SLACK = 100.0


def qkv(b: int, h: int, n: int, d: int, seed: int, dtype=torch.float32,
        device="cpu") -> tuple[Tensor, Tensor, Tensor]:
    return tuple(randn(b, h, n, d, seed=seed + i, dtype=dtype, device=device) for i in range(3))


def describe_call(window: int, num_sinks: int, **tensors: Any) -> str:
    return describe_inputs(**tensors, window=window, num_sinks=num_sinks)


# ------------------------------------------------------------------------------ mask


def check_mask(impl: Implementation, n: int, window: int, num_sinks: int,
               device: str | None = None) -> None:
    on = describe_inputs(n=n, window=window, num_sinks=num_sinks, device=device)
    kwargs = {} if device is None else {"device": device}
    got = impl.call(impl.attr("sliding_window_mask"), n, window, num_sinks,
                    what="sliding_window_mask", on=on, **kwargs)
    expected = ~allowed_pairs(n, window, num_sinks, device=device or "cpu")
    check = _("the mask (n, n), 1 = blocked")
    if isinstance(got, Tensor) and got.dtype == torch.bool and got.shape == expected.shape:
        # Shown as 0 and 1: a preview of True and False would read as prose.
        got, expected = got.to(torch.int8), expected.to(torch.int8)
    expect_close(got, expected, check, on, mask_suspects(n, window, num_sinks))


# ------------------------------------------------------------------------- attention


def run_attention(impl: Implementation, q, k, v, window: int, num_sinks: int, on: str,
                  recorder: CreatedTensors | None = None) -> Any:
    """The learner's output; num_sinks=0 is left to the default. With ``recorder``, every
    tensor created during the call is recorded."""
    fn = impl.attr("sliding_window_attention")
    kwargs = {"num_sinks": num_sinks} if num_sinks else {}
    if recorder is None:
        return impl.call(fn, q, k, v, window, what="sliding_window_attention", on=on, **kwargs)

    def recorded(*args, **kw):
        with recorder:
            return fn(*args, **kw)

    return impl.call(recorded, q, k, v, window, what="sliding_window_attention", on=on, **kwargs)


def check_attention(impl: Implementation, q: Tensor, k: Tensor, v: Tensor, window: int,
                    num_sinks: int = 0, *, check_grads: bool = False) -> None:
    """The output against the dense float64 reference, mistakes named; optionally the
    gradients of q, k and v against the reference's. float64 to float32's digits
    (``FLOAT64_SLACK``)."""
    on = describe_call(window, num_sinks, q=q, k=k, v=v)
    inputs = leaf_copies(q, k, v) if check_grads else (q, k, v)
    output = run_attention(impl, *inputs, window, num_sinks, on)
    slack = FLOAT64_SLACK if q.dtype == torch.float64 else 1.0
    expect_close(output, expected_attention(q, k, v, window, num_sinks),
                 _("the output (b, h, n, d)"), on, attention_suspects(q, k, v, window, num_sinks),
                 slack=slack)
    if not check_grads:
        return
    check = _("backward through the output")
    expect_tracks_grad({_("the output"): output}, check, on)
    got = grads_of(weighted_sum([output], seed=7), dict(zip("qkv", inputs)), on)
    ref_inputs = leaf_copies(q, k, v)
    scores = ref_inputs[0] @ ref_inputs[1].transpose(-2, -1) / math.sqrt(q.size(-1))
    scores = scores + key_weights(q.size(-2), window, num_sinks).log().to(q.dtype)
    ref_out = torch.softmax(scores, dim=-1) @ ref_inputs[2]
    want = grads_of(weighted_sum([ref_out], seed=7), dict(zip("qkv", ref_inputs)))
    expect_grads_close({f"`{name}`": g for name, g in got.items()},
                       {f"`{name}`": g for name, g in want.items()}, check, on, slack=slack)


def check_memory(impl: Implementation, q: Tensor, k: Tensor, v: Tensor, window: int,
                 num_sinks: int) -> None:
    """The memory rule alone: no tensor created during the call holds n² / 2 elements or
    more per (batch, head). The values are the other checks'."""
    on = describe_call(window, num_sinks, q=q, k=k, v=v)
    recorder = CreatedTensors()
    run_attention(impl, q, k, v, window, num_sinks, on, recorder)
    numel, shape, op = recorder.largest or (0, (), "")
    n, b_h = q.size(-2), q[..., 0, 0].numel()
    if 2 * numel < b_h * n * n:
        return
    whole = shape[-2:] == (n, n) or numel >= b_h * n * n
    raise verdict(_("the size of every tensor sliding_window_attention creates"), on, [
        _("your code created a tensor of shape {shape} ({count} elements, by {op})",
          shape=shape, count=f"{numel:,}", op=op),
        _("the limit is under n² / 2 = {limit} elements per (batch, head): with window + "
          "num_sinks = {seen}, each query needs only {seen} keys", limit=f"{n * n // 2:,}",
          seen=window + num_sinks),
        _("score each query against the keys it may see (a band (n, window + num_sinks), or "
          "query blocks against their keys); never an (n, n) matrix or mask"),
    ], "full-score-matrix" if whole else None)


def positions_of(got_k: Tensor, keys: Tensor, last: int) -> list[int] | None:
    """The position of each returned key (b, h, s, d), found bit for bit among the appended
    keys[..., :last + 1, :]; None if some returned key is no appended position."""
    got = got_k.detach().to("cpu", keys.dtype)
    same = (got[..., :, None, :] == keys[..., None, :last + 1, :]).all(-1)  # (b, h, s, p+1)
    same = same.flatten(0, 1).all(0)  # (s, p + 1)
    if not bool(same.any(-1).all()):
        return None
    return [int(row.nonzero()[0]) for row in same]


class CacheRun:
    """One sequence fed to the learner's cache in chunks, a fresh tensor per append."""

    def __init__(self, impl: Implementation, b: int, h: int, d: int, chunks: list[int],
                 window: int, num_sinks: int, seed: int, dtype=torch.float32, device="cpu"):
        self.impl, self.window, self.num_sinks, self.chunks = impl, window, num_sinks, chunks
        length = sum(chunks)
        self.q, self.k, self.v = qkv(b, h, length, d, seed, dtype, device)
        self.on = _("RollingKVCache(window={window}, num_sinks={num_sinks}), appends of "
                    "{chunks} positions, k and v {shape} each",
                    window=window, num_sinks=num_sinks, chunks=chunks,
                    shape=f"{str(dtype)[6:]} ({b}, {h}, t, {d})")
        self.cache = impl.call(impl.attr("RollingKVCache"), window, num_sinks,
                               what="RollingKVCache(window, num_sinks)", on=self.on)

    def steps(self):
        """Append each chunk; yield (chunk length t, last position p, keys_values())."""
        start = 0
        for t in self.chunks:
            k_chunk = self.k[..., start:start + t, :].clone()
            v_chunk = self.v[..., start:start + t, :].clone()
            self.impl.call(self.cache.append, k_chunk, v_chunk, what="append(k, v)", on=self.on)
            del k_chunk, v_chunk  # only the cache may keep them alive now
            start += t
            result = self.impl.call(self.cache.keys_values, what="keys_values()", on=self.on)
            got_k, got_v = expect_tuple(result, 2, "keys_values()", self.on, "k, v")
            yield t, start - 1, got_k, got_v

    def check_tensor(self, got: Any, name: str, p: int) -> Tensor:
        b, h, _n, d = self.k.shape
        check = _("keys_values() after position {p}: {name}", p=p, name=name)
        if not isinstance(got, Tensor):
            raise verdict(check, self.on, [_("expected a torch.Tensor, got {value}",
                                             value=describe_value(got))])
        if got.dim() != 4 or tuple(got.shape[:2]) != (b, h) or got.size(-1) != d:
            raise verdict(check, self.on, [_("expected shape ({b}, {h}, s, {d}), got shape "
                                             "{shape}", b=b, h=h, d=d, shape=tuple(got.shape))])
        if got.dtype != self.k.dtype or got.device != self.k.device:
            raise verdict(check, self.on, [_("expected {dtype} on {device}, got {got_dtype} on "
                                             "{got_device} (keep what append received)",
                                             dtype=self.k.dtype, device=self.k.device,
                                             got_dtype=got.dtype, got_device=got.device)])
        return got


def check_cache_positions(impl: Implementation, run: CacheRun, decode: bool) -> None:
    """After every append: keys_values() holds exactly the expected positions, each once,
    in increasing order, bit for bit (``decode`` False); or the last position's query,
    attending to them, gives sliding_window_attention's output there (``decode`` True).
    The first failing append is reported, the mistake named from every append's
    positions."""
    history: list[tuple[int, list[int] | None]] = []
    failure: tuple[int, list[str]] | None = None
    whole = expected_attention(run.q, run.k, run.v, run.window, run.num_sinks) if decode else None
    for _t, p, got_k, got_v in run.steps():
        got_k, got_v = run.check_tensor(got_k, "k", p), run.check_tensor(got_v, "v", p)
        if got_k.shape != got_v.shape:
            raise verdict(_("keys_values() after position {p}", p=p), run.on, [
                _("k has shape {k_shape} but v has shape {v_shape}",
                  k_shape=tuple(got_k.shape), v_shape=tuple(got_v.shape))])
        got = positions_of(got_k, run.k, p)
        history.append((p, got))
        if failure is not None:
            continue
        want = expected_positions(p, run.window, run.num_sinks)
        if decode:
            query = run.q[..., p:p + 1, :]
            counts = torch.ones(1, got_k.size(-2), dtype=torch.float64)
            out = dense_attention(query, got_k, got_v, counts)
            exp = whole[..., p:p + 1, :].detach().to("cpu", torch.float64)
            if not torch.allclose(out, exp, rtol=1e-4, atol=1e-5):
                failure = (p, [
                    _("the query at position {p}, attending to keys_values(), gives {got}",
                      p=p, got=describe_value(out.to(run.q.dtype))),
                    _("sliding_window_attention over the whole sequence gives {expected}",
                      expected=describe_value(exp.to(run.q.dtype))),
                    positions_line(got, want)])
            continue
        if got is None:
            failure = (p, [_("some returned key is no appended position's key (keep the keys "
                             "as append received them, bit for bit)"), positions_line(got, want)])
        elif got != want:
            failure = (p, [positions_line(got, want)])
        elif not all(torch.equal(got_v[..., r, :].cpu(), run.v[..., j, :].cpu())
                     for r, j in enumerate(got)):
            failure = (p, [_("the keys are right, but the values are not those appended at "
                             "the same positions")])
    if failure is not None:
        p, details = failure
        check = (_("decoding position {p} through the cache", p=p) if decode
                 else _("keys_values() after position {p}", p=p))
        raise verdict(check, run.on, details, cache_mistake(history, run.window, run.num_sinks))


def positions_line(got: list[int] | None, want: list[int]) -> str:
    shown = "?" if got is None else got
    return _("expected the positions {expected}, got {got}", expected=want, got=shown)


def check_cache_memory(impl: Implementation, run: CacheRun) -> None:
    """After every append, the storages the cache's attributes keep alive hold at most
    2 * b * h * d * (num_sinks + window + t) elements."""
    b, h, _n, d = run.k.shape
    for t, p, _k, _v in run.steps():
        del _k, _v
        # Keys and values only: an index or position tensor the cache keeps is no copy of them.
        kept = [s for s in kept_storages(run.cache, "cache") if s.floating]
        total = sum(s.elements for s in kept)
        limit = 2 * b * h * d * (run.num_sinks + run.window + t)
        if total <= limit:
            continue
        largest = max(kept, key=lambda s: s.elements)
        raise verdict(_("the memory the cache keeps after position {p}", p=p), run.on, [
            _("its attributes keep {count} elements alive; the bound is 2 * b * h * d * "
              "(num_sinks + window + t) = {limit}", count=f"{total:,}", limit=f"{limit:,}"),
            _("the largest: {path}, shape {shape}, on a storage of {elements} elements",
              path=largest.path, shape=largest.shape, elements=f"{largest.elements:,}"),
            _("keep copies (clone) of what you need, never views of the appended chunks, and "
              "drop positions that left the window"),
        ], "cache-unbounded")


# ------------------------------------------------------------------------------ core


@title(N_("the mask against the rule"))
@pytest.mark.core
def test_mask_matches_the_rule(impl):
    """sliding_window_mask: query i sees key j iff j <= i and (i - j < window or j <
    num_sinks); window counts the query itself; sinks more than the window or than n."""
    for n, window, num_sinks in ((8, 3, 2), (7, 2, 0), (6, 3, 4), (5, 1, 1), (4, 6, 0),
                                 (5, 2, 9)):
        check_mask(impl, n, window, num_sinks)
    check_mask(impl, 6, 2, 1, device="cpu")


@title(N_("sliding-window attention against the masked softmax"))
@pytest.mark.core
def test_attention_matches_reference(impl):
    """sliding_window_attention against the masked softmax, batch > 1, heads > 1, with
    and without sinks."""
    check_attention(impl, *qkv(2, 3, 11, 4, seed=10), 3)
    check_attention(impl, *qkv(2, 2, 13, 5, seed=20), 4, 2)
    check_attention(impl, *qkv(3, 2, 9, 3, seed=30), 2, 1)


@title(N_("windows of 1 and of n or more, many sinks"))
@pytest.mark.core
def test_attention_edge_windows(impl):
    """window 1 (the query alone, plus sinks), window >= n (plain causal), sinks more than
    the window and more than n, n = 1."""
    q, k, v = qkv(2, 2, 7, 4, seed=40)
    for window, num_sinks in ((1, 0), (1, 2), (7, 0), (9, 1), (2, 5), (3, 10)):
        check_attention(impl, q, k, v, window, num_sinks)
    check_attention(impl, *qkv(2, 1, 1, 4, seed=50), 3, 2)


@title(N_("never builds an (n, n) matrix"))
@pytest.mark.core
def test_attention_never_builds_the_score_matrix(impl):
    """With n much larger than the window (n > 2 (window + num_sinks) d), no tensor created
    during the call holds n² / 2 elements per (batch, head). Only memory is judged here."""
    check_memory(impl, *qkv(1, 1, 80, 4, seed=100), 3, 2)
    check_memory(impl, *qkv(1, 2, 64, 4, seed=110), 4, 0)


def attention_case(rng):
    n = rng.randint(1, 12)
    return (rng.randint(1, 2), rng.randint(1, 3), n, rng.randint(1, 6), rng.randint(1, n + 2),
            rng.choice((0, 0, 1, 2, 4)), rng.randint(0, 10_000))


@title(N_("sliding-window attention on random shapes"))
@pytest.mark.core
def test_attention_random_shapes(impl):
    """Random shapes, windows and sinks, drawn from a fixed seed (the same every run)."""
    for b, h, n, d, window, num_sinks, seed in drawn_cases(attention_case, count=8):
        check_attention(impl, *qkv(b, h, n, d, seed), window, num_sinks)


@title(N_("sinks seen from queries far past them"))
@pytest.mark.core
def test_attention_sinks_far_from_the_queries(impl):
    """Long sequences with small windows: the queries far from position 0 (past any first
    block of queries an implementation may use, up to 512 rows) still see the sinks."""
    check_attention(impl, *qkv(1, 2, 600, 8, seed=80), 5, 3)
    check_attention(impl, *qkv(1, 1, 1100, 4, seed=90), 16, 4)


CACHE_CASES = (  # (b, h, d, chunks, window, num_sinks, seed)
    (2, 2, 3, [1] * 11, 3, 2, 200),
    (2, 2, 3, [7, 1, 1, 2, 1, 3, 1, 1], 3, 2, 210),
    (1, 2, 4, [1, 2, 1, 1, 4, 1, 1], 2, 3, 220),
    (2, 1, 3, [5, 1, 1, 1, 1], 4, 0, 230),
    (1, 1, 2, [1, 1, 3, 1, 1], 2, 6, 240),
)


@title(N_("decoding through the cache"))
@pytest.mark.core
def test_cache_decodes_like_the_whole_sequence(impl):
    """Appending position by position (or a prefill chunk, then chunks of several sizes),
    the last position's query attending to keys_values() gives sliding_window_attention's
    output at that position, with sinks and without."""
    for b, h, d, chunks, window, num_sinks, seed in CACHE_CASES:
        check_cache_positions(impl, CacheRun(impl, b, h, d, chunks, window, num_sinks, seed),
                              decode=True)


@title(N_("the positions the cache returns"))
@pytest.mark.core
def test_cache_returns_the_right_positions(impl):
    """keys_values() after each append: the positions j <= p with j < num_sinks or
    p - j < window, each once, in increasing order, bit for bit (keys and values)."""
    for b, h, d, chunks, window, num_sinks, seed in CACHE_CASES:
        check_cache_positions(impl, CacheRun(impl, b, h, d, chunks, window, num_sinks, seed),
                              decode=False)


@title(N_("the cache's memory stays bounded"))
@pytest.mark.core
def test_cache_memory_is_bounded(impl):
    """After each append (a prefill chunk, then single positions and small chunks), the
    storages reachable from the cache's attributes hold at most
    2 * b * h * d * (num_sinks + window + t) elements: no view of an appended chunk, no
    position kept past the window."""
    for chunks, window, num_sinks in (([12, 1, 1, 2, 1, 1], 3, 2), ([1] * 9, 2, 1),
                                      ([10, 1, 3, 1], 4, 0)):
        check_cache_memory(impl, CacheRun(impl, 2, 2, 3, chunks, window, num_sinks, seed=300))


# ------------------------------------------------------------------------- follow-ups


@title(N_("float64"))
@pytest.mark.followup
def test_attention_float64(impl):
    """float64 in, float64 out, at float64 precision; the cache keeps float64 bit for bit."""
    check_attention(impl, *qkv(2, 2, 10, 4, seed=400, dtype=torch.float64), 3, 2)
    run = CacheRun(impl, 1, 2, 3, [4, 1, 2, 1], 2, 1, seed=410, dtype=torch.float64)
    check_cache_positions(impl, run, decode=False)


@title(N_("gradients of q, k and v"))
@pytest.mark.followup
def test_attention_gradients(impl):
    """float64 gradients of q, k and v equal those of the masked softmax."""
    check_attention(impl, *qkv(2, 2, 9, 4, seed=500, dtype=torch.float64), 3, 2,
                    check_grads=True)
    check_attention(impl, *qkv(1, 2, 6, 3, seed=510, dtype=torch.float64), 2,
                    check_grads=True)


@title(N_("half precision on a CUDA GPU"))
@pytest.mark.followup
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_half_precision_on_cuda(impl):
    """float16 and bfloat16 on the GPU keep their dtype and device: the mask on the device
    asked for, the attention, the cache."""
    check_mask(impl, 9, 3, 2, device="cuda")
    for i, dtype in enumerate((torch.float16, torch.bfloat16)):
        check_attention(impl, *qkv(2, 2, 24, 16, seed=600 + i, dtype=dtype, device="cuda"), 5, 2)
        run = CacheRun(impl, 2, 2, 8, [6, 1, 2, 1], 3, 2, seed=610 + i, dtype=dtype, device="cuda")
        check_cache_positions(impl, run, decode=False)
