"""Grader for kata 17: ``beam_search`` over a next-token step function.

The step functions are deterministic tables: the log-probabilities after a prefix are a
log-softmax of normal draws seeded by the prefix itself (plus a bias on eos that makes
hypotheses finish early or late), in float64 or float32. Each one records its calls, so
the call pattern is graded too: one call per step with every live hypothesis stacked,
call j with prefixes of j + 1 tokens starting with bos, no call after the search stopped.
Extra rows (finished hypotheses, padding) are allowed; rows may come in any order.

:func:`search` is the contract's search in plain Python with one switch per catalogued
mistake; a wrong answer is named by the mistake whose reproduction it matches (the
hypotheses and their scores, or at least their tokens in order, or the set of them).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import pytest
import torch
from torch import Tensor

from graders.core.compare import sequence_pictures
from graders.core.i18n import N_, _
from graders.core.implementation import Implementation
from graders.core.inputs import drawn_cases
from graders.core.report import describe_inputs, describe_value, title, verdict
from graders.beam_search.meta import beam_sequence_count  # the quiz's count, one formula
from graders.beam_search.twin import (
    exhaustive,
    greedy,
    LastTokenTable,
    Prefix,
    README_TABLE,
    Result,
    search,
    SplitOutOfRange,
    StepTable,
    suspects,
    WRONG_SPLITS,
)

__all__ = [
    "test_beam_search_example",
    "test_beam_search_finishing_hypotheses",
    "test_beam_search_reaching_max_len",
    "test_beam_search_random_cases",
    "test_beam_size_one_is_greedy",
    "test_wide_beam_is_exhaustive",
    "test_beam_search_float32",
    "test_beam_search_edge_cases",
]

RTOL = {torch.float64: 1e-9, torch.float32: 1e-5}
ATOL = 1e-12
# A mistake's reproduction may sum in another order: its scores are matched more loosely.
MISTAKE_RTOL = 1e-4


class StepMisuse(Exception):
    """step_fn was called in a way the contract does not allow (raised inside the call);
    ``slug`` is the mistake that misuse is characteristic of, if any."""

    def __init__(self, message: str, slug: str | None = None):
        super().__init__(message)
        self.slug = slug


def slug_for_exception(exc: BaseException) -> str | None:
    """A token outside the vocabulary reaching step_fn, or a parent index past the live
    hypotheses (PyTorch's "index 5 is out of bounds for dimension 0"), comes from splitting
    a flat candidate index with the wrong divisor."""
    if isinstance(exc, StepMisuse):
        return exc.slug
    if isinstance(exc, IndexError) and "out of bounds for dimension 0" in str(exc):
        return "beam-index-wrong"
    return None


class RecordingStep:
    """The ``step_fn`` handed to the learner: checks and records every call."""

    def __init__(self, table: StepTable, bos_idx: int):
        self.table = table
        self.bos_idx = bos_idx
        self.calls: list[list[Prefix]] = []

    def __call__(self, tokens: Any) -> Tensor:
        if not isinstance(tokens, Tensor):
            raise StepMisuse(_("step_fn expects a LongTensor (k, t), got {value}",
                               value=describe_value(tokens)))
        if tokens.dtype != torch.long or tokens.dim() != 2 or tokens.size(0) == 0 \
                or tokens.size(1) == 0:
            raise StepMisuse(_("step_fn expects a non-empty LongTensor (k, t), got {dtype} {shape}",
                               dtype=str(tokens.dtype).removeprefix("torch."),
                               shape=tuple(tokens.shape)))
        rows = [tuple(row) for row in tokens.tolist()]
        self.calls.append(rows)
        for row in rows:
            if row[0] != self.bos_idx:
                raise StepMisuse(_("step_fn got the prefix {prefix}, which does not start with "
                                   "bos_idx = {bos}", prefix=list(row), bos=self.bos_idx))
            if any(not 0 <= token < self.table.vocab for token in row):
                raise StepMisuse(_("step_fn got the prefix {prefix}, with a token outside the "
                                   "vocabulary 0..{last}", prefix=list(row),
                                   last=self.table.vocab - 1), "beam-index-wrong")
        return torch.stack([self.table.row(row) for row in rows]).to(self.table.dtype)


# ---------------------------------------------------------------------------- comparison


def describe_result(result: Result, limit: int = 3, digits: int = 6) -> str:
    shown = "; ".join(f"{list(p)} {s:.{digits}g}" for p, s in result[:limit])
    more = "; ..." if len(result) > limit else ""
    return f"[{shown}{more}]" if result else "[]"


def digits_to_tell_apart(got: Result, expected: Result) -> int:
    """The fewest significant digits (6 at least) at which every score of ``got`` that
    differs from the expected one at its rank also prints differently."""
    by_tokens = dict(expected)
    pairs = [(a, b) for (_p, a), (_q, b) in zip(got, expected) if a != b]
    pairs += [(a, by_tokens[p]) for p, a in got if p in by_tokens and a != by_tokens[p]]
    for digits in range(6, 18):
        if all(f"{a:.{digits}g}" != f"{b:.{digits}g}" for a, b in pairs):
            return digits
    return 17


def contract_notes(got: Result, expected: Result, dropped: Result, rtol: float,
                   dtype: torch.dtype) -> list[str]:
    """What a search that is right in every catalogued respect still does against the
    contract, when that explains ``got`` completely: scores accumulated below step_fn's
    precision (float32 sums of float64 log-probabilities), and the hypotheses still live
    at max_len dropped (CS224n's code keeps only finished ones). Empty when these do not
    explain ``got``; then no slug is named either way by this function."""
    notes: list[str] = []
    target = expected
    if not tiers(dropped, expected, MISTAKE_RTOL)[0] and tiers(got, dropped, MISTAKE_RTOL)[0]:
        missing = [list(p) for p, _s in expected if p not in {q for q, _t in got}]
        notes.append(_("missing: {hypotheses}, still live when the sequences reached max_len. "
                       "When the search stops at max_len, the live hypotheses finish as they "
                       "stand, without eos, and are returned with the others (the README's "
                       "step 4)", hypotheses=", ".join(map(str, missing[:3]))
                       + (", ..." if len(missing) > 3 else "")))
        target = dropped
    if not tiers(got, target, MISTAKE_RTOL)[0]:
        return []
    if not tiers(got, target, rtol)[0]:
        worst = max(abs(x - y) / max(abs(y), ATOL) for (_p, x), (_q, y) in zip(got, target))
        notes.append(_("the scores differ by a relative {worst} at most, which is rounding: "
                       "accumulate the running scores in at least the precision of step_fn's "
                       "output ({dtype} here, graded to a relative {rtol})",
                       worst=f"{worst:.1e}", dtype=str(dtype).removeprefix("torch."),
                       rtol=f"{rtol:g}"))
    return notes


def describe_brief(value: Any) -> str:
    """A tensor or numpy value in a few words, without describe_value's advice to keep
    tensors (this kata returns Python values)."""
    if isinstance(value, Tensor):
        device = "" if value.device.type == "cpu" else f" on {value.device}"
        return _("a tensor {dtype} {shape}{device}", dtype=str(value.dtype).removeprefix("torch."),
                 shape=tuple(value.shape), device=device)
    if type(value).__module__ == "numpy":
        return _("a numpy {kind} {dtype}", kind=type(value).__name__, dtype=str(value.dtype))
    return describe_value(value)


def as_result(got: Any, check: str, on: str) -> Result:
    """The learner's return value as ((tokens...), score) pairs, or a verdict on its type."""
    if not isinstance(got, (list, tuple)):
        raise verdict(check, on, [_("expected a list of (tokens, score) pairs, got {value}",
                                    value=describe_value(got))])
    result: Result = []
    for item in got:
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise verdict(check, on, [_("expected each item to be a pair (tokens, score), got "
                                        "{value}", value=describe_value(item))])
        tokens, score = item
        if isinstance(tokens, Tensor) or type(tokens).__module__ == "numpy":
            raise verdict(check, on, [_("tokens must be a list of Python ints, got {value} "
                                        "(use .tolist())", value=describe_brief(tokens))])
        if not isinstance(tokens, (list, tuple)) or not all(
                isinstance(t, int) and not isinstance(t, bool) for t in tokens):
            raise verdict(check, on, [_("tokens must be a list of Python ints, got {value}",
                                        value=describe_value(tokens))])
        if isinstance(score, Tensor) or type(score).__module__ == "numpy":
            raise verdict(check, on, [_("the score must be a Python float, got {value} (use "
                                        ".item())", value=describe_brief(score))])
        if not isinstance(score, float):
            raise verdict(check, on, [_("the score must be a Python float, got {value}",
                                        value=describe_value(score))])
        result.append((tuple(tokens), score))
    return result


def scores_close(a: Result, b: Result, rtol: float) -> bool:
    return all(abs(x - y) <= rtol * abs(y) + ATOL for (_p, x), (_q, y) in zip(a, b))


def tiers(a: Result, b: Result, rtol: float) -> tuple[bool, bool, bool]:
    """(same hypotheses and scores in order, same tokens in order, same set of tokens)."""
    ordered = [p for p, _s in a] == [p for p, _s in b]
    return (ordered and scores_close(a, b, rtol), ordered,
            sorted(p for p, _s in a) == sorted(p for p, _s in b))


def identify_result(got: Result, expected: Result, candidates) -> str | None:
    """The slug whose prediction explains ``got``: the closest tier that any prediction
    reaches decides, and two different slugs there name none. A ``strict`` prediction
    counts at the first tier only (scores and order)."""
    predictions = []
    for slug, predict, strict in candidates:
        try:
            predictions.append((slug, predict(), strict))
        except Exception:  # the mistake is not defined for this input
            continue
    for tier in range(3):
        explaining = {slug for slug, predicted, strict in predictions
                      if (tier == 0 or not strict)
                      and tiers(got, predicted, MISTAKE_RTOL)[tier]
                      and not tiers(predicted, expected, MISTAKE_RTOL)[tier]}
        if explaining:
            return explaining.pop() if len(explaining) == 1 else None
    if got and all(score == 0.0 for _p, score in got) and any(s for _p, s in expected):
        # log-probabilities multiplied into a running score that starts at 0: every
        # candidate scores 0 for ever
        return "log-probs-not-summed"
    return None


@dataclass(frozen=True)
class Case:
    vocab: int
    bos: int
    eos: int
    beam_size: int
    max_len: int
    length_penalty: float | None  # None: left at the default (1.0)
    seed: int
    eos_bias: float = 0.0
    dtype: torch.dtype = torch.float64

    @property
    def alpha(self) -> float:
        return 1.0 if self.length_penalty is None else self.length_penalty

    def table(self) -> StepTable | LastTokenTable:
        if self.seed < 0:
            return README_TABLE
        return StepTable(self.vocab, self.seed, self.eos, self.eos_bias, dtype=self.dtype)

    def describe(self) -> str:
        penalty = {} if self.length_penalty is None else {"length_penalty": self.length_penalty}
        dtype = "" if self.dtype == torch.float64 else ", step_fn float32"
        which = (_("the README's step_fn") if self.seed < 0
                 else _("step table {seed}", seed=self.seed))
        inputs = describe_inputs(V=self.vocab, bos_idx=self.bos, eos_idx=self.eos,
                                 beam_size=self.beam_size, max_len=self.max_len,
                                 **penalty) + dtype
        # TRANSLATORS: the inputs, then which step function; full-width parentheses in zh
        return _("{inputs} ({which})", inputs=inputs, which=which)


def split_raises_after(case: Case, calls: int) -> bool:
    """Whether a wrong split of the flat index (``WRONG_SPLITS``) falls outside the live
    hypotheses or the vocabulary on ``case`` after exactly ``calls`` calls to step_fn."""
    for split in WRONG_SPLITS:
        try:
            search(case.table(), case.bos, case.eos, case.beam_size, case.max_len, case.alpha,
                   split=split)
        except SplitOutOfRange as out:
            if out.calls == calls:
                return True
    return False


def run_learner(impl: Implementation, case: Case, step: RecordingStep) -> Any:
    kwargs = {} if case.length_penalty is None else {"length_penalty": case.length_penalty}

    def exception_slug(exc: BaseException) -> str | None:
        """The grader's map, and an IndexError of Python lists ("list index out of range")
        raised where a wrong split of the flat index falls outside, at the same step."""
        slug = slug_for_exception(exc)
        if slug is None and isinstance(exc, IndexError) and split_raises_after(case, len(step.calls)):
            return "beam-index-wrong"
        return slug

    return impl.call(impl.attr("beam_search"), step, case.bos, case.eos, case.beam_size,
                     case.max_len, what="beam_search", on=case.describe(),
                     exception_slugs=exception_slug, **kwargs)


def check_case(impl: Implementation, case: Case, expected: Result | None = None,
               against: str | None = None) -> None:
    """The learner's hypotheses and scores against the reference's (or ``expected``), then
    the calls to step_fn against the reference's live hypotheses."""
    table = case.table()
    step = RecordingStep(table, case.bos)
    on = case.describe()
    got_raw = run_learner(impl, case, step)
    reference, live_calls = search(table, case.bos, case.eos, case.beam_size, case.max_len,
                                   case.alpha)
    if expected is None:
        expected = reference
    check = against or _("the hypotheses and their scores")
    got = as_result(got_raw, check, on)
    rtol = RTOL[case.dtype]
    if len(got) != len(expected) or not tiers(got, expected, rtol)[0]:
        dropped = search(table, case.bos, case.eos, case.beam_size, case.max_len, case.alpha,
                         at_max_len="dropped")[0]
        notes = contract_notes(got, expected, dropped, rtol, case.dtype)
        slug = None if notes else identify_result(got, expected, suspects(
            table, case.bos, case.eos, case.beam_size, case.max_len, case.alpha))
        if not notes and slug is None and not tiers(dropped, expected, MISTAKE_RTOL)[0]:
            # a mistake on top of dropping the hypotheses live at max_len
            slug = identify_result(got, dropped, suspects(
                table, case.bos, case.eos, case.beam_size, case.max_len, case.alpha, "dropped"))
            if slug is not None:
                notes = contract_notes(dropped, expected, dropped, rtol, case.dtype)
        digits = digits_to_tell_apart(got, expected)
        details = [_("expected {count} hypotheses, best first: {result}", count=len(expected),
                     result=describe_result(expected, digits=digits)),
                   _("got      {count}: {result}", count=len(got),
                     result=describe_result(got, digits=digits))]
        first = next((i for i, (a, b) in enumerate(zip(got, expected)) if a[0] != b[0]
                      or abs(a[1] - b[1]) > rtol * abs(b[1]) + ATOL), None)
        if first is not None:
            details.append(_("first difference at rank {index} (from 0): expected {want}, got "
                             "{have}", index=first,
                             want=describe_result([expected[first]], digits=digits),
                             have=describe_result([got[first]], digits=digits)))
        failure = verdict(check, on, details + notes, slug)
        failure.pictures = sequence_pictures(  # one entry per rank, for the room's diff
            [describe_result([h], digits=digits) for h in expected],
            [describe_result([h], digits=digits) for h in got], of=check)
        raise failure
    check_calls(step.calls, live_calls, on)


def check_calls(calls: list[list[Prefix]], live_calls: list[list[Prefix]], on: str) -> None:
    """One call per step, prefixes of j + 1 tokens at call j, every live hypothesis among
    the rows (extra rows allowed), no call after the search stopped."""
    check = _("the calls to step_fn")
    lengths = [len(rows[0]) for rows in calls]
    if any(lengths.count(n) > 1 for n in set(lengths)):
        n = next(n for n in lengths if lengths.count(n) > 1)
        raise verdict(check, on, [
            _("step_fn was called {count} times with prefixes of {length} tokens: call it once "
              "per step, with every live hypothesis stacked into one (k, t) batch",
              count=lengths.count(n), length=n),
            _("rows per call: {rows}", rows=[len(rows) for rows in calls][:8])],
            "step-per-hypothesis")
    for j, (rows, live) in enumerate(zip(calls, live_calls)):
        if lengths[j] != j + 1:
            raise verdict(check, on, [_("call {j} (from 0) got prefixes of {got} tokens; it "
                                        "should get {want} (bos and one token per step so far)",
                                        j=j, got=lengths[j], want=j + 1)])
        missing = sorted(set(live) - set(rows))
        if missing:
            raise verdict(check, on, [_("call {j} lacks the live hypothesis {prefix}: every "
                                        "live hypothesis must be extended", j=j,
                                        prefix=list(missing[0]))])
    if len(calls) > len(live_calls):
        raise verdict(check, on, [_("step_fn was called {count} times; the search stops after "
                                    "{want} calls (beam_size hypotheses finished, or max_len "
                                    "tokens reached)", count=len(calls), want=len(live_calls))])
    if len(calls) < len(live_calls):
        raise verdict(check, on, [_("step_fn was called {count} times; the search needs {want} "
                                    "calls", count=len(calls), want=len(live_calls))])


# ------------------------------------------------------------------------------ core

# seed -1: the README's table (V = 4, bos 0, eos 1), where beam search beats greedy.
README_CASES = [Case(vocab=4, bos=0, eos=1, beam_size=2, max_len=4, length_penalty=None,
                     seed=-1),
                Case(vocab=4, bos=0, eos=1, beam_size=1, max_len=4, length_penalty=None,
                     seed=-1)]


@title(N_("the README's example"))
@pytest.mark.core
def test_beam_search_example(impl):
    """The README's step function: beam_size 2 and 1, max_len 4, the default length_penalty;
    hypotheses, scores, order and the calls to step_fn."""
    for case in README_CASES:
        check_case(impl, case)
    check_case(impl, Case(vocab=6, bos=0, eos=1, beam_size=3, max_len=5, length_penalty=None,
                          seed=17, eos_bias=0.5))


@title(N_("hypotheses that finish at different lengths"))
@pytest.mark.core
def test_beam_search_finishing_hypotheses(impl):
    """eos is likely: hypotheses finish early and the beam shrinks; length_penalty 1, 0.6,
    0 and 2 rank them."""
    for i, alpha in enumerate((None, 0.6, 0.0, 2.0)):
        check_case(impl, Case(vocab=7, bos=2, eos=5, beam_size=4, max_len=7, length_penalty=alpha,
                              seed=170 + i, eos_bias=1.5))
    # finished hypotheses that a fixed-width beam, keeping them in their slots, would push
    # out with better live candidates
    check_case(impl, Case(vocab=6, bos=0, eos=1, beam_size=3, max_len=6, length_penalty=None,
                          seed=303, eos_bias=0.8))


@title(N_("hypotheses that reach max_len"))
@pytest.mark.core
def test_beam_search_reaching_max_len(impl):
    """eos is unlikely: the search stops at max_len and the live hypotheses finish without
    eos."""
    for i, (max_len, beam) in enumerate(((4, 3), (6, 2), (3, 5))):
        check_case(impl, Case(vocab=8, bos=7, eos=0, beam_size=beam, max_len=max_len,
                              length_penalty=0.7, seed=180 + i, eos_bias=-2.0))


def random_case(rng: random.Random) -> Case:
    vocab = rng.randint(3, 10)
    bos, eos = rng.sample(range(vocab), 2)
    return Case(vocab=vocab, bos=bos, eos=eos, beam_size=rng.randint(1, 6),
                max_len=rng.randint(2, 7), length_penalty=rng.choice([None, 0.0, 0.6, 1.0, 2.0]),
                seed=rng.randint(0, 10_000), eos_bias=rng.uniform(-1.5, 2.0))


@title(N_("beam search on random cases"))
@pytest.mark.core
def test_beam_search_random_cases(impl):
    """Random vocabularies, bos and eos, beam sizes, lengths, penalties and eos rates, drawn
    from a fixed seed (the same cases every run)."""
    for case in drawn_cases(random_case, count=8, seed=17):
        check_case(impl, case)


# ------------------------------------------------------------------------- follow-ups


@title(N_("beam_size 1 is greedy decoding"))
@pytest.mark.followup
def test_beam_size_one_is_greedy(impl):
    """beam_size = 1 returns the argmax path (stopping at eos or max_len), against an
    independent greedy loop."""
    for i, bias in enumerate((0.5, -2.0)):
        case = Case(vocab=9, bos=3, eos=4, beam_size=1, max_len=8, length_penalty=0.6,
                    seed=190 + i, eos_bias=bias)
        table = case.table()
        check_case(impl, case, greedy(table, case.bos, case.eos, case.max_len, case.alpha),
                   _("beam_size 1 against greedy decoding"))


@title(N_("a wide enough beam is exhaustive search"))
@pytest.mark.followup
def test_wide_beam_is_exhaustive(impl):
    """A beam at least as wide as the number of possible sequences returns all of them,
    ranked (against enumerating every sequence)."""
    for i, (vocab, max_len, extra) in enumerate(((3, 4, 0), (4, 3, 5))):
        beam = beam_sequence_count(vocab, max_len) + extra
        case = Case(vocab=vocab, bos=0, eos=vocab - 1, beam_size=beam, max_len=max_len,
                    length_penalty=1.0, seed=200 + i, eos_bias=0.3)
        expected = exhaustive(case.table(), case.bos, case.eos, case.max_len, case.alpha)
        check_case(impl, case, expected, _("a beam of {beam} against every possible sequence",
                                           beam=beam))


@title(N_("a float32 step function"))
@pytest.mark.followup
def test_beam_search_float32(impl):
    """step_fn returns float32 log-probabilities: scores to a relative 1e-5."""
    for i, alpha in enumerate((1.0, 0.6)):
        check_case(impl, Case(vocab=8, bos=1, eos=2, beam_size=3, max_len=6, length_penalty=alpha,
                              seed=210 + i, eos_bias=0.8, dtype=torch.float32))


@title(N_("edge cases"))
@pytest.mark.followup
def test_beam_search_edge_cases(impl):
    """max_len 2 (one step), a beam wider than the vocabulary, eos 0 and bos V - 1, two
    tokens only."""
    for i, (vocab, bos, eos, beam, max_len) in enumerate(
            ((5, 4, 0, 3, 2), (3, 2, 0, 7, 5), (2, 0, 1, 2, 6), (12, 11, 0, 1, 2))):
        check_case(impl, Case(vocab=vocab, bos=bos, eos=eos, beam_size=beam, max_len=max_len,
                              length_penalty=1.0, seed=220 + i, eos_bias=0.2))
