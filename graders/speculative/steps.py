"""Kata 21's grader, its means: the inputs (toy models and prefixes), calling the learner's
``speculative_step`` through recording model functions, and judging a sample of outcomes
against their exact distribution (graders/speculative/twin.py) by kata 16's chi-square test
(graders/core/statistics.py), naming a failure by the mistake whose distribution fits.
The checks themselves are in graders/speculative/checks.py.
"""

from __future__ import annotations

import operator
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch import Tensor

from graders.core.i18n import _
from graders.core.implementation import Implementation
from graders.core.mistakes import Suspect
from graders.core.report import GradingFailure, describe_value, verdict
from graders.core.statistics import FALSE_FAILURE, Fit, goodness_of_fit
from graders.speculative.twin import (
    MISTAKE_OF,
    Distribution,
    Outcome,
    ToyModel,
    step_distribution,
    toy_pair,
)

# Steps run under one guarded call: few enough that a correct step function stays far inside
# any time limit (the hostile self-tests use 0.5 s), many enough that guarding costs little.
STEPS_PER_CALL = 50
# Chi-square tests per run: whole outcomes and their summaries in the main, float32,
# equal-draft and disjoint checks, whole sequences in the generation check.
CHI_SQUARE_TESTS = 9


# ----------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class Case:
    """A step's input: the toy target and draft, the prefix and gamma."""

    target: ToyModel
    draft: ToyModel
    prefix: tuple[int, ...]
    gamma: int

    @property
    def vocab(self) -> int:
        return self.target.vocab

    def describe(self) -> str:
        dtype = str(self.target.dtype).removeprefix("torch.")
        return _("prefix {prefix}, gamma = {gamma}, toy models over V = {vocab} tokens "
                 "({dtype} probabilities)", prefix=list(self.prefix), gamma=self.gamma,
                 vocab=self.vocab, dtype=dtype)


def main_case(dtype: torch.dtype = torch.float64) -> Case:
    target, draft = toy_pair(4, 0)
    return Case(target.as_dtype(dtype), draft.as_dtype(dtype), (1, 2), 3)


def small_case() -> Case:
    target, draft = toy_pair(3, 1)
    return Case(target.as_dtype(torch.float32), draft.as_dtype(torch.float32), (2,), 2)


def table_model(rows: list[list[float]], dtype: torch.dtype = torch.float64) -> ToyModel:
    return ToyModel(torch.tensor(rows, dtype=torch.float64), dtype, salt=1)


def disjoint_case() -> Case:
    """The target on tokens {0, 1}, the draft on {2, 3}: every draft token has p = 0."""
    target = table_model([[0.7, 0.3, 0, 0], [0.4, 0.6, 0, 0], [0.55, 0.45, 0, 0]])
    draft = table_model([[0, 0, 0.6, 0.4], [0, 0, 0.8, 0.2], [0, 0, 0.3, 0.7]])
    return Case(target, draft, (3, 0), 2)


def equal_case() -> Case:
    """The target as its own draft: every ratio is 1."""
    target, _draft = toy_pair(4, 3)
    return Case(target, target, (2, 1), 3)


def one_hot_case() -> Case:
    """One-hot rows: the sampling rule has no randomness left and must equal greedy mode."""
    target = table_model([[0, 1, 0], [0, 0, 1], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
    draft = table_model([[0, 1, 0], [0, 0, 1], [0, 1, 0], [0, 1, 0], [1, 0, 0]])
    return Case(target, draft, (0, 2), 3)


# ------------------------------------------------------------------ calling the learner


class ModelMisuse(Exception):
    """A model function called with something the contract does not allow."""


def slug_for_exception(exc: BaseException) -> str | None:
    """torch.bernoulli on a ratio above 1, torch.multinomial on a residual with negative
    entries (p - q not clamped, or divided by its zero sum)."""
    text = str(exc)
    if isinstance(exc, RuntimeError) and "p_in" in text and "<= 1" in text:
        return "ratio-not-clipped"
    if isinstance(exc, RuntimeError) and "element < 0" in text:
        return "residual-not-clamped"
    return None


class Recorder:
    """A model function handed to the learner: checks each call's tokens and answers with
    the toy model's probabilities; with a ``log``, keeps a copy of what each call got (the
    target's and the draft's calls in one list, in call order)."""

    def __init__(self, model: ToyModel, name: str,
                 log: list[tuple[str, tuple[int, ...]]] | None = None):
        self.model, self.name, self.log = model, name, log

    def __call__(self, tokens: Any) -> Tensor:
        if not isinstance(tokens, Tensor) or tokens.dim() != 1 or tokens.dtype != torch.int64 \
                or tokens.numel() == 0:
            shown = (f"{str(tokens.dtype).removeprefix('torch.')} {tuple(tokens.shape)}"
                     if isinstance(tokens, Tensor) else describe_value(tokens))
            raise ModelMisuse(_("{model} expects a 1-D int64 tensor of tokens (L,), got "
                                "{value}", model=self.name, value=shown))
        values = tokens.tolist()
        if min(values) < 0 or max(values) >= self.model.vocab:
            raise ModelMisuse(_("{model} got the tokens {tokens}, with a token outside the "
                                "vocabulary 0..{last}", model=self.name, tokens=values,
                                last=self.model.vocab - 1))
        if self.log is not None:
            self.log.append((self.name, tuple(values)))
        return self.model(tokens)


def model_fns(case: Case, log: list | None = None) -> tuple[Recorder, Recorder]:
    """(target_fn, draft_fn) for the learner."""
    return Recorder(case.target, "target_fn", log), Recorder(case.draft, "draft_fn", log)


def run_steps(impl: Implementation, case: Case, steps: int, *, what: str, on: str,
              gen: torch.Generator | None = None, greedy: bool = False,
              record: bool = False) -> tuple[list[Any], list[list[tuple[str, tuple[int, ...]]]]]:
    """``steps`` calls of the learner's speculative_step on one prefix tensor, guarded
    STEPS_PER_CALL at a time (the time limit, printing captured); returns the raw results
    and, with ``record``, each step's model calls. Fails with input-modified-in-place when
    the prefix changes."""
    step = impl.attr("speculative_step")
    prefix = torch.tensor(case.prefix, dtype=torch.int64)
    before, version = prefix.clone(), prefix._version
    calls: list[list[tuple[str, tuple[int, ...]]]] = []
    results, fns = [], model_fns(case)

    def untouched() -> bool:
        return torch.equal(prefix, before) and prefix._version == version

    def run(count: int) -> None:
        nonlocal fns
        for _step in range(count):
            if record:
                calls.append([])
                fns = model_fns(case, calls[-1])
            results.append(step(*fns, prefix, case.gamma, generator=gen, greedy=greedy))
            if not untouched():
                return

    for start in range(0, steps, STEPS_PER_CALL):
        try:  # through a closure: the prefix is this check's to name, not the guard's
            impl.call(run, min(STEPS_PER_CALL, steps - start), what=what, on=on)
        except GradingFailure:
            if untouched():
                raise
        if not untouched():
            raise verdict(what, on, [_("the prefix changed during the call (it was {before}, "
                                       "now {after}); build new tensors (torch.cat), never "
                                       "write into the caller's prefix", before=before.tolist(),
                                       after=prefix.tolist())], "input-modified-in-place")
    return results, calls


def outcome_of(result: Any, case: Case, what: str, on: str) -> Outcome:
    """(tokens, num_accepted) from one returned value, after the contract's types."""
    if not isinstance(result, tuple) or len(result) != 2:
        raise verdict(what, on, [_("expected a pair (tokens, num_accepted), got {value}",
                                   value=describe_value(result))])
    tokens, accepted = result
    if not isinstance(tokens, Tensor) or tokens.dim() != 1:
        raise verdict(what, on, [_("expected tokens as a 1-D int64 tensor (num_accepted + 1,), "
                                   "got {value}", value=describe_value(tokens))])
    if tokens.device.type != "cpu":
        raise verdict(what, on, [_("expected tokens on the CPU (the prefix's device), got "
                                   "device {device}", device=tokens.device)])
    if tokens.dtype != torch.int64:
        raise verdict(what, on, [_("expected tokens of dtype torch.int64, got {dtype}",
                                   dtype=tokens.dtype)])
    try:
        accepted = operator.index(accepted)
    except TypeError:
        raise verdict(what, on, [_("expected num_accepted as a Python int, got {value}",
                                   value=describe_value(accepted))]) from None
    return tuple(tokens.tolist()), accepted


def consistency_problem(outcome: Outcome, case: Case) -> str | None:
    """What is wrong with an outcome whatever the randomness, or None."""
    tokens, accepted = outcome
    if not 0 <= accepted <= case.gamma:
        return _("num_accepted = {a}, outside 0..gamma = 0..{gamma}", a=accepted,
                 gamma=case.gamma)
    if len(tokens) != accepted + 1:
        return _("{count} tokens with num_accepted = {a}: a step returns the accepted draft "
                 "tokens and then exactly one token of the target's (num_accepted + 1 in all; "
                 "new tokens only, not the prefix)", count=len(tokens), a=accepted)
    if any(not 0 <= t < case.vocab for t in tokens):
        return _("tokens {tokens}: a token outside the vocabulary 0..{last}",
                 tokens=list(tokens), last=case.vocab - 1)
    return None


# ------------------------------------------------------------------- the distributions


def counts_against(observed: Counter, exact: Distribution) -> tuple[Tensor, Tensor, list]:
    keys = sorted(set(observed) | set(exact))
    counts = torch.tensor([[observed.get(k, 0) for k in keys]])
    probs = torch.tensor([[exact.get(k, 0.0) for k in keys]], dtype=torch.float64)
    return counts, probs, keys


def summary(outcome: Outcome) -> tuple[int, int | None]:
    """(num_accepted, the last token): how far the step got and what it emitted there."""
    tokens, accepted = outcome
    return accepted, (tokens[-1] if tokens else None)


def summarised(outcomes: dict) -> dict:
    out: dict = {}
    for outcome, weight in outcomes.items():
        out[summary(outcome)] = out.get(summary(outcome), 0) + weight
    return out


def fit_tests(observed: Counter, exact: Distribution, summaries: bool = True) -> list[Fit]:
    """Pearson's test over the whole outcomes, and (with ``summaries``) over their
    summaries too: pooling the rare long outcomes of the first test loses what changes the
    acceptance lengths and the emitted token, which the second keeps in a few bins."""
    tests = [(observed, exact)] + ([(summarised(observed), summarised(exact))] if summaries
                                   else [])
    return [goodness_of_fit(*counts_against(o, e)[:2]) for o, e in tests]


def fits(observed: Counter, exact: Distribution, summaries: bool = True) -> bool:
    return all(fit.passes for fit in fit_tests(observed, exact, summaries))


def describe_outcome(outcome: Outcome) -> str:
    tokens, accepted = outcome
    return _("tokens {tokens} with num_accepted = {a}", tokens=list(tokens), a=accepted)


def shares(observed: Counter, exact: Distribution, key: Callable[[Outcome], Any]
           ) -> tuple[str, str]:
    """Two aligned lines of frequencies grouped by ``key``: expected, then the learner's."""
    total = sum(observed.values())
    groups = sorted({key(o) for o in exact} | {key(o) for o in observed})
    expected = {g: sum(w for o, w in exact.items() if key(o) == g) for g in groups}
    got = {g: sum(c for o, c in observed.items() if key(o) == g) / total for g in groups}
    return ("  ".join(f"{g}: {expected[g]:.3f}" for g in groups),
            "  ".join(f"{g}: {got[g]:.3f}" for g in groups))


def distribution_lines(observed: Counter, exact: Distribution,
                       summaries: bool = True) -> list[str]:
    counts, probs, keys = counts_against(observed, exact)
    fit = goodness_of_fit(counts, probs)
    if fit.passes:  # the summaries' test failed
        fit = fit_tests(observed, exact, summaries)[-1]
    if fit.impossible:
        _row, index, count = fit.impossible[0]
        return [_("{outcome} came {count} time(s), but no step of the algorithm can return it "
                  "(its probability is 0)", outcome=describe_outcome(keys[index]), count=count)]
    lines = [_("chi-square {statistic} > {threshold} ({df} degrees of freedom: a correct step "
               "exceeds it with probability {alpha:.0e}; this grader runs {tests} such tests)",
               statistic=f"{fit.statistic:.1f}", threshold=f"{fit.threshold:.1f}", df=fit.df,
               alpha=FALSE_FAILURE, tests=CHI_SQUARE_TESTS)]
    expected, got = shares(observed, exact, lambda o: o[1])
    lines += [_("num_accepted, expected:   {shares}", shares=expected),
              _("num_accepted, your steps: {shares}", shares=got)]
    expected, got = shares(observed, exact, lambda o: o[0][-1] if o[0] else None)
    lines += [_("last token, expected:     {shares}", shares=expected),
              _("last token, your steps:   {shares}", shares=got)]
    return lines


def suspects(case: Case) -> list[Suspect]:
    """Each mistake's switch, matching draws that fit its exact distribution (for a few
    draws: that gives each of them a positive probability)."""
    def fitting(switch: str) -> Callable[[Any], bool]:
        return lambda got: fits(got, step_distribution(case.target, case.draft, case.prefix,
                                                       case.gamma, switch))
    return [Suspect(slug, matches=fitting(switch)) for switch, slug in MISTAKE_OF.items()]
