"""Pearson's chi-square test of draws against their exact distribution, with ``math``
alone (no scipy), for the graders that check a distribution (katas 16 and 21): why these
numbers is said in graders/sampling/checks.py's docstring."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from torch import Tensor

# A token whose expected count is below this is pooled with the others of its row.
MIN_EXPECTED = 25.0
# The probability that a correct sampler fails one check.
FALSE_FAILURE = 1e-10


def chi2_sf(x: float, df: int) -> float:
    """P(X >= x) for X ~ chi-square(df), df >= 1 an int: the regularised upper incomplete
    gamma Q(df/2, x/2) in closed form (a Poisson sum for even df; erfc plus a sum for odd)."""
    if x <= 0:
        return 1.0
    y = x / 2
    if df % 2 == 0:
        term = total = math.exp(-y)
        for j in range(1, df // 2):
            term *= y / j
            total += term
        return total
    total = math.erfc(math.sqrt(y))
    term = math.exp(-y) * math.sqrt(y) / math.gamma(1.5)
    for j in range((df - 1) // 2):
        total += term
        term *= y / (j + 1.5)
    return total


@functools.lru_cache(maxsize=None)
def chi2_threshold(df: int, alpha: float = FALSE_FAILURE) -> float:
    """The x with P(chi-square(df) >= x) = alpha, by bisection (chi2_sf decreases in x)."""
    low, high = 0.0, df + 10.0
    while chi2_sf(high, df) > alpha:
        high *= 2
    for _step in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if chi2_sf(middle, df) > alpha else (low, middle)
    return high


@dataclass(frozen=True)
class Fit:
    """How counts (R, V) fit probabilities (R, V): Pearson's statistic, its degrees of
    freedom, and the draws of tokens whose probability is 0 (row, token, count)."""

    statistic: float
    df: int
    impossible: tuple[tuple[int, int, int], ...]

    @property
    def threshold(self) -> float:
        return chi2_threshold(self.df) if self.df else math.inf

    @property
    def passes(self) -> bool:
        return not self.impossible and self.statistic <= self.threshold


def goodness_of_fit(counts: Tensor, probs: Tensor) -> Fit:
    """Counts (R, V) of the draws of R rows against their exact probabilities (R, V)."""
    statistic, df, impossible = 0.0, 0, []
    for r in range(counts.size(0)):
        observed = counts[r].double()
        expected = observed.sum() * probs[r]
        zero = probs[r] == 0
        for token in (zero & (observed > 0)).nonzero().flatten().tolist():
            impossible.append((r, token, int(observed[token])))
        big = expected >= MIN_EXPECTED
        small = ~big & ~zero
        bins = list(zip(observed[big].tolist(), expected[big].tolist()))
        if bool(small.any()):
            pool = (float(observed[small].sum()), float(expected[small].sum()))
            if pool[1] >= MIN_EXPECTED or not bins:
                bins.append(pool)
            else:
                smallest = min(range(len(bins)), key=lambda i: bins[i][1])
                bins[smallest] = (bins[smallest][0] + pool[0], bins[smallest][1] + pool[1])
        statistic += sum((o - e) ** 2 / e for o, e in bins)
        df += len(bins) - 1
    return Fit(statistic, df, tuple(impossible))
