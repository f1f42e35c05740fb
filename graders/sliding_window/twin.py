"""Kata 18's twin: the dense float64 reference (every (query, key) pair scored, the
contract's mask applied) and each catalogued mistake as its own set of allowed pairs, or
its own cache positions (the suspects they yield).
"""

from __future__ import annotations

import functools
from typing import Any

import torch
from torch import Tensor

from graders.core.mistakes import Suspect
from graders.twins.attention import dense


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
    q, k, v = (t.detach().cpu() for t in (q, k, v))
    return dense(q, k, v, counts.log(), scale)  # log 0 = -inf: blocked; log 2: counted twice


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
        # Query i against each set (C, n) at once: (b, h, C, d).
        outputs = dense(q64[..., i:i + 1, :], k64, v64, ~row_sets)
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


# ----------------------------------------------------------------------------- cache


def expected_positions(p: int, window: int, num_sinks: int) -> list[int]:
    """What the query at position p may attend to, in increasing order."""
    return [j for j in range(p + 1) if j < num_sinks or p - j < window]


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
