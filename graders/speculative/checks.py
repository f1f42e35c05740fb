"""Grader for kata 21: ``speculative_step``, one step of speculative sampling.

The step is random, so it is graded as a distribution, never seed for seed (any correct
sampler and any correct Bernoulli test consume the generator in their own way). The model
functions are toy models over V <= 4 tokens whose distributions depend on the whole
context (graders/speculative/twin.py), so the exact distribution of one step's outcome
``(tokens, num_accepted)`` is computed by enumerating every draft sequence and every
acceptance outcome. A distribution check runs the learner's step many times on one
prefix, counts the outcomes and applies kata 16's tests (graders/core/statistics.py):

- an outcome of probability 0 (a token no rule can emit there, a length that does not
  match num_accepted) fails at once;
- Pearson's chi-square over the outcomes, bins below 25 expected draws pooled, fails above
  the quantile of upper tail 1e-10 (FALSE_FAILURE); and the same test over the outcomes'
  summaries (num_accepted, the last token), which keeps in a few bins what the pooling of
  rare long outcomes loses (acceptance lengths, the token emitted after a rejection).

A run holds ``steps.CHI_SQUARE_TESTS`` (9) such tests, so a correct step fails a run with
probability at most 9e-10; the verdict of one step function is deterministic (seeded
generators). The draws are few enough to stay fast and many enough for every catalogued
mistake, measured on the mutants and on a dozen mistaken steps written apart from them: in
the main check (:data:`STEPS` = 700 steps) each fails by a wide margin or emits outcomes
of probability 0 (the closest, a uniform reused for the resample: 111 against a threshold
of 58 over the outcomes, 193 against 63 over their summaries), except the bonus token
drawn one row early, which the check with the target as its own draft catches (120
against 46).
A mistake is named when its own exact distribution passes the same test and the right one
fails; mistakes that raise (a ratio above 1 to torch.bernoulli, a negative residual to
torch.multinomial) are named from the exception.

Deterministic rules are graded exactly: the call pattern (by wrapping both model
functions and copying what they receive), greedy mode against the target's own greedy
decoding, a draft equal to the target (all gamma kept), the generator's reproducibility,
and the prefix left as it was.
"""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from graders.core.i18n import N_, _
from graders.core.implementation import Implementation
from graders.core.inputs import generator
from graders.core.mistakes import identify
from graders.core.randomness import expect_generator_rules
from graders.core.report import title, verdict
from graders.speculative.steps import (  # noqa: F401 (slug_for_exception: the plugin's)
    Case,
    consistency_problem,
    describe_outcome,
    disjoint_case,
    distribution_lines,
    equal_case,
    fits,
    main_case,
    model_fns,
    one_hot_case,
    outcome_of,
    run_steps,
    slug_for_exception,
    small_case,
    suspects,
)
from graders.speculative.twin import (
    GREEDY_MISTAKE_OF,
    Outcome,
    generation_distribution,
    greedy_decoding,
    greedy_step,
    step_distribution,
    toy_pair,
)

__all__ = [
    "test_step_output",
    "test_call_rule",
    "test_output_distribution",
    "test_greedy_mode",
    "test_generator_reproducibility",
    "test_prefix_untouched",
    "test_distribution_float32",
    "test_generation_is_the_targets",
    "test_draft_equal_to_target",
    "test_disjoint_draft",
]

STEPS = 700  # draws of the main distribution check (V = 4, gamma = 3)


# ------------------------------------------------------------ a sample against its law


def check_distribution(impl: Implementation, case: Case, steps: int, seed: int,
                       check: str) -> None:
    """``steps`` steps from one generator; their outcomes against the exact distribution,
    the mistakes' distributions naming a failure."""
    on = case.describe() + _(" ({n} steps from one generator)", n=steps)
    results, _calls = run_steps(impl, case, steps, what=check, on=on, gen=generator(seed))
    observed = Counter(outcome_of(r, case, check, on) for r in results)
    exact = step_distribution(case.target, case.draft, case.prefix, case.gamma)
    if fits(observed, exact):
        return
    slug = identify(observed, exact, suspects(case), 0.0, 0.0)
    if slug is None:  # a problem stated without statistics, when there is one
        for outcome in observed:
            problem = consistency_problem(outcome, case)
            if problem:
                raise verdict(check, on, [problem])
    raise verdict(check, on, distribution_lines(observed, exact), slug)


# ------------------------------------------------------------------------- the checks


@title(N_("the step's output"))
@pytest.mark.core
def test_step_output(impl):
    """A pair (tokens, num_accepted): tokens a 1-D int64 tensor of num_accepted + 1 tokens
    of the vocabulary, 0 <= num_accepted <= gamma, for gamma = 1, 2, 3, in float64 and
    float32."""
    check = _("speculative_step's output")
    cases = (main_case(), small_case(), Case(*toy_pair(4, 5), (0,), 1))
    for seed, case in enumerate(cases):
        on = case.describe()
        results, _calls = run_steps(impl, case, 8, what=check, on=on, gen=generator(seed))
        expect_consistent([outcome_of(r, case, check, on) for r in results], case, check, on)


def expect_consistent(outcomes: list[Outcome], case: Case, check: str, on: str) -> None:
    """Fail on the first outcome no randomness explains, named by the mistake whose
    distribution gives every one of these outcomes a positive probability."""
    for outcome in outcomes:
        problem = consistency_problem(outcome, case)
        if problem:
            observed = Counter(outcomes)
            exact = step_distribution(case.target, case.draft, case.prefix, case.gamma)
            raise verdict(check, on, [problem], identify(observed, exact, suspects(case), 0, 0))


def call_problem(log: list[tuple[str, tuple[int, ...]]], outcome: Outcome,
                 case: Case) -> tuple[str, str | None] | None:
    """What breaks the call rule in one step's calls, with the mistake it shows, or None."""
    n, gamma = len(case.prefix), case.gamma
    names = [name for name, _t in log]
    lengths = [len(t) for _name, t in log]
    drafts = [t for name, t in log if name == "draft_fn"]
    targets = [t for name, t in log if name == "target_fn"]
    pattern = ", ".join(f"{name}({length})" for name, length in zip(names, lengths))
    if len(targets) > 1:
        return (_("target_fn was called {count} times in one step ({pattern}): once, on "
                  "prefix + all gamma draft tokens, gives every row needed, the bonus "
                  "token's included", count=len(targets), pattern=pattern),
                "target-called-per-token")
    expected = [("draft_fn", n + i) for i in range(gamma)] + [("target_fn", n + gamma)]
    if len(targets) == 1 and n <= len(targets[0]) < n + gamma and len(drafts) <= gamma:
        return (_("the calls were {pattern}: target_fn verified a sequence shorter than prefix "
                  "+ all gamma draft tokens, one token at a time; one call on all of them gives "
                  "every row, also when the first draft token is then rejected",
                  pattern=pattern), "target-called-per-token")
    if list(zip(names, lengths)) != expected and len(targets) == 1 \
            and n + gamma in [len(t) for t in drafts]:
        return (_("the calls were {pattern}: draft_fn saw the last draft token, so a draft "
                  "row was read after appending its token; d_i was drawn from the last row of "
                  "draft_fn(prefix + d_0 ... d_(i-1)), and that row judges it", pattern=pattern),
                "position-off-by-one")
    if list(zip(names, lengths)) != expected:
        wanted = ", ".join(f"{name}({length})" for name, length in expected)
        return _("the calls were {pattern}; expected {wanted} (the name of each function "
                 "with the length of the tokens it got, in call order)", pattern=pattern,
                 wanted=wanted), None
    if any(t[:n] != case.prefix for _name, t in log):
        return _("a model function got tokens that do not start with the prefix {prefix}",
                 prefix=list(case.prefix)), None
    for i in range(1, gamma):
        if drafts[i][:-1] != drafts[i - 1]:
            return _("draft_fn's call {i} got {got}: it should extend the previous call's "
                     "tokens {before} by one draft token", i=i + 1, got=list(drafts[i]),
                     before=list(drafts[i - 1])), None
    if targets[0][:-1] != drafts[-1]:
        return _("target_fn got {got}: expected the last draft call's tokens {before} and the "
                 "last draft token", got=list(targets[0]), before=list(drafts[-1])), None
    tokens, accepted = outcome
    if tuple(tokens[:accepted]) != targets[0][n:n + accepted]:
        return _("the first {a} tokens returned, {tokens}, are not the draft tokens the target "
                 "verified, {drafted}: accepted tokens are the draft's, in order",
                 a=accepted, tokens=list(tokens[:accepted]),
                 drafted=list(targets[0][n:n + accepted])), None
    return None


@title(N_("the call rule"))
@pytest.mark.core
def test_call_rule(impl):
    """Per step, draft_fn exactly gamma times with lengths n, n+1, ..., n+gamma-1, then
    target_fn exactly once with length n + gamma, each call extending the last; the accepted
    tokens are the drafted ones. Also when the draft is always rejected (the target is
    called anyway: nothing can know before) and for gamma = 1."""
    check = _("the calls to draft_fn and target_fn")
    for seed, case in enumerate((main_case(), disjoint_case(), Case(*toy_pair(4, 5), (0,), 1))):
        on = case.describe()
        results, calls = run_steps(impl, case, 6, what=check, on=on, gen=generator(20 + seed),
                                   record=True)
        outcomes = [outcome_of(result, case, check, on) for result in results]
        problems = [call_problem(log, outcome, case) for outcome, log in zip(outcomes, calls)]
        problems = [problem for problem in problems if problem]
        if problems:  # a step that names its mistake first: the others may only hint at it
            text, slug = next((p for p in problems if p[1]), problems[0])
            observed = Counter(outcomes)
            exact = step_distribution(case.target, case.draft, case.prefix, case.gamma)
            if slug is None and not fits(observed, exact):  # outcomes only a mistake explains
                slug = identify(observed, exact, suspects(case), 0, 0)
            raise verdict(check, on, [text], slug)


@title(N_("the output distribution"))
@pytest.mark.core
def test_output_distribution(impl):
    """Over STEPS steps on one prefix (V = 4, gamma = 3, float64), the outcomes (tokens,
    num_accepted) follow the exact distribution the algorithm defines."""
    check_distribution(impl, main_case(), STEPS, seed=30,
                       check=_("the distribution of speculative_step's outcomes"))


def expect_greedy(impl: Implementation, case: Case, check: str) -> None:
    on = case.describe() + _(" (greedy=True)")
    gen = generator(40)
    state = gen.get_state()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(41)
        global_state = torch.get_rng_state()
        results, _calls = run_steps(impl, case, 1, what=check, on=on, gen=gen, greedy=True)
        global_moved = not torch.equal(torch.get_rng_state(), global_state)
    got = outcome_of(results[0], case, check, on)
    expected = greedy_step(case.target, case.draft, case.prefix, case.gamma)
    if got != expected:
        slugs = {slug for switch, slug in GREEDY_MISTAKE_OF.items()
                 if got == greedy_step(case.target, case.draft, case.prefix, case.gamma, switch)}
        slug = slugs.pop() if len(slugs) == 1 else None
        if slug == "greedy-not-target-greedy" and got == (expected[0][:-1], case.gamma) \
                and bonus_missing(impl, check):
            slug = "bonus-token-missing"  # in sampling mode too: not greedy mode's own mistake
        alone = greedy_decoding(case.target, case.prefix, len(expected[0]))
        raise verdict(check, on, [
            _("expected {outcome}", outcome=describe_outcome(expected)),
            _("got      {outcome}", outcome=describe_outcome(got)),
            _("the target decoding greedily alone gives {tokens}", tokens=list(alone))], slug)
    if global_moved or not torch.equal(gen.get_state(), state):
        raise verdict(check, on, [_("greedy mode drew random numbers (the global RNG or the "
                                    "generator moved): it has no randomness at all")])


def bonus_missing(impl: Implementation, check: str) -> bool:
    """Whether sampling mode also returns gamma tokens when all gamma are accepted."""
    case = equal_case()
    results, _calls = run_steps(impl, case, 1, what=check, on=case.describe(), gen=generator(43))
    tokens, accepted = outcome_of(results[0], case, check, case.describe())
    return (len(tokens), accepted) == (case.gamma, case.gamma)


@title(N_("greedy mode"))
@pytest.mark.core
def test_greedy_mode(impl):
    """greedy=True: the tokens are the target's own greedy decoding of num_accepted + 1
    tokens, whatever the draft (agreeing, disagreeing, disjoint, equal to the target); no
    random number drawn. On one-hot distributions the sampling rule gives the same."""
    check = _("speculative_step in greedy mode")
    target, draft = toy_pair(4, 0)
    for case in (Case(target, draft, (1, 2), 3), Case(target, draft, (3,), 2),
                 disjoint_case(), Case(target, target, (0, 3), 3), one_hot_case()):
        expect_greedy(impl, case, check)
    case = one_hot_case()
    on = case.describe() + _(" (sampling, one-hot distributions)")
    check = _("speculative_step on one-hot distributions")
    results, _calls = run_steps(impl, case, 3, what=check, on=on, gen=generator(42))
    expected = greedy_step(case.target, case.draft, case.prefix, case.gamma)
    for result in results:
        got = outcome_of(result, case, check, on)
        if got != expected:  # named by the one mistake that gives this outcome for sure
            exact = step_distribution(case.target, case.draft, case.prefix, case.gamma)
            raise verdict(check, on, [
                _("expected {outcome} (every distribution is one-hot: no randomness is left)",
                  outcome=describe_outcome(expected)),
                _("got      {outcome}", outcome=describe_outcome(got))],
                identify(Counter([got]), exact, suspects(case), 0, 0))


@title(N_("reproducible from its generator"))
@pytest.mark.core
def test_generator_reproducibility(impl):
    """The same generator state gives the same steps whatever the global RNG's state; the
    global RNG is untouched and the generator advances; generator=None uses the global RNG
    (torch.manual_seed reproduces the steps)."""
    case = main_case()
    on = case.describe() + _(" (20 steps)")

    def draw(gen: torch.Generator | None) -> list[Outcome]:
        what = "speculative_step(..., generator=g)" if gen else "speculative_step(...)"
        results, _calls = run_steps(impl, case, 20, what=what, on=on, gen=gen)
        return [outcome_of(r, case, what, on) for r in results]

    expect_generator_rules(draw, seed=50, what="speculative_step(..., generator=g)",
                           what_global="speculative_step(..., generator=None)", on=on)


@title(N_("the prefix untouched"))
@pytest.mark.core
def test_prefix_untouched(impl):
    """A prefix that is a view of a larger buffer: no bit of the buffer changes, in sampling
    and in greedy mode."""
    case = main_case()
    step = impl.attr("speculative_step")
    check = _("the caller's prefix")
    for greedy in (False, True):
        buffer = torch.tensor([9, *case.prefix, 7], dtype=torch.int64)
        before = buffer.clone()
        prefix = buffer[1:-1]
        on = case.describe() + _(" (the prefix a view of {buffer})", buffer=before.tolist())
        # through a closure: the prefix is not the guard's to report, but this check's to name
        impl.call(lambda: step(*model_fns(case), prefix, case.gamma, generator=generator(60),
                               greedy=greedy), what=check, on=on)
        if not torch.equal(buffer, before):
            raise verdict(check, on, [_("the buffer behind the prefix was {before}, it is now "
                                        "{after}: build new tensors (torch.cat), never write "
                                        "into the caller's prefix", before=before.tolist(),
                                        after=buffer.tolist())], "input-modified-in-place")


# ------------------------------------------------------------------------- follow-ups


@title(N_("float32 probabilities"))
@pytest.mark.followup
def test_distribution_float32(impl):
    """The distribution check again with float32 probabilities, V = 3, gamma = 2 and a
    prefix of one token."""
    check_distribution(impl, small_case(), 300, seed=70,
                       check=_("the distribution of speculative_step's outcomes"))


@title(N_("repeated steps sample the target"))
@pytest.mark.followup
def test_generation_is_the_targets(impl):
    """Steps repeated, each on the prefix grown by the last step's tokens: the first 3
    generated tokens follow the target's own distribution (the product of its
    probabilities), which is the point of the algorithm."""
    target, draft = toy_pair(3, 2)
    case = Case(target, draft, (1,), 2)
    length, generations = 3, 150
    check = _("the first {n} tokens of generations by repeated steps", n=length)
    on = case.describe() + _(" ({n} generations)", n=generations)
    step = impl.attr("speculative_step")
    gen = generator(80)

    fns = model_fns(case)
    generated = []
    for _g in range(generations):  # each step guarded on its own, as in run_steps
        tokens: tuple[int, ...] = ()
        while len(tokens) < length:
            prefix = torch.tensor(case.prefix + tokens, dtype=torch.int64)
            result = impl.call(lambda: step(*fns, prefix, case.gamma, generator=gen),
                               what=check, on=on)
            outcome = outcome_of(result, case, check, on)
            at = Case(case.target, case.draft, case.prefix + tokens, case.gamma)
            expect_consistent([outcome], at, check, at.describe())
            tokens += outcome[0]
        generated.append(tokens[:length])
    observed = Counter((tokens, -1) for tokens in generated)
    exact = generation_distribution(case.target, case.prefix, length)
    if not fits(observed, exact, summaries=False):
        raise verdict(check, on, distribution_lines(observed, exact, summaries=False)[:1] + [
            _("the target's own probability of each sequence is the product of its "
              "probabilities, token after token: a step must keep that distribution")])


@title(N_("a draft equal to the target"))
@pytest.mark.followup
def test_draft_equal_to_target(impl):
    """draft_fn = target_fn: every ratio is 1, so every step accepts all gamma tokens and
    adds the bonus token: gamma + 1 tokens; with gamma = 1, over 200 steps, the bonus token
    follows the target's row after the draft token (the row before it leans the other way)."""
    case = equal_case()
    check = _("speculative_step with the target as its draft")
    on = case.describe()
    results, _calls = run_steps(impl, case, 25, what=check, on=on, gen=generator(90))
    for result in results:
        tokens, accepted = outcome_of(result, case, check, on)
        if (len(tokens), accepted) != (case.gamma + 1, case.gamma):
            slug = "bonus-token-missing" if (len(tokens), accepted) == (case.gamma,
                                                                          case.gamma) else None
            raise verdict(check, on, [_(
                "got {outcome}: with p = q every ratio p/q is 1, so all {gamma} draft tokens "
                "are accepted and the target's row after the last one adds a bonus token "
                "({total} in all)", outcome=describe_outcome((tokens, accepted)),
                gamma=case.gamma, total=case.gamma + 1)], slug)
    one = Case(case.target, case.target, case.prefix, 1)
    check_distribution(impl, one, 200, seed=91, check=check)


@title(N_("a draft the target never agrees with"))
@pytest.mark.followup
def test_disjoint_draft(impl):
    """The draft proposes only tokens of target probability 0: every step rejects the first
    one (num_accepted = 0) and emits one token distributed as the target's p_0."""
    check_distribution(impl, disjoint_case(), 100, seed=100,
                       check=_("speculative_step with a draft disjoint from the target"))
