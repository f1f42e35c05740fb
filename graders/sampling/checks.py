"""Grader for kata 16: ``apply_temperature``, ``top_k_filter``, ``top_p_filter`` and ``sample``.

The three filters are deterministic and graded exactly: kept entries bit for bit the
input's, removed entries ``-inf``, on random (tie-free) rows whose top-p boundaries keep
every cumulative sum at least :data:`P_MARGIN` away from p. A wrong result is named by
computing what each catalogued mistake keeps on the same input (:func:`top_k_reference`,
:func:`top_p_reference`, with one switch per mistake) and matching.

``sample`` is graded by distribution and reproducibility, never seed for seed: any correct
sampler (``torch.multinomial``, Gumbel-max, inverse CDF, an exponential race) consumes the
generator in its own way, so its draws are its own. Each distribution check repeats a few
distinct rows of logits :data:`DRAWS_PER_ROW` times in one call (one vectorised draw), counts
each row's draws per token and applies two tests:

- a token the filters remove (probability exactly 0) must never be drawn;
- Pearson's chi-square over the tokens, against the exact distribution computed in float64
  (graders/core/statistics.py). Bins: a token whose expected count is below 25
  (MIN_EXPECTED) is pooled with the other such tokens of its row; a pool still below it
  joins the row's smallest bin. The rows' statistics and degrees of freedom add up (the
  rows are drawn independently). The check fails when the statistic exceeds the
  chi-square quantile of upper tail 1e-10 (FALSE_FAILURE), computed with ``math`` alone:
  the regularised upper incomplete gamma function in closed form for integer degrees of
  freedom, inverted by bisection.

Why these numbers. A correct sampler must fail with negligible probability. The chi-square
law is the large-count limit of Pearson's statistic; with every bin's expected count at
least 25 its tail is close to the limit's. Checked by simulation (200,000 correct runs,
20,000 of each distribution check below, draws by torch.multinomial binned as here): the
statistic exceeded the nominal 1e-2, 1e-3 and 1e-4 quantiles in 1.01e-2, 0.99e-3 and
0.85e-4 of the runs, and the 1e-5 quantile in 4 runs of 200,000 (2 expected). The nominal
per-check probability is 1e-10 and a run holds at most 12 such checks: about 1e-9 per run,
and about 1e-7 even if the real far tail were 100 times heavier than the limit's. The verdict of one
sampler is deterministic: the generators are seeded. Power costs nothing at this size: at
the check that first sees it, every catalogued mistake's expected statistic (draws times
the chi-square divergence of its distribution from the right one) is 600 or more, often
infinite (a removed token drawn), against thresholds of 58-85 (6-18 degrees of freedom).
A mistake is named when its own distribution passes the same test and the right one fails.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest
import torch
from torch import Tensor

from graders.core.compare import expect_close
from graders.core.i18n import N_, _
from graders.core.implementation import Implementation
from graders.core.inputs import generator, randn
from graders.core.mistakes import Suspect, identify
from graders.core.randomness import expect_generator_rules
from graders.core.report import GradingFailure, describe_inputs, describe_value, title, verdict
from graders.core.statistics import FALSE_FAILURE, Fit, goodness_of_fit
from graders.sampling.twin import (
    NEG_INF,
    sampling_probs,
    sampling_suspects,
    top_k_reference,
    top_k_suspects,
    top_p_reference,
    top_p_suspects,
)

__all__ = [
    "test_apply_temperature",
    "test_top_k_filter",
    "test_top_p_filter",
    "test_sample_softmax_and_shapes",
    "test_sample_temperature",
    "test_sample_top_k",
    "test_sample_top_p",
    "test_sample_top_k_then_top_p",
    "test_sample_generator",
    "test_sample_temperature_zero_is_greedy",
    "test_inputs_untouched_storage_included",
    "test_filters_keep_dtype",
    "test_filter_edge_cases",
    "test_sample_float64_and_removed_tokens",
    "test_sample_on_cuda",
]

DRAWS_PER_ROW = 4000
# Graded top-p rows keep every cumulative sum at least this far from p (the contract: 2e-4).
P_MARGIN = 1e-3


# ------------------------------------------------------------------ calling the learner


def bits(t: Tensor) -> Tensor:
    """The tensor's bits as integers: equal iff bit for bit equal (-0.0 and NaN included)."""
    as_int = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.uint8}[t.element_size()]
    return t.detach().contiguous().view(as_int)


def in_place_failure(what: str, on: str, values_changed: bool = True) -> GradingFailure:
    if values_changed:
        detail = _("the caller's logits changed during the call (compared bit for bit, with the "
                   "whole storage they are a view of); leave the input as it was: work on new "
                   "tensors (logits / T, masked_fill), never logits /= T or masked_fill_")
    else:
        detail = _("your code wrote into the caller's logits in place (an in-place op such as "
                   "masked_fill_ or /= ran on them); on this input it happened to leave every "
                   "value as it was, on others it changes them: work on new tensors (logits / "
                   "T, masked_fill)")
    return verdict(what, on, [detail], "input-modified-in-place")


def call_on_logits(impl: Implementation, name: str, logits: Tensor, *args: Any, on: str,
                   storage: Tensor | None = None,
                   exception_slugs: Callable[[BaseException], str | None] | None = None,
                   **kwargs: Any) -> Any:
    """``name(logits, *args, **kwargs)`` from the learner's file, failing with
    input-modified-in-place when the logits, or the whole ``storage`` they are a view of,
    change bit for bit during the call, or when an in-place op ran on them (their version
    counter moved: the guard's own in-place report, which would otherwise name no mistake)
    even if it left every bit as it was (masked_fill_ with nothing to remove)."""
    whole = logits if storage is None else storage
    before = bits(whole).clone()
    version = whole._version  # shared by a view and its base
    fn = impl.attr(name)
    try:
        result = impl.call(fn, logits, *args, what=name, on=on, exception_slugs=exception_slugs,
                           **kwargs)
    except GradingFailure as failure:
        if failure.slug is None and not torch.equal(bits(whole), before):
            raise in_place_failure(name, on) from None
        if failure.slug is None and whole._version != version:
            raise in_place_failure(name, on, values_changed=False) from None
        raise
    if not torch.equal(bits(whole), before):
        raise in_place_failure(name, on)
    return result


# --------------------------------------------------------------------------- inputs


def logit_rows(rows: int, vocab: int, seed: int, scale: float = 1.5,
               dtype: torch.dtype = torch.float32) -> Tensor:
    """(rows, V) tie-free random logits: standard normal times ``scale``."""
    return randn(rows, vocab, seed=seed, dtype=dtype) * scale


def p_is_clear(logits: Tensor, p: float, temperature: float = 1.0,
               top_k: int | None = None) -> bool:
    """Whether every exclusive cumulative sum of every row's sorted probabilities (after the
    temperature and top-k, as sample's top-p sees them) is at least P_MARGIN from p."""
    x = logits.double() / temperature
    if top_k is not None:
        x = top_k_reference(x, top_k)
    probs = torch.softmax(x, dim=-1).sort(dim=-1, descending=True).values
    mass_before = probs.cumsum(-1) - probs
    return bool(((mass_before - p).abs() >= P_MARGIN).all())


def clear_rows(rows: int, vocab: int, seed: int, p: float, scale: float = 1.5,
               temperature: float = 1.0, top_k: int | None = None,
               dtype: torch.dtype = torch.float32) -> Tensor:
    """logit_rows whose top-p boundaries are clear of p: the first seed from ``seed`` on
    that gives such rows (the same rows on every run)."""
    for attempt in range(1000):
        logits = logit_rows(rows, vocab, seed + attempt, scale, dtype)
        if p_is_clear(logits, p, temperature, top_k):
            return logits
    raise AssertionError("no clear rows found")  # grader bug: widen the search


# ------------------------------------------------------------------------- the filters


def expect_filtered(got: Any, expected: Tensor, check: str, on: str,
                    suspects: list[Suspect]) -> None:
    """Values first (naming a mistake), then the contract's exactness: kept entries bit for
    bit the input's, removed ones -inf."""
    expect_close(got, expected, check, on, suspects)
    if not torch.equal(bits(got), bits(expected)):
        raise verdict(check, on, [_("the right tokens are kept, but their logits are not the "
                                    "input's bit for bit: return the kept entries unchanged "
                                    "(masked_fill or torch.where, no arithmetic on them)")])


def check_top_k(impl: Implementation, logits: Tensor, k: int) -> None:
    on = describe_inputs(logits=logits, k=k)
    got = call_on_logits(impl, "top_k_filter", logits.clone(), k, on=on)
    expect_filtered(got, top_k_reference(logits, k), _("top_k_filter's logits"), on,
                    top_k_suspects(logits, k))


def check_top_p(impl: Implementation, logits: Tensor, p: float) -> None:
    on = describe_inputs(logits=logits, p=p)
    got = call_on_logits(impl, "top_p_filter", logits.clone(), p, on=on)
    expect_filtered(got, top_p_reference(logits, p), _("top_p_filter's logits"), on,
                    top_p_suspects(logits, p))


def check_temperature(impl: Implementation, logits: Tensor, temperature: float) -> None:
    on = describe_inputs(logits=logits, temperature=temperature)
    got = call_on_logits(impl, "apply_temperature", logits.clone(), temperature, on=on)
    suspects = [Suspect("temperature-multiplied", predict=lambda: logits * temperature),
                Suspect("temperature-after-softmax",
                        predict=lambda: torch.softmax(logits, dim=-1) / temperature)]
    expect_close(got, logits / temperature, _("apply_temperature's logits"), on, suspects)


@title(N_("apply_temperature"))
@pytest.mark.core
def test_apply_temperature(impl):
    """logits / T for T below and above 1, on (V,), (b, V) and (b, n, V) logits."""
    for i, (shape, temperature) in enumerate((((7,), 0.5), ((3, 9), 2.0), ((2, 3, 5), 0.7))):
        check_temperature(impl, randn(*shape, seed=10 + i) * 2, temperature)


@title(N_("top_k_filter"))
@pytest.mark.core
def test_top_k_filter(impl):
    """The k largest of each row kept bit for bit, the rest -inf; k = 1, small, V - 1; 1-D,
    2-D and 3-D logits, every row its own."""
    for i, (shape, k) in enumerate((((4, 10), 3), ((11,), 5), ((2, 3, 8), 1), ((5, 6), 5),
                                    ((3, 12), 7))):
        check_top_k(impl, randn(*shape, seed=20 + i) * 1.5, k)


@title(N_("top_p_filter"))
@pytest.mark.core
def test_top_p_filter(impl):
    """The smallest most-probable set whose mass reaches p (the crossing token included)
    kept bit for bit, the rest -inf; rows far from sorted in vocabulary order, p clear of
    every cumulative sum."""
    for i, (rows, vocab, p) in enumerate(((4, 10, 0.7), (3, 12, 0.5), (5, 8, 0.9), (2, 16, 0.3))):
        check_top_p(impl, clear_rows(rows, vocab, seed=40 + 10 * i, p=p), p)
    logits = clear_rows(6, 9, seed=90, p=0.8).reshape(2, 3, 9)
    check_top_p(impl, logits, 0.8)


# --------------------------------------------------------------------------- sampling


def sample_on(logits: Tensor, temperature: float, top_k: int | None, top_p: float | None,
              extra: str = "") -> str:
    return describe_inputs(logits=logits, temperature=temperature, top_k=top_k,
                           top_p=top_p) + extra


def expect_draws(got: Any, shape: tuple[int, ...], vocab: int, device: torch.device,
                 check: str, on: str) -> Tensor:
    """A LongTensor of ``shape`` on ``device`` with ids in [0, vocab)."""
    if not isinstance(got, Tensor):
        raise verdict(check, on, [_("expected a LongTensor {shape}, got {value}", shape=shape,
                                    value=describe_value(got))])
    if tuple(got.shape) != shape:
        raise verdict(check, on, [_("expected shape {expected} (one token per row of logits; "
                                    "0-d for 1-D logits), got shape {got}", expected=shape,
                                    got=tuple(got.shape))])
    if got.dtype != torch.int64:
        raise verdict(check, on, [_("expected dtype torch.int64 (token ids), got {got}",
                                    got=got.dtype)])
    if got.device != device:
        raise verdict(check, on, [_("expected device {expected}, got {got}", expected=device,
                                    got=got.device)])
    if got.numel() and (int(got.min()) < 0 or int(got.max()) >= vocab):
        raise verdict(check, on, [_("token ids must lie in [0, {vocab}), got values from {low} "
                                    "to {high}", vocab=vocab, low=int(got.min()),
                                    high=int(got.max()))])
    return got


def fit_lines(fit: Fit, counts: Tensor, probs: Tensor) -> list[str]:
    """A few numbers: the row furthest from its distribution, expected vs drawn frequencies."""
    if fit.impossible:
        row, token, count = fit.impossible[0]
        return [_("distinct row {row}: token {token} was drawn {count} time(s), but its "
                  "probability after the filters is 0 (a removed token must never be drawn)",
                  row=row, token=token, count=count)]
    share = counts.double() / counts.sum(-1, keepdim=True)
    row = int((share - probs).abs().sum(-1).argmax())
    shown = min(probs.size(-1), 8)
    return [
        _("chi-square {statistic} > {threshold} ({df} degrees of freedom: a correct sampler "
          "exceeds it with probability {alpha:.0e})", statistic=f"{fit.statistic:.1f}",
          threshold=f"{fit.threshold:.1f}", df=fit.df, alpha=FALSE_FAILURE),
        _("distinct row {row}, probabilities  {values}", row=row,
          values=", ".join(f"{v:.3f}" for v in probs[row, :shown].tolist())),
        _("distinct row {row}, your frequencies {values}", row=row,
          values=", ".join(f"{v:.3f}" for v in share[row, :shown].tolist())),
    ]


def check_distribution(impl: Implementation, distinct: Tensor, temperature: float = 1.0,
                       top_k: int | None = None, top_p: float | None = None, *, seed: int,
                       layout: str = "flat") -> None:
    """Draw DRAWS_PER_ROW tokens for each of the distinct rows (R, V) in one call and test
    them against the exact distribution. ``layout``: "flat" logits (R * N, V), "grouped"
    (R, N, V), "interleaved" (N, R, V) (the leading dimensions of the contract)."""
    rows, vocab = distinct.shape
    n = DRAWS_PER_ROW
    if layout == "grouped":
        logits = distinct[:, None, :].expand(rows, n, vocab).clone()
    elif layout == "interleaved":
        logits = distinct[None].expand(n, rows, vocab).clone()
    else:
        logits = distinct.repeat_interleave(n, dim=0)
    on = sample_on(logits, temperature, top_k, top_p)
    got = call_on_logits(impl, "sample", logits, temperature=temperature, top_k=top_k,
                         top_p=top_p, generator=generator(seed), on=on)
    check = _("the distribution of sample's draws")
    draws = expect_draws(got, tuple(logits.shape[:-1]), vocab, logits.device, check, on)
    per_row = draws.transpose(0, 1) if layout == "interleaved" else draws
    per_row = per_row.reshape(rows, n).cpu()
    counts = torch.stack([torch.bincount(r, minlength=vocab) for r in per_row])
    probs = sampling_probs(distinct, temperature, top_k, top_p)
    fit = goodness_of_fit(counts, probs)
    if fit.passes:
        return
    suspects = [Suspect(slug, matches=lambda c, q=q: goodness_of_fit(c, q).passes)
                for slug, q in sampling_suspects(distinct, temperature, top_k, top_p)]
    slug = identify(counts, probs, suspects, 0.0, 0.0)
    raise verdict(check, on + _(" ({n} draws for each of {rows} distinct rows)", n=n, rows=rows),
                  fit_lines(fit, counts, probs), slug)


@title(N_("sample at temperature 1 and its shapes"))
@pytest.mark.core
def test_sample_softmax_and_shapes(impl):
    """Temperature 1, no filter: draws distributed as softmax(logits), for 2-D and 3-D
    logits; 1-D logits give a 0-d LongTensor."""
    check_distribution(impl, logit_rows(3, 6, seed=100), seed=101)
    check_distribution(impl, logit_rows(2, 9, seed=102), seed=103, layout="interleaved")
    logits = logit_rows(1, 5, seed=104)[0]
    on = sample_on(logits, 1.0, None, None)
    got = call_on_logits(impl, "sample", logits.clone(), generator=generator(105), on=on)
    expect_draws(got, (), 5, logits.device, _("sample's draw for 1-D logits"), on)


@title(N_("sample with a temperature"))
@pytest.mark.core
def test_sample_temperature(impl):
    """Draws distributed as softmax(logits / T) for T = 2 and T = 0.5 (not softmax(logits),
    not softmax(logits * T))."""
    check_distribution(impl, logit_rows(3, 7, seed=110), 2.0, seed=111)
    check_distribution(impl, logit_rows(3, 7, seed=112), 0.5, seed=113, layout="grouped")


@title(N_("sample with top-k"))
@pytest.mark.core
def test_sample_top_k(impl):
    """Temperature, then top-k: only the k best tokens are ever drawn, in softmax proportions."""
    check_distribution(impl, logit_rows(3, 8, seed=120, scale=1.0), 1.0, top_k=3, seed=121)
    check_distribution(impl, logit_rows(3, 10, seed=122, scale=1.0), 0.5, top_k=5, seed=123)


@title(N_("sample with top-p"))
@pytest.mark.core
def test_sample_top_p(impl):
    """Temperature, then top-p: only the nucleus is drawn, renormalised."""
    check_distribution(impl, clear_rows(3, 8, seed=130, p=0.75, scale=1.0), 1.0, top_p=0.75,
                       seed=131)
    check_distribution(impl, clear_rows(3, 10, seed=148, p=0.7, scale=0.6, temperature=0.5),
                       0.5, top_p=0.7, seed=133)


@title(N_("sample with top-k then top-p"))
@pytest.mark.core
def test_sample_top_k_then_top_p(impl):
    """Temperature, then top-k, then top-p on the top-k-renormalised probabilities
    (Hugging Face's order), as one distribution."""
    # Rows where top-p alone would keep more than k tokens: "top-p, then top-k" and "top-k
    # ignored" differ from each other and from the right distribution.
    check_distribution(impl, clear_rows(3, 10, seed=232, p=0.7, scale=0.4, temperature=0.6,
                                        top_k=5), 0.6, top_k=5, top_p=0.7, seed=141)


@title(N_("sample reproducible from its generator"))
@pytest.mark.core
def test_sample_generator(impl):
    """The same generator state gives the same draws whatever the global RNG's state; the
    global RNG is left untouched and the generator advances. generator=None uses the global
    RNG: torch.manual_seed reproduces the draws."""
    distinct = logit_rows(4, 6, seed=150, scale=0.7)
    logits = distinct.repeat_interleave(64, dim=0)
    settings = dict(temperature=0.9, top_k=5, top_p=0.95)
    on = sample_on(logits, **settings)

    def draw(gen: torch.Generator | None) -> list[int]:
        what = "sample(..., generator=g)" if gen else "sample(...)"
        got = call_on_logits(impl, "sample", logits, generator=gen, on=on, **settings)
        return expect_draws(got, (logits.size(0),), 6, logits.device, what, on).tolist()

    expect_generator_rules(draw, seed=151, what="sample(..., generator=g)",
                           what_global="sample(..., generator=None)", on=on)


def greedy_slug(exc: BaseException) -> str | None:
    """Temperature 0 divided by: ZeroDivisionError (1 / T), the ValueError an
    apply_temperature raises for T <= 0, or the NaN/inf probabilities torch.multinomial
    refuses."""
    if isinstance(exc, (ZeroDivisionError, ValueError)):
        return "greedy-temperature-zero-missing"
    text = str(exc).lower()
    if isinstance(exc, RuntimeError) and ("probability" in text or "inf" in text or "nan" in text):
        return "greedy-temperature-zero-missing"
    return None


@title(N_("temperature 0 is greedy"))
@pytest.mark.core
def test_sample_temperature_zero_is_greedy(impl):
    """temperature=0 returns each row's argmax (filters given or not), for 2-D, 3-D and 1-D
    logits."""
    cases = (((5, 9), {}), ((2, 3, 7), {"top_k": 3, "top_p": 0.5}), ((8,), {"top_p": 0.9}))
    for i, (shape, filters) in enumerate(cases):
        logits = randn(*shape, seed=160 + i) * 2
        on = sample_on(logits, 0, filters.get("top_k"), filters.get("top_p"))
        got = call_on_logits(impl, "sample", logits.clone(), temperature=0,
                             generator=generator(170 + i), on=on, exception_slugs=greedy_slug,
                             **filters)
        what = _("sample(..., temperature=0): the argmax of each row")
        got = expect_draws(got, tuple(shape[:-1]), shape[-1], logits.device, what, on)
        expected = logits.argmax(dim=-1)
        if not torch.equal(got, expected):
            raise verdict(what, on, [
                _("expected {expected}", expected=expected.flatten()[:8].tolist()),
                _("got      {got}", got=got.flatten()[:8].tolist())],
                "greedy-temperature-zero-missing")


# ------------------------------------------------------------------------- follow-ups


@title(N_("inputs untouched bit for bit"))
@pytest.mark.followup
def test_inputs_untouched_storage_included(impl):
    """Logits that are a strided view of a larger buffer: no function changes a bit of the
    buffer (values, -0.0, the columns around the view)."""
    buffer = randn(4, 12, seed=180) * 2
    buffer[:, 0] = -0.0
    logits = buffer[:, 1:11]  # (4, 10), rows strided
    calls = (("apply_temperature", (0.5,), {}), ("top_k_filter", (3,), {}),
             ("top_p_filter", (0.6,), {}),
             ("sample", (), dict(temperature=0.8, top_k=4, top_p=0.7, generator=generator(181))),
             ("sample", (), dict(temperature=0)))
    for name, args, kwargs in calls:
        on = describe_inputs(logits=logits) + _(" (a view of a (4, 12) buffer)")
        call_on_logits(impl, name, logits, *args, on=on, storage=buffer, **kwargs)


@title(N_("filters in float64 and half precision"))
@pytest.mark.followup
def test_filters_keep_dtype(impl):
    """float64 graded like float32; bfloat16 and float16 keep their dtype (p far from every
    cumulative sum, for their few digits)."""
    check_temperature(impl, randn(3, 8, seed=190, dtype=torch.float64), 0.6)
    check_top_k(impl, randn(3, 8, seed=191, dtype=torch.float64), 3)
    check_top_p(impl, clear_rows(3, 8, seed=192, p=0.65, dtype=torch.float64), 0.65)
    base = torch.tensor([[3.0, 1.0, 0.0, 2.0, -1.0, 0.5], [0.0, -2.0, 4.0, 1.0, 3.0, -1.0]])
    for dtype in (torch.bfloat16, torch.float16):
        logits = base.to(dtype)
        check_top_k(impl, logits, 2)
        check_top_p(impl, logits, 0.8)


@title(N_("filter edge cases"))
@pytest.mark.followup
def test_filter_edge_cases(impl):
    """k >= V keeps every token; -inf entries already present stay -inf (and have
    probability 0 in top-p); one dominant token above p is kept alone; k = 1."""
    logits = randn(3, 6, seed=200)
    check_top_k(impl, logits, 6)
    check_top_k(impl, logits, 50)
    with_inf = randn(3, 8, seed=201).masked_fill(torch.tensor([0, 1, 0, 0, 1, 0, 0, 1],
                                                              dtype=torch.bool), NEG_INF)
    check_top_k(impl, with_inf, 3)
    check_top_k(impl, with_inf, 7)  # more than the 5 finite entries: nothing else removed
    check_top_p(impl, clear_rows(3, 8, seed=202, p=0.7).masked_fill(
        torch.tensor([1, 0, 0, 1, 0, 0, 0, 0], dtype=torch.bool), NEG_INF), 0.7)
    peaked = torch.tensor([[0.0, 5.0, 1.0, -1.0, 0.5], [2.0, 1.9, 1.8, 1.7, 1.6]])
    check_top_p(impl, peaked, 0.3)  # row 0: p(token 1) ~ 0.96 > 0.3, kept alone


@title(N_("sample in float64 with removed tokens"))
@pytest.mark.followup
def test_sample_float64_and_removed_tokens(impl):
    """float64 logits with -inf entries: those tokens are never drawn, the rest in
    proportion; k = 1 draws the argmax."""
    distinct = logit_rows(3, 7, seed=210, dtype=torch.float64).masked_fill(
        torch.tensor([0, 0, 1, 0, 0, 1, 0], dtype=torch.bool), NEG_INF)
    check_distribution(impl, distinct, 1.3, seed=211)
    check_distribution(impl, logit_rows(2, 6, seed=212), 1.0, top_k=1, seed=213)


@title(N_("sample on CUDA"))
@pytest.mark.followup
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_sample_on_cuda(impl):
    """CUDA logits and a CUDA generator: draws on the GPU, distributed as on the CPU;
    float16 and bfloat16 filters keep their dtype."""
    distinct = clear_rows(3, 8, seed=220, p=0.9, temperature=0.8, top_k=5).cuda()
    logits = distinct.repeat_interleave(DRAWS_PER_ROW, dim=0)
    on = sample_on(logits, 0.8, 5, 0.9) + " on cuda"
    g = torch.Generator(device="cuda").manual_seed(221)
    got = call_on_logits(impl, "sample", logits, temperature=0.8, top_k=5, top_p=0.9,
                         generator=g, on=on)
    draws = expect_draws(got, (logits.size(0),), 8, logits.device, _("sample on cuda"), on)
    counts = torch.stack([torch.bincount(r, minlength=8) for r in draws.cpu().reshape(3, -1)])
    probs = sampling_probs(distinct.cpu(), 0.8, 5, 0.9)
    fit = goodness_of_fit(counts, probs)
    if not fit.passes:
        raise verdict(_("the distribution of sample's draws"), on, fit_lines(fit, counts, probs))
    for dtype in (torch.float16, torch.bfloat16):
        half = distinct.to(dtype)
        got = call_on_logits(impl, "top_k_filter", half.clone(), 3, on=describe_inputs(logits=half))
        expect_filtered(got, top_k_reference(half, 3), _("top_k_filter's logits"),
                        describe_inputs(logits=half) + " on cuda", [])
