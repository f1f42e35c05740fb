"""Kata 17's twin: the contract's beam search in plain Python over deterministic step tables,
with one switch per catalogued mistake (the suspects it yields), and greedy and exhaustive
search for the independent checks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import Tensor


Prefix = tuple[int, ...]
Result = list[tuple[Prefix, float]]


# ------------------------------------------------------------------------ step functions


@dataclass
class StepTable:
    """Next-token log-probabilities as a deterministic function of the whole prefix.

    ``eos_bias`` is added to eos's logit before the log-softmax: positive makes hypotheses
    finish early, negative lets the search run to max_len. Rows are rounded to ``dtype``
    (what the learner receives) and kept in float64 for the references.
    """

    vocab: int
    seed: int
    eos_idx: int
    eos_bias: float = 0.0
    spread: float = 1.5
    dtype: torch.dtype = torch.float64
    _rows: dict[Prefix, Tensor] = field(default_factory=dict)

    def row(self, prefix: Prefix) -> Tensor:
        """(V,) float64: the log-probabilities of the next token after ``prefix``."""
        cached = self._rows.get(prefix)
        if cached is None:
            generator = torch.Generator().manual_seed(hash((self.seed, prefix)) & (2**62 - 1))
            logits = torch.randn(self.vocab, generator=generator, dtype=torch.float64) * self.spread
            logits[self.eos_idx] += self.eos_bias
            cached = torch.log_softmax(logits, dim=0).to(self.dtype).to(torch.float64)
            self._rows[prefix] = cached
        return cached

    def values(self, prefix: Prefix) -> list[float]:
        return self.row(prefix).tolist()


@dataclass
class LastTokenTable:
    """The README's step function: a fixed (V, V) table of probabilities indexed by the
    last token (float64)."""

    probabilities: tuple[tuple[float, ...], ...]
    dtype: torch.dtype = torch.float64

    @property
    def vocab(self) -> int:
        return len(self.probabilities)

    def row(self, prefix: Prefix) -> Tensor:
        return torch.tensor(self.probabilities[prefix[-1]], dtype=torch.float64).log()

    def values(self, prefix: Prefix) -> list[float]:
        return self.row(prefix).tolist()


README_TABLE = LastTokenTable(((0.05, 0.05, 0.50, 0.40),   # after bos (0)
                               (0.10, 0.20, 0.30, 0.40),   # after eos (1): never asked
                               (0.05, 0.35, 0.30, 0.30),   # after "a" (2)
                               (0.04, 0.85, 0.05, 0.06)))  # after "b" (3)


# ---------------------------------------------------------------------------- reference


class SplitOutOfRange(IndexError):
    """A wrong split of the flat index gave a parent or token outside range: where the
    learner's code raises its IndexError, after ``calls`` calls to step_fn."""

    def __init__(self, split: str, calls: int):
        super().__init__(split)
        self.calls = calls


def search(table: StepTable, bos: int, eos: int, beam_size: int, max_len: int,
           length_penalty: float = 1.0, *, scoring: str = "sum", selection: str = "global",
           split: str = "row-major", finished: str = "removed", penalty: str = "final",
           eos_ignored: bool = False, at_max_len: str = "kept"
           ) -> tuple[Result, list[list[Prefix]]]:
    """The contract's beam search in plain Python, and the live prefixes of each call.

    Switches, one per catalogued mistake (the defaults are correct):
    ``scoring`` "product" (log-probabilities multiplied, from 1), "probs" (probabilities
    added) or "prob-product" (probabilities multiplied): log-probs-not-summed; "last": scores-not-accumulated. ``selection``
    "per-beam": each live hypothesis keeps its own best max(1, keep // k) continuations
    (topk-per-beam), "per-beam-unsorted": each row's best keep, concatenated, the first
    keep taken. ``split`` "<layout>-<divisor>": the flat index f of the row-major (k, V)
    candidates split as (f // d, f % d) ("row") or (f % d, f // d) ("col"), d = k, V or
    beam_size; "mixed-<divisor>": the parent f // d, the token f % V (only the division
    wrong); "T-<divisor>": the candidates flattened transposed, (V, k), so the index is
    g = token · k + parent, split as (g // d, g % d) (beam-index-wrong; an index that falls
    outside raises :class:`SplitOutOfRange`). ``finished``
    "extended": a hypothesis ending in eos is finished but also stays live; "frozen": a
    fixed-width beam where finished hypotheses keep competing with their frozen scores
    (finished-beam-not-removed). ``penalty`` "carried" / "carried-twice": the running
    scores divided by n ** length_penalty at every step (and again at the end);
    "carried-live": the live ones divided after each step, all again at the end:
    length-penalty-in-pruning; "none" (raw final scores) / "ranked-raw" (divided, but
    ranked by the raw sums) / "scored-raw" (ranked divided, raw scores returned):
    length-penalty-missing. ``eos_ignored``: nothing finishes before max_len.
    ``at_max_len`` "dropped": the hypotheses still live at max_len are dropped, as CS224n's
    code does (the best live one returned when nothing finished) -- a departure from the
    contract, no catalogued mistake.
    """
    start = 1.0 if scoring in ("product", "prob-product") else 0.0
    live: list[tuple[Prefix, float]] = [((bos,), start)]
    done: list[tuple[Prefix, float]] = []
    calls: list[list[Prefix]] = []
    carried = penalty in ("carried", "carried-twice")

    def extend(score: float, log_prob: float, n: int) -> float:
        if scoring == "product":
            return score * log_prob
        if scoring == "prob-product":
            return score * math.exp(log_prob)
        if scoring == "probs":
            return score + math.exp(log_prob)
        if scoring == "last":
            return log_prob
        if carried:  # the parent's score is already divided by (n - 1) ** alpha
            return (score + log_prob) / n ** length_penalty
        return score + log_prob

    if finished == "frozen":
        beam = [((bos,), start, False)]
        while True:
            growing = [(p, s) for p, s, ended in beam if not ended]
            if not growing or len(growing[0][0]) >= max_len:  # the live ones' length decides
                break
            calls.append([p for p, _s in growing])
            candidates = [(p, s, True) for p, s, ended in beam if ended]
            for p, s in growing:
                for token, lp in enumerate(table.values(p)):
                    candidates.append((p + (token,), extend(s, lp, len(p)), token == eos))
            candidates.sort(key=lambda c: c[1], reverse=True)
            beam = candidates[:beam_size]
        done = [(p, s) for p, s, _ended in beam]
        return rank(done, length_penalty, penalty), calls

    while live and len(done) < beam_size and len(live[0][0]) < max_len:
        calls.append([p for p, _s in live])
        keep = beam_size - len(done)
        candidates = []  # row-major over (k, V): (score, parent, token)
        for i, (p, s) in enumerate(live):
            for token, lp in enumerate(table.values(p)):
                candidates.append((extend(s, lp, len(p)), i, token))
        vocab = table.vocab
        if selection == "global":
            pool = candidates
            order = sorted(range(len(pool)), key=lambda f: pool[f][0], reverse=True)[:keep]
        else:  # per-beam: each row's best max(1, keep // k), then the best of those;
            # per-beam-one: each row's best (a beam that never widens past its first row);
            # per-beam-unsorted: each row's best keep, rows concatenated, the first keep
            each = {"per-beam": max(1, keep // len(live)), "per-beam-one": 1}.get(selection, keep)
            pool = []
            for i in range(len(live)):
                own = candidates[i * vocab:(i + 1) * vocab]
                pool += sorted(own, key=lambda c: c[0], reverse=True)[:each]
            order = list(range(len(pool)))
            if selection != "per-beam-unsorted":
                order.sort(key=lambda f: pool[f][0], reverse=True)
            order = order[:keep]
        chosen = []
        for f in order:
            score, parent, token = pool[f]
            if split != "row-major":  # "<layout>-<divisor>": the flat index split wrongly
                layout, divisor = split.split("-")
                d = {"k": len(live), "beam": beam_size, "V": vocab}[divisor]
                if layout == "T":  # the index into the transposed (V, k) flatten
                    g = token * len(live) + parent
                    parent, token = g // d, g % d
                elif layout == "mixed":
                    parent, token = f // d, f % vocab
                else:
                    parent, token = (f // d, f % d) if layout == "row" else (f % d, f // d)
                if not (0 <= parent < len(live) and 0 <= token < vocab):
                    raise SplitOutOfRange(split, len(calls))
            chosen.append((live[parent][0] + (token,), score))
        ends = [(p, s) for p, s in chosen if p[-1] == eos and not eos_ignored]
        done += ends
        live = chosen if finished == "extended" else [c for c in chosen if c not in ends]
        if penalty == "carried-live":  # the live sums divided as they are carried forward
            live = [(p, s / (len(p) - 1) ** length_penalty) for p, s in live]
    if at_max_len == "kept":
        done += live
    elif not done and live:  # CS224n's fallback: the best live hypothesis alone
        done.append(max(live, key=lambda item: item[1]))
    return rank(done[:beam_size], length_penalty, penalty), calls


def rank(done: list[tuple[Prefix, float]], alpha: float, penalty: str) -> Result:
    """Final scores (raw sum / n ** alpha, n = tokens after bos) sorted best first, or what
    a length-penalty mistake makes of them."""
    def final(p: Prefix, s: float) -> float:
        if penalty in ("none", "scored-raw", "carried"):
            return s
        return s / (len(p) - 1) ** alpha

    def ranking(p: Prefix, s: float) -> float:
        return s if penalty == "ranked-raw" else final(p, s) if penalty != "scored-raw" \
            else s / (len(p) - 1) ** alpha

    ordered = sorted(done, key=lambda item: ranking(*item), reverse=True)
    return [(p, final(p, s)) for p, s in ordered]


# The wrong splits of a flat candidate index (beam-index-wrong), as ``search`` spells them.
WRONG_SPLITS = ("col-k", "col-V", "col-beam", "row-k", "row-beam", "mixed-k", "mixed-beam",
                "T-V", "T-k", "T-beam")

# Mistakes that leave the hypotheses as they are and change only their final scores and
# order: named only when the scores match too (an order alone is explained by other slips,
# such as n counting bos).
SCORES_ONLY = ("none", "ranked-raw", "scored-raw")


def suspects(table, bos, eos, beam_size, max_len, alpha, at_max_len: str = "kept"
             ) -> list[tuple[str, Callable[[], Result], bool]]:
    """(slug, prediction, whether the scores must match) for every catalogued mistake of
    the results (``at_max_len`` "dropped": each in a search that drops the hypotheses live
    at max_len, as CS224n's code does)."""
    def variant(slug, max_len=max_len, **switches):
        strict = switches.get("penalty") in SCORES_ONLY
        return (slug, lambda: search(table, bos, eos, beam_size, max_len, alpha,
                                     at_max_len=at_max_len, **switches)[0], strict)

    found = [variant("log-probs-not-summed", scoring="product"),
             variant("log-probs-not-summed", scoring="probs"),
             variant("scores-not-accumulated", scoring="last"),
             variant("log-probs-not-summed", scoring="prob-product"),
             variant("topk-per-beam", selection="per-beam"),
             variant("topk-per-beam", selection="per-beam-unsorted"),
             variant("topk-per-beam", selection="per-beam-one"),
             *(variant("beam-index-wrong", split=split) for split in WRONG_SPLITS),
             variant("finished-beam-not-removed", finished="extended"),
             variant("finished-beam-not-removed", finished="frozen"),
             variant("length-penalty-in-pruning", penalty="carried"),
             variant("length-penalty-in-pruning", penalty="carried-twice"),
             variant("length-penalty-in-pruning", penalty="carried-live"),
             variant("length-penalty-missing", penalty="none"),
             variant("length-penalty-missing", penalty="ranked-raw"),
             variant("length-penalty-missing", penalty="scored-raw"),
             variant("max-len-off-by-one", max_len=max_len + 1),
             variant("eos-ignored", eos_ignored=True)]
    if max_len > 2:
        found.append(variant("max-len-off-by-one", max_len=max_len - 1))
    return found


# --------------------------------------------------------------------- the independent checks


def greedy(table: StepTable, bos: int, eos: int, max_len: int, alpha: float) -> Result:
    """Argmax at every step, stop at eos or max_len: what beam_size = 1 must return."""
    prefix, total = (bos,), 0.0
    while len(prefix) < max_len and (len(prefix) == 1 or prefix[-1] != eos):
        row = table.row(prefix)
        token = int(row.argmax())
        prefix, total = prefix + (token,), total + float(row[token])
    return [(prefix, total / (len(prefix) - 1) ** alpha)]


def exhaustive(table: StepTable, bos: int, eos: int, max_len: int, alpha: float) -> Result:
    """Every sequence the search can produce (ending in eos, or reaching max_len), ranked."""
    found: Result = []
    frontier = [((bos,), 0.0)]
    while frontier:
        prefix, total = frontier.pop()
        for token, lp in enumerate(table.values(prefix)):
            extended = (prefix + (token,), total + lp)
            if token == eos or len(extended[0]) == max_len:
                found.append(extended)
            else:
                frontier.append(extended)
    return sorted(((p, s / (len(p) - 1) ** alpha) for p, s in found),
                  key=lambda item: item[1], reverse=True)
