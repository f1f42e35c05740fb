"""Kata 21's twin: the toy models and the exact distribution of one speculative step.

A step's output is random, so the grader does not compare it with one reference output:
:func:`step_distribution` enumerates every draft sequence and every acceptance outcome on
a toy model (V <= 4, gamma <= 3) and gives the exact probability of each outcome
``(tokens, num_accepted)``. With ``mistake`` set it gives the distribution that mistake
produces instead, so a learner's draws are named by the mistake whose distribution they
fit (graders/speculative/checks.py). Plain Python floats in float64 throughout.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Iterator

import torch
from torch import Tensor

Outcome = tuple[tuple[int, ...], int]  # (emitted tokens, num_accepted)
Distribution = dict[Outcome, float]

# A switch -> the catalogued mistake it reproduces. A switch with ":" is a second way of
# making the same mistake.
MISTAKE_OF: dict[str, str] = {
    "ratio-inverted": "ratio-inverted",
    "residual-from-target": "residual-from-target",
    "residual-from-draft": "residual-from-draft",
    "residual-not-normalised": "residual-not-normalised",
    "residual-not-normalised:unclamped": "residual-not-normalised",
    "residual-not-normalised:first": "residual-not-normalised",
    "bonus-token-missing": "bonus-token-missing",
    "bonus-from-wrong-position": "bonus-from-wrong-position",
    "bonus-from-wrong-position:first": "bonus-from-wrong-position",
    "bonus-from-wrong-position:draft": "bonus-from-wrong-position",
    "draft-not-sampled": "draft-not-sampled",
    "position-off-by-one": "position-off-by-one",
    "position-off-by-one:draft": "position-off-by-one",
    "no-stop-at-rejection": "no-stop-at-rejection",
    "no-stop-at-rejection:count": "no-stop-at-rejection",
    "no-stop-at-rejection:skip": "no-stop-at-rejection",
    "shared-uniform:tests": "shared-uniform",
    "shared-uniform:resample": "shared-uniform",
    "shared-uniform:all": "shared-uniform",
}


# --------------------------------------------------------------------------- toy models


@dataclass(eq=False)
class ToyModel:
    """A causal model over a toy vocabulary: the distribution after a context is one of
    ``table``'s rows, chosen by a rolling hash of the *whole* context, so it depends on
    every token before it, and (with ``period`` 2) by the parity of its position, so that
    neighbouring positions differ even on average over contexts. Called like the contract's
    model functions: tokens ``(L,)`` int64 -> probabilities ``(L, V)`` in ``dtype``, row j
    the distribution after tokens[0..j].
    """

    table: Tensor  # (period · states, V) float64, rows summing to 1; row (j % period) · states + hash
    dtype: torch.dtype = torch.float64
    salt: int = 0
    period: int = 1
    _cast: Tensor = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._cast = self.table.to(self.dtype)

    @property
    def vocab(self) -> int:
        return self.table.size(1)

    def states(self, tokens: list[int]) -> list[int]:
        """The table row after each prefix tokens[0..j]."""
        out, h = [], self.salt
        states = self.table.size(0) // self.period
        for j, t in enumerate(tokens):
            h = (h * 7 + t + 1) % states
            out.append((j % self.period) * states + h)
        return out

    def __call__(self, tokens: Tensor) -> Tensor:
        return self._cast[self.states(tokens.tolist())]

    def row(self, context: tuple[int, ...]) -> list[float]:
        """The float64 distribution of the token after ``context``, as a list."""
        return self._rows[self.states(list(context))[-1]]

    @functools.cached_property
    def _rows(self) -> list[list[float]]:
        return self.table.tolist()

    def as_dtype(self, dtype: torch.dtype) -> "ToyModel":
        return ToyModel(self.table, dtype, self.salt, self.period)


def acceptance_rate(p: list[float], q: list[float]) -> float:
    """alpha = sum_x min(p(x), q(x)) = 1 - TV(p, q): the chance a drafted token is kept."""
    return sum(min(a, b) for a, b in zip(p, q))


@functools.lru_cache(maxsize=None)
def toy_pair(vocab: int, seed: int, states: int = 11) -> tuple[ToyModel, ToyModel]:
    """(target, draft) whose rows are built so that every rule of the step matters. In each
    row the draft puts 75-90 % of its mass on a "draft-heavy" set of tokens (the first
    half of the vocabulary at even positions, the second half at odd ones), where the
    target has r times the draft's probability, r drawn in [0.3, 0.5]: a drafted token is
    mostly kept with a probability between 0.3 and 0.5. The target's other tokens get more
    than the draft's, in the same proportions, so the residual max(0, p - q) has two tokens
    or more. Rows differ by context (a rolling hash) and by the parity of the position, so
    a row read one position off is off on average too. Seeded: the same tables every run."""
    g = torch.Generator().manual_seed(seed)

    def uniform(low: float, high: float, n: int = 1) -> Tensor:
        return low + (high - low) * torch.rand(n, generator=g, dtype=torch.float64)

    heavy_size = max(1, vocab - 2) if vocab < 4 else vocab // 2
    p_rows, q_rows = [], []
    for parity in (0, 1):
        heavy = list(range(heavy_size)) if parity == 0 else list(range(vocab - heavy_size, vocab))
        light = [t for t in range(vocab) if t not in heavy]
        for _state in range(states):
            p, q = torch.zeros(vocab, dtype=torch.float64), torch.zeros(vocab, dtype=torch.float64)
            heavy_mass = float(uniform(0.75, 0.9))
            split = uniform(0.3, 1.0, len(heavy))
            q[heavy] = heavy_mass * split / split.sum()
            p[heavy] = q[heavy] * uniform(0.3, 0.5, len(heavy))
            weights = uniform(0.3, 1.0, len(light))
            q[light] = (1 - heavy_mass) * weights / weights.sum()
            p[light] = (1 - float(p[heavy].sum())) * weights / weights.sum()
            p_rows.append(p)
            q_rows.append(q)
    return (ToyModel(torch.stack(p_rows), salt=1, period=2),
            ToyModel(torch.stack(q_rows), salt=1, period=2))


# ------------------------------------------------------------------- the exact distribution


def _draw(probs: list[float]) -> Iterator[tuple[int, float]]:
    """The tokens of a distribution with positive probability, with it."""
    return ((t, w) for t, w in enumerate(probs) if w > 0)


def _normalised_residual(p: list[float], q: list[float]) -> list[float]:
    residual = [max(0.0, a - b) for a, b in zip(p, q)]
    total = sum(residual)
    return [r / total for r in residual] if total > 0 else list(p)


def _resample(p: list[float], q: list[float], mistake: str | None) -> list[tuple[int, float]]:
    """The distribution of the token emitted at a rejection."""
    if mistake == "residual-from-target":
        return list(_draw(p))
    if mistake == "residual-from-draft":  # the draft's row again: the commonest slip
        return list(_draw(q))
    if mistake and mistake.startswith("residual-not-normalised"):
        # inverse CDF with u ~ U[0, 1) on the clamped difference, whose sum s < 1: every u
        # above s falls past the last token (clamped to it, or index V when not clamped), or
        # to token 0 (":first": argmax(cdf > u) of an all-False row)
        residual = [max(0.0, a - b) for a, b in zip(p, q)]
        spill = {"residual-not-normalised": len(p) - 1, "residual-not-normalised:first": 0}
        last = spill.get(mistake, len(p))
        out = [(t, r) for t, r in enumerate(residual) if r > 0 and t != last]
        tail = 1.0 - sum(r for _t, r in out)
        return out + [(last, tail)] if tail > 1e-15 else out
    return list(_draw(_normalised_residual(p, q)))


def _ratio(p: list[float], q: list[float], token: int, mistake: str | None) -> float:
    if mistake == "ratio-inverted":
        return 1.0 if p[token] == 0 else min(1.0, q[token] / p[token])
    return min(1.0, p[token] / q[token]) if q[token] > 0 else 1.0


def _cdf_cells(probs: list[float]) -> list[tuple[int, float, float]]:
    """Inverse-CDF cells: token t is drawn for u in [low, high) (vocabulary order)."""
    cells, low = [], 0.0
    for t, w in enumerate(probs):
        if w > 0:
            cells.append((t, low, low + w))
        low += w
    if cells:  # rounding: the last cell reaches 1
        t, low, _high = cells[-1]
        cells[-1] = (t, low, 1.0)
    return cells


def _chain(ps: list[list[float]], qs: list[list[float]], drafted: list[int], gamma: int,
           mistake: str | None) -> Iterator[tuple[Outcome, float]]:
    """The outcomes of verifying one draft sequence, with their probabilities."""
    ratios = [_ratio(ps[i], qs[i], drafted[i], mistake) for i in range(gamma)]
    bonus_row = {"bonus-from-wrong-position": ps[gamma - 1],
                 "bonus-from-wrong-position:first": ps[0],
                 "bonus-from-wrong-position:draft": qs[gamma - 1]}.get(mistake or "", ps[gamma])

    def bonus(weight: float) -> Iterator[tuple[Outcome, float]]:
        if mistake == "bonus-token-missing":
            yield (tuple(drafted), gamma), weight
        else:
            for y, w in _draw(bonus_row):
                yield (tuple(drafted) + (y,), gamma), weight * w

    if mistake and mistake.startswith("no-stop-at-rejection"):  # every draft token tested
        for kept, weight in _independent_tests(ratios):
            if all(kept):
                yield from bonus(weight)
            else:
                yield from _past_rejection(ps, qs, drafted, kept, weight, mistake)
        return
    if mistake and mistake.startswith("shared-uniform"):
        yield from _shared_uniform(ps, qs, drafted, ratios, gamma, mistake, bonus)
        return

    reach = 1.0
    for i in range(gamma):
        reject = reach * (1 - ratios[i])
        if reject > 0:
            for y, w in _resample(ps[i], qs[i], mistake):
                yield (tuple(drafted[:i]) + (y,), i), reject * w
        reach *= ratios[i]
        if reach == 0:
            return
    yield from bonus(reach)


def _independent_tests(ratios: list[float]) -> Iterator[tuple[list[bool], float]]:
    """Every pass/fail pattern of independent acceptance tests, with its probability > 0."""
    for pattern in range(2 ** len(ratios)):
        kept = [(pattern >> i) & 1 == 1 for i in range(len(ratios))]
        weight = math.prod(r if k else 1 - r for r, k in zip(ratios, kept))
        if weight > 0:
            yield kept, weight


def _past_rejection(ps, qs, drafted, kept, weight, mistake):
    """What a step that tests every draft token emits when some test failed: each rejected
    token replaced by a residual draw (no-stop-at-rejection), the run of passes counted
    wherever they are (":count": num_accepted = passes, the residual at that index), or the
    passing tokens kept and the first rejection's residual draw last (":skip")."""
    if mistake == "no-stop-at-rejection":
        options = [[(d, 1.0)] if k else _resample(ps[i], qs[i], None)
                   for i, (d, k) in enumerate(zip(drafted, kept))]
        for choice in _product(options):
            yield ((tuple(t for t, _w in choice), sum(kept)),
                   weight * math.prod(w for _t, w in choice))
        return
    if mistake == "no-stop-at-rejection:count":
        a = sum(kept)
        passing, at = tuple(drafted[:a]), a
    else:  # ":skip"
        passing, at = tuple(d for d, k in zip(drafted, kept) if k), kept.index(False)
    for y, w in _resample(ps[at], qs[at], None):
        yield (passing + (y,), len(passing)), weight * w


def _shared_uniform(ps, qs, drafted, ratios, gamma, mistake, bonus):
    """One uniform u reused: for every test ("tests"), for a test and the inverse-CDF
    resample after it ("resample"), or both ("all")."""
    shared_tests = mistake in ("shared-uniform:tests", "shared-uniform:all")
    reused_for_draw = mistake in ("shared-uniform:resample", "shared-uniform:all")
    reach, ceiling = 1.0, 1.0  # P(all tests so far passed); u's bound when shared
    for i in range(gamma):
        low = ratios[i]
        if shared_tests:
            reject_interval = (low, max(low, ceiling))
            reject = reject_interval[1] - reject_interval[0]
        else:
            reject_interval = (low, 1.0)
            reject = reach * (1 - low)
        if reject > 0:
            residual = _normalised_residual(ps[i], qs[i])
            if reused_for_draw:
                scale = 1.0 if shared_tests else reach
                for y, a, b in _cdf_cells(residual):
                    overlap = min(b, reject_interval[1]) - max(a, reject_interval[0])
                    if overlap > 0:
                        yield (tuple(drafted[:i]) + (y,), i), overlap * scale
            else:
                for y, w in _draw(residual):
                    yield (tuple(drafted[:i]) + (y,), i), reject * w
        if shared_tests:
            ceiling = min(ceiling, low)
            reach = ceiling
        else:
            reach *= low
        if reach <= 0:
            return
    yield from bonus(reach)


def _product(options: list[list[tuple[int, float]]]) -> Iterator[list[tuple[int, float]]]:
    if not options:
        yield []
        return
    for head in options[0]:
        for rest in _product(options[1:]):
            yield [head] + rest


def step_distribution(target: ToyModel, draft: ToyModel, prefix: tuple[int, ...], gamma: int,
                      mistake: str | None = None) -> Distribution:
    """The exact distribution of speculative_step(target, draft, prefix, gamma)'s outcome
    ``(tokens, num_accepted)``, or of the step with ``mistake`` (a key of MISTAKE_OF)."""
    out: Distribution = {}

    def drafts(context: tuple[int, ...], rows: list[list[float]], weight: float):
        if len(rows) == gamma:
            yield context[len(prefix):], rows, weight
            return
        q = draft.row(context)
        if mistake == "draft-not-sampled":
            choices = [(max(range(len(q)), key=q.__getitem__), 1.0)]
        else:
            choices = list(_draw(q))
        for token, w in choices:
            yield from drafts(context + (token,), rows + [q], weight * w)

    for drafted, qs, weight in drafts(tuple(prefix), [], 1.0):
        full = tuple(prefix) + tuple(drafted)
        ps = [target.row(full[:len(prefix) + i]) for i in range(gamma + 1)]
        if mistake == "position-off-by-one":  # P[n + i]: the row after d_i judges d_i
            ps = ps[1:] + [ps[-1]]
        if mistake == "position-off-by-one:draft":  # q read after appending d_i
            qs = [draft.row(full[:len(prefix) + i + 1]) for i in range(gamma)]
        switch = None if mistake in ("position-off-by-one", "position-off-by-one:draft",
                                     "draft-not-sampled") else mistake
        for outcome, w in _chain(ps, qs, list(drafted), gamma, switch):
            if w > 0:
                out[outcome] = out.get(outcome, 0.0) + weight * w
    return out


def generation_distribution(target: ToyModel, prefix: tuple[int, ...],
                            length: int) -> Distribution:
    """The target's own distribution of its next ``length`` tokens (sampling alone), keyed
    like a step's outcomes with num_accepted = -1."""
    out: Distribution = {(tuple(), -1): 1.0}
    for _ in range(length):
        grown: Distribution = {}
        for (tokens, _a), w in out.items():
            for y, p in _draw(target.row(tuple(prefix) + tokens)):
                grown[(tokens + (y,), -1)] = w * p
        out = grown
    return out


# Greedy mode's switches -> the mistake each reproduces.
GREEDY_MISTAKE_OF: dict[str, str] = {
    "keeps-draft": "greedy-not-target-greedy",  # the draft's token kept at the first mismatch
    "no-correction": "greedy-not-target-greedy",  # nothing after the accepted tokens
    "bonus-from-wrong-position": "bonus-from-wrong-position",  # bonus = argmax p_(gamma-1)
    "bonus-from-wrong-position:first": "bonus-from-wrong-position",  # bonus = argmax p_0
    "bonus-from-wrong-position:draft": "bonus-from-wrong-position",  # argmax q_(gamma-1)
    "position-off-by-one": "position-off-by-one",  # d_i judged by p_(i+1)
    "no-stop:count": "no-stop-at-rejection",  # num_accepted = how many tokens matched
    "no-stop:skip": "no-stop-at-rejection",  # every matching token kept
}


def greedy_step(target: ToyModel, draft: ToyModel, prefix: tuple[int, ...],
                gamma: int, mistake: str | None = None) -> Outcome:
    """Greedy mode's output, or its output with a key of GREEDY_MISTAKE_OF."""
    context, drafted = tuple(prefix), []
    for _ in range(gamma):
        q = draft.row(context)
        token = max(range(len(q)), key=q.__getitem__)
        drafted.append(token)
        context += (token,)

    def best(i: int) -> int:  # argmax p_i
        p = target.row(tuple(prefix) + tuple(drafted[:i]))
        return max(range(len(p)), key=p.__getitem__)

    judge = (lambda i: best(min(i + 1, gamma))) if mistake == "position-off-by-one" else best
    if mistake in ("no-stop:count", "no-stop:skip"):
        matched = [token == best(i) for i, token in enumerate(drafted)]
        if all(matched):
            return tuple(drafted) + (best(gamma),), gamma
        if mistake == "no-stop:count":
            a = sum(matched)
            return tuple(drafted[:a]) + (best(a),), a
        passing = tuple(t for t, m in zip(drafted, matched) if m)
        return passing + (best(matched.index(False)),), len(passing)
    for i, token in enumerate(drafted):
        if token != judge(i):
            if mistake == "keeps-draft":
                return tuple(drafted[:i + 1]), i
            if mistake == "no-correction":
                return tuple(drafted[:i]), i
            return tuple(drafted[:i]) + (judge(i),), i
    if mistake == "no-correction":
        return tuple(drafted), gamma
    bonus = {"bonus-from-wrong-position": best(gamma - 1),
             "bonus-from-wrong-position:first": best(0),
             "bonus-from-wrong-position:draft": drafted[-1]}.get(mistake or "", best(gamma))
    return tuple(drafted) + (bonus,), gamma


def greedy_decoding(target: ToyModel, prefix: tuple[int, ...], length: int) -> tuple[int, ...]:
    """The target's own greedy decoding of ``length`` tokens."""
    out: tuple[int, ...] = ()
    for _ in range(length):
        p = target.row(tuple(prefix) + out)
        out += (max(range(len(p)), key=p.__getitem__),)
    return out
