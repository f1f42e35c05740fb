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

import functools
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
from graders.core.mistakes import Suspect
from graders.core.report import describe_inputs, describe_value, title, verdict

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

NEG_INF = float("-inf")

# Hugging Face's eager attention (and Llama's) takes the softmax in float32 and casts back:
# correct, and for float64 inputs precise to float32's digits only (abs diff ~1e-7), which
# the contract allows (as in katas 13 and 15): the float64 checks grade the dtype and the
# behaviour, not the last digits.
FLOAT64_SLACK = 100.0

# Each mistake of the mask as the set of (query, key) pairs it allows: (slug, rule).
# The rules take i (n, 1) queries, j (1, n) keys, W window, S num_sinks.
RULES = {
    "ok": lambda i, j, W, S: (j <= i) & ((i - j < W) | (j < S)),
    "window+1": lambda i, j, W, S: (j <= i) & ((i - j <= W) | (j < S)),
    "window-1": lambda i, j, W, S: (j <= i) & ((i - j < W - 1) | (j < S)),
    "not-causal": lambda i, j, W, S: (i - j < W) | (j < S),
    "symmetric": lambda i, j, W, S: ((i - j).abs() < W) | ((j < S) & (j <= i)),
    "symmetric-sinks": lambda i, j, W, S: ((i - j).abs() < W) | (j < S),
    "no-sinks": lambda i, j, W, S: (j <= i) & (i - j < W),
    "sinks-anywhere": lambda i, j, W, S: ((j <= i) & (i - j < W)) | (j < S),
}
MASK_MISTAKES = (
    ("window-off-by-one", "window+1"),
    ("window-off-by-one", "window-1"),
    ("window-not-causal", "not-causal"),
    ("window-not-causal", "symmetric"),
    ("window-not-causal", "symmetric-sinks"),
    ("sinks-dropped", "no-sinks"),
    ("sinks-ignore-causality", "sinks-anywhere"),
)


# --------------------------------------------------------------------------- references


def allowed_pairs(n: int, window: int, num_sinks: int, rule: str = "ok", device=None) -> Tensor:
    """(n, n) bool, True where query i may see key j under ``rule`` (one of RULES)."""
    i = torch.arange(n, device=device)[:, None]
    j = torch.arange(n, device=device)[None, :]
    return RULES[rule](i, j, window, num_sinks)


def key_weights(n: int, window: int, num_sinks: int, rule: str = "ok",
                sinks_twice: bool = False) -> Tensor:
    """(n, n) float64: how many times key j enters query i's softmax (0, 1, or 2 for a sink
    inside the window under sinks-counted-twice)."""
    counts = allowed_pairs(n, window, num_sinks, rule).double()
    if sinks_twice:
        i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
        counts = counts + ((j < num_sinks) & (j <= i) & (i - j < window)).double()
    return counts


def dense_attention(q: Tensor, k: Tensor, v: Tensor, counts: Tensor,
                    scale: float | None = None) -> Tensor:
    """softmax over the keys with weight counts[i, j] (0 = blocked), float64 on the CPU;
    a query with no key gets zeros."""
    q64, k64, v64 = (t.detach().to("cpu", torch.float64) for t in (q, k, v))
    scale = 1 / math.sqrt(q.size(-1)) if scale is None else scale
    scores = q64 @ k64.transpose(-2, -1) * scale + counts.log()  # log 0 = -inf: blocked
    weights = torch.softmax(scores, dim=-1).nan_to_num(nan=0.0)
    return weights @ v64


def expected_attention(q: Tensor, k: Tensor, v: Tensor, window: int, num_sinks: int) -> Tensor:
    counts = key_weights(q.size(-2), window, num_sinks)
    return dense_attention(q, k, v, counts).to(q.dtype).to(q.device)


def attention_suspects(q: Tensor, k: Tensor, v: Tensor, window: int,
                       num_sinks: int) -> list[Suspect]:
    """What each catalogued mistake of the attention would return on this input."""
    n = q.size(-2)

    def predict(rule: str = "ok", scale: float | None = None, twice: bool = False):
        return lambda: dense_attention(q, k, v, key_weights(n, window, num_sinks, rule, twice),
                                       scale).to(q.dtype)

    suspects = [Suspect(slug, predict=predict(rule)) for slug, rule in MASK_MISTAKES
                if not (rule == "window-1" and window < 2)]
    suspects += [Suspect("sinks-dropped", matches=sinks_dropped_matcher(q, k, v, window, num_sinks)),
                 Suspect("sinks-counted-twice", predict=predict(twice=True)),
                 Suspect("missing-scale", predict=predict(scale=1.0)),
                 Suspect("mask-inverted", matches=inverted_mask_matcher(q, k, v, window, num_sinks))]
    classify = functools.cache(lambda got: key_set_mistake(got, q, k, v, window, num_sinks))
    suspects += [Suspect(slug, matches=lambda got, slug=slug: classify(HashableTensor(got)) == slug)
                 for slug in ROW_SLUGS]
    return suspects


ROW_SLUGS = ("window-off-by-one", "window-not-causal", "sinks-dropped", "sinks-ignore-causality",
             "mask-inverted")


class HashableTensor:
    """A learner's output as a cache key (by identity): one classification per output."""

    def __init__(self, tensor: Any):
        self.tensor = tensor

    def __hash__(self) -> int:
        return id(self.tensor)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, HashableTensor) and other.tensor is self.tensor


def key_set_mistake(got: HashableTensor, q, k, v, window: int, num_sinks: int) -> str | None:
    """Name a mask mistake query by query, however the keys were split into blocks: find
    for each query the set of keys its output attends to, among the sets [lo, hi] ∪
    [0, s) (a range and a sink prefix), then compare it with the right set. Named only
    when every query is explained and every wrong one shows the same mistake."""
    out = got.tensor
    n = q.size(-2)
    if not isinstance(out, Tensor) or out.shape != q.shape or n > 16:
        return None
    q64, k64, v64 = (t.detach().to("cpu", torch.float64) for t in (q, k, v))
    out64 = out.detach().to("cpu", torch.float64)
    scores = q64 @ k64.transpose(-2, -1) / math.sqrt(q.size(-1))  # (b, h, n, n)
    keys = torch.arange(n)
    candidates = [(lo, hi, s) for lo in range(n) for hi in range(lo, n)
                  for s in range(min(num_sinks, n) + 1)]
    sets = torch.stack([((keys >= lo) & (keys <= hi)) | (keys < s) for lo, hi, s in candidates])
    allowed = allowed_pairs(n, window, num_sinks)
    labels = set()
    for i in range(n):
        # The ranges, and each range less the keys query i may see (the mask read inverted).
        inverted = sets & ~allowed[i]
        row_sets = torch.cat([sets, inverted[inverted.any(-1)]])
        row = scores[..., i:i + 1, :].masked_fill(~row_sets, NEG_INF)  # (b, h, C, n)
        outputs = torch.softmax(row, dim=-1) @ v64  # (b, h, C, d)
        fits = torch.isclose(outputs, out64[..., i:i + 1, :], rtol=1e-3, atol=1e-4).all(-1)
        fits = fits.flatten(0, -2).all(0)  # (C,)
        right = set(allowed[i].nonzero().flatten().tolist())
        found = [(c >= len(sets), set(row_sets[c].nonzero().flatten().tolist()))
                 for c in fits.nonzero().flatten().tolist()]
        if any(keys_ == right for _inv, keys_ in found):
            continue
        if not found:
            # An inverted mask leaves some queries no key at all: NaN or zeros there.
            empty = out64[..., i, :]
            if bool(torch.isnan(empty).all() or (empty == 0).all()):
                labels.add("no-key")
                continue
            return None
        if any(is_inverted for is_inverted, _keys in found):  # only keys it must not see
            labels.add("mask-inverted")
        else:
            labels.add(row_mistake(found[0][1], right, i, window, num_sinks))
    labels.discard("no-key") if "mask-inverted" in labels else None
    return labels.pop() if len(labels) == 1 else None


def row_mistake(got: set[int], right: set[int], i: int, window: int, num_sinks: int) -> str | None:
    """What a query that attended to ``got`` instead of ``right`` got wrong."""
    future = {j for j in got if j > i}
    if future:
        if all(j < num_sinks for j in future) and got - future == right:
            return "sinks-ignore-causality"
        return "window-not-causal"
    missing, extra = right - got, got - right
    if not extra and missing and all(j < num_sinks and i - j >= window for j in missing):
        return "sinks-dropped"
    if (not missing and extra == {i - window}) or (not extra and missing == {i - window + 1}):
        return "window-off-by-one"
    return "unknown"


def sinks_dropped_matcher(q, k, v, window: int, num_sinks: int):
    """sinks-dropped, query by query: every query's output is either the right one or the
    one without the sink keys that lie before its window, and some query shows the
    latter where the two differ. A block-wise attention that adds the sinks only to the
    first block of queries (whose keys start at 0 anyway) does this, at any n."""
    n = q.size(-2)
    right = dense_attention(q, k, v, key_weights(n, window, num_sinks))
    dropped = dense_attention(q, k, v, key_weights(n, window, num_sinks, "no-sinks"))

    def per_query(a: Tensor, b: Tensor) -> Tensor:  # (n,) whether row i of a is close to b's
        close = torch.isclose(a, b, rtol=1e-3, atol=1e-4).all(-1)  # (b, h, n)
        return close.flatten(0, -2).all(0)

    differs = ~per_query(dropped, right)

    def matches(got: Any) -> bool:
        if not isinstance(got, Tensor) or got.shape != q.shape or not bool(differs.any()):
            return False
        got64 = got.detach().to("cpu", torch.float64)
        as_dropped = per_query(got64, dropped)
        return bool((as_dropped | per_query(got64, right)).all() and (as_dropped & differs).any())

    return matches


def inverted_mask_matcher(q, k, v, window: int, num_sinks: int):
    """mask-inverted in the attention: each query attended to exactly the keys it must not
    see (the project's mask handed to SDPA as its attn_mask). Queries with no blocked key
    (any value there) are left out."""
    blocked = ~allowed_pairs(q.size(-2), window, num_sinks)
    predicted = dense_attention(q, k, v, blocked.double())
    rows = blocked.any(-1)

    def matches(got: Any) -> bool:
        if not isinstance(got, Tensor) or got.shape != predicted.shape or not bool(rows.any()):
            return False
        got64 = got.detach().to("cpu", torch.float64)[..., rows, :]
        return bool(torch.allclose(got64, predicted[..., rows, :], rtol=1e-3, atol=1e-4))

    return matches


def mask_suspects(n: int, window: int, num_sinks: int) -> list[Suspect]:
    """What each mask mistake returns, as 0/1 (1 = blocked), as the check compares it."""
    suspects = [Suspect(slug, predict=lambda rule=rule: (~allowed_pairs(n, window, num_sinks, rule))
                        .to(torch.int8))
                for slug, rule in MASK_MISTAKES if not (rule == "window-1" and window < 2)]
    suspects.append(Suspect("mask-inverted",
                            predict=lambda: allowed_pairs(n, window, num_sinks).to(torch.int8)))
    return suspects


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


# ----------------------------------------------------------------------------- cache


def expected_positions(p: int, window: int, num_sinks: int) -> list[int]:
    """What the query at position p may attend to, in increasing order."""
    return [j for j in range(p + 1) if j < num_sinks or p - j < window]


def positions_of(got_k: Tensor, keys: Tensor, last: int) -> list[int] | None:
    """The position of each returned key (b, h, s, d), found bit for bit among the appended
    keys[..., :last + 1, :]; None if some returned key is no appended position."""
    got = got_k.detach().to("cpu", keys.dtype)
    same = (got[..., :, None, :] == keys[..., None, :last + 1, :]).all(-1)  # (b, h, s, p+1)
    same = same.flatten(0, 1).all(0)  # (s, p + 1)
    if not bool(same.any(-1).all()):
        return None
    return [int(row.nonzero()[0]) for row in same]


def cache_mistake(history: list[tuple[int, list[int] | None]], window: int,
                  num_sinks: int) -> str | None:
    """The one catalogued cache mistake that explains the positions returned after every
    append (``history``: (last position p, positions returned)), or None."""
    if any(got is None for _p, got in history):
        return None
    right = [(p, got, expected_positions(p, window, num_sinks)) for p, got in history]
    # Each mistake: (what holds after every append, what shows it after at least one).
    hypotheses = {
        "cache-out-of-order": (lambda got, want: sorted(got) == want,
                               lambda got, want: got != want),
        "sinks-counted-twice": (lambda got, want: sorted(set(got)) == want and all(
            got.count(j) == 1 or j < num_sinks for j in got),
            lambda got, want: len(got) > len(set(got))),
        "cache-evicts-sinks": (lambda got, want: sorted(got) == [j for j in want if j in got]
                               and all(j < num_sinks for j in want if j not in got),
                               lambda got, want: len(got) < len(want)),
        "cache-unbounded": (lambda got, want: len(set(got)) == len(got) and set(want) <= set(got),
                            lambda got, want: len(got) > len(want)),
    }
    explaining = [slug for slug, (always, once) in hypotheses.items()
                  if all(always(got, want) for _p, got, want in right)
                  and any(once(got, want) for _p, got, want in right)]
    wrong_somewhere = any(got != want for _p, got, want in right)
    for other in (window + 1, window - 1):  # a rule kept consistently: window-off-by-one
        if other >= 1 and wrong_somewhere and all(sorted(got) == expected_positions(p, other, num_sinks)
                              and len(set(got)) == len(got) for p, got in history):
            explaining = ["window-off-by-one"]
    return explaining[0] if len(explaining) == 1 else None


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
