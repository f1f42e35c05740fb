"""Grader for kata 05: ``sinusoidal_positional_encoding`` and ``PositionalEncoding``.

Expected numbers come from the formula itself, computed independently in float64:
``PE[p, 2i] = sin(p * w_i)``, ``PE[p, 2i+1] = cos(p * w_i)`` with ``w_i = base^(-2i/d)``.
:func:`reference_table` has one switch per way of getting it wrong; the grader builds the
table each catalogued mistake would give and names the mistake whose table the learner's
output reproduces.

A correct float32 table is only as exact as float32 rounding of the angle ``p * w``: at
position 5000 that alone moves a value by ~1e-3. Tables are therefore compared with an
allowed error that grows with the angle behind each value (:func:`allowed_error`), so a
sound float32 computation passes while every mistake still differs by O(1) somewhere.
"""

from __future__ import annotations

import math
import re
from typing import Callable

import pytest
import torch
from torch import Tensor, nn

from graders.core.i18n import N_, _
from graders.core.compare import (
    MISTAKE_SLACK,
    expect_close,
    expect_grads_close,
    expect_tracks_grad,
    tolerance,
)
from graders.core.implementation import Implementation
from graders.core.inputs import drawn_cases, grads_of, leaf_copies, randn, weighted_sum
from graders.core.mistakes import Suspect, identify
from graders.core.report import describe_inputs, describe_tensor, describe_value, verdict, title
from graders.twins.precision import ANGLE_ERROR, FLOAT32_EPS  # float32 angles: 16 eps per radian
from graders.positional_encoding.twin import (
    along_batch,
    along_sequence,
    mistaken_tables,
    reference_table,
    Table,
    TABLE_DTYPE,
)

__all__ = [
    "test_table_matches_formula",
    "test_table_odd_d_model_and_other_base",
    "test_table_random_shapes",
    "test_pe_is_a_buffer",
    "test_forward_seq_first",
    "test_forward_batch_first",
    "test_forward_random_shapes",
    "test_long_table",
    "test_dropout_only_in_training",
    "test_sequence_longer_than_max_len",
    "test_dtype_follows_input",
    "test_gradients_flow_to_input",
    "test_half_precision_on_cuda",
]

# Rows used to recognise "sinusoids with the wrong frequencies" in any form.
FIT_ROWS = 16


# ------------------------------------------------------------------ comparing by angle


def allowed_error(values: Tensor, angle: Tensor, dtype: torch.dtype) -> Tensor:
    """How far a sound implementation may be from ``values`` (float64), element by element.

    The output dtype's own tolerance, plus a float32 table's: its rounding and the
    rounding of its angle p * w, which grows with the angle.
    """
    rtol, atol = tolerance(dtype)
    t_rtol, t_atol = tolerance(TABLE_DTYPE)
    error = atol + rtol * values.abs() + t_atol + ANGLE_ERROR * FLOAT32_EPS * angle.abs()
    return error.nan_to_num(nan=math.inf)


def within(got: Tensor, target: Tensor, allowed: Tensor) -> Tensor:
    """Elementwise |got - target| <= allowed, NaN matching NaN (float64 CPU tensors)."""
    return ((got - target).abs() <= allowed) | (torch.isnan(got) & torch.isnan(target))


def as_float64(t: Tensor) -> Tensor:
    return t.detach().to("cpu", torch.float64)


def angle_suspect(slug: str, make: Callable[[], Table], expected: Tensor,
                  expected_angle: Tensor, dtype: torch.dtype) -> Suspect:
    """The mistake whose output and angles are ``make()``, matched with angle-aware tolerance.

    Named only where it differs observably from ``expected`` on this input.
    """

    def matches(got) -> bool:
        if not isinstance(got, Tensor) or got.shape != expected.shape:
            return False
        predicted, predicted_angle = make()
        loose = MISTAKE_SLACK * allowed_error(predicted, predicted_angle, dtype)
        looser = torch.maximum(loose, MISTAKE_SLACK * allowed_error(expected, expected_angle, dtype))
        if bool(within(predicted, expected, looser).all()):
            return False
        return bool(within(as_float64(got), predicted, loose).all())

    return Suspect(slug, matches=matches)


def other_frequencies(expected: Tensor) -> Suspect:
    """wrong-frequency in any form: even columns sin(p w_j), odd columns cos(p w_j), the
    first column sin(p) as it should be (every exponent mistake keeps base^0 = 1, while a
    misplaced parenthesis does not), and yet not the right table.

    Fitted on the first rows: w_j mod 2*pi from row 1, checked on the rows after it.
    """

    def matches(got) -> bool:
        if not isinstance(got, Tensor) or got.dim() != 2 or got.shape != expected.shape:
            return False
        rows = as_float64(got[:FIT_ROWS])
        if rows.size(0) < 3 or not bool(torch.isfinite(rows).all()):
            return False
        if (rows - expected[:FIT_ROWS]).abs().max() < 0.05:  # the first rows are right
            return False
        p = torch.arange(rows.size(0), dtype=torch.float64)[:, None]
        v = rows[1].clamp(-1, 1)
        even = torch.arange(rows.size(1)) % 2 == 0
        candidates = (torch.where(even, torch.asin(v), torch.acos(v)),
                      torch.where(even, math.pi - torch.asin(v), torch.acos(v)))
        fit_error, fits_one = [], []
        for w in candidates:
            fitted = torch.where(even, torch.sin(p * w), torch.cos(p * w))
            fit_error.append((fitted - rows).abs().amax(dim=0))
            fits_one.append((fit_error[-1][0] < 1e-2) & ((w[0] - 1).abs() < 1e-2))
        fits = torch.minimum(*fit_error) < 1e-2
        return bool(fits.all()) and bool(fits_one[0] | fits_one[1])

    return Suspect("wrong-frequency", matches=matches)


def expect_values(got, expected: Tensor, angle: Tensor, check: str, on: str,
                  suspects: list[Suspect]) -> None:
    """Fail unless ``got`` is a tensor like ``expected`` (float64 values, cast to the dtype
    wanted) within :func:`allowed_error` of it; name the first suspect that explains it."""
    dtype = expected.dtype
    # Type, shape, dtype and device only (nothing is selected for the value comparison).
    expect_close(got, expected, check, on, suspects, mask=torch.tensor(False))
    target = as_float64(expected)
    allowed = allowed_error(target, angle, dtype)
    bad = ~within(as_float64(got), target, allowed)
    if not bool(bad.any()):
        return
    diff = (as_float64(got) - target).abs().nan_to_num(nan=math.inf)
    where = tuple(int(i) for i in torch.unravel_index((diff - allowed).argmax(), diff.shape))
    start = max(0, int(bad.flatten().nonzero()[0]) - 1)  # previews show the first difference
    details = [
        _("expected {value}", value=describe_tensor(expected, start)),
        _("got      {value}", value=describe_tensor(got, start)),
        _("worst at index {index}: expected {expected}, got {got}; {off} of {total} values off",
          index=where, expected=f"{target[where].item():.6g}",
          got=f"{as_float64(got)[where].item():.6g}", off=int(bad.sum()), total=bad.numel()),
    ]
    raise verdict(check, on, details, identify(got, expected, suspects, 0.0, 0.0))


# ------------------------------------------------------------- sinusoidal_positional_encoding


def table_suspects(max_len: int, d_model: int, base: float, expected: Tensor,
                   angle: Tensor) -> list[Suspect]:
    """What each table mistake would give; ``expected``/``angle`` are the correct table's."""
    suspects = [angle_suspect(slug, make, expected, angle, TABLE_DTYPE)
                for slug, make in mistaken_tables(max_len, d_model, base)]
    return suspects + [other_frequencies(expected)]


def check_table(impl: Implementation, max_len: int, d_model: int, base: float | None = None) -> None:
    """The learner's table against the formula in float64, mistakes named."""
    kwargs = {} if base is None else {"base": base}
    on = describe_inputs(max_len=max_len, d_model=d_model, **kwargs)
    fn = impl.attr("sinusoidal_positional_encoding")
    got = impl.call(fn, max_len, d_model, what="sinusoidal_positional_encoding", on=on, **kwargs)
    base = 10000.0 if base is None else base
    expected, angle = reference_table(max_len, d_model, base)
    expect_values(got, expected.to(TABLE_DTYPE), angle, _("the table (max_len, d_model)"), on,
                  table_suspects(max_len, d_model, base, expected, angle))


@title(N_("the table against the formula"))
@pytest.mark.core
def test_table_matches_formula(impl):
    """Even d_model, default base: PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(...)."""
    check_table(impl, 12, 8)
    check_table(impl, 50, 16)


@title(N_("odd d_model and another base"))
@pytest.mark.core
def test_table_odd_d_model_and_other_base(impl):
    """Odd d_model (one more sin column than cos) and a base other than 10000."""
    check_table(impl, 9, 7)
    check_table(impl, 10, 6, base=100.0)
    check_table(impl, 20, 11, base=500.0)


def table_case(rng):
    return rng.randint(1, 40), rng.randint(1, 24), rng.choice([None, 10.0, 1000.0, 12345.6])


@title(N_("the table on random sizes"))
@pytest.mark.core
def test_table_random_shapes(impl):
    """Random sizes and bases, drawn from a fixed seed (the same cases every run)."""
    for max_len, d_model, base in drawn_cases(table_case):
        check_table(impl, max_len, d_model, base)


# ----------------------------------------------------------------------- PositionalEncoding


def build(impl: Implementation, d_model: int, *, dropout: float = 0.1, max_len: int = 5000,
          batch_first: bool = False) -> nn.Module:
    """The learner's PositionalEncoding(d_model, dropout, max_len, batch_first)."""
    what = f"PositionalEncoding({d_model}, dropout={dropout}, max_len={max_len}, batch_first={batch_first})"
    cls = impl.attr("PositionalEncoding")
    module = impl.call(cls, d_model, dropout=dropout, max_len=max_len, batch_first=batch_first,
                       what=what, on=_("construction"))
    if not isinstance(module, nn.Module):
        raise verdict(what, _("construction"),
                      [_("expected an nn.Module, got {value}", value=describe_value(module))])
    return module


def module_description(module: nn.Module, d_model: int, max_len: int, batch_first: bool) -> str:
    mode = _(", training mode") if module.training else _(", eval mode")
    moved = any(t.dtype == torch.float64 for t in module.buffers())
    return (f"PositionalEncoding({d_model}, max_len={max_len}, batch_first={batch_first})"
            f"{'.to(torch.float64)' if moved else ''}{mode}")


def forward_exception_slug(seq_len: int, batch: int, batch_first: bool
                           ) -> Callable[[BaseException], str | None]:
    """A broadcasting error on x's *batch* axis between the sequence length and the batch
    size means the table rows were lined up with the batch axis (e.g. (seq, d) added to
    (seq, batch, d)). A mismatch on the sequence axis (a table slice of the wrong length)
    is another mistake and is not named."""
    pattern = re.compile(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\) "
                         r"at non-singleton dimension (\d+)")
    batch_axis = 0 if batch_first else 1

    def slug(exc: BaseException) -> str | None:
        found = pattern.search(str(exc))
        if (found and seq_len != batch and int(found[3]) == batch_axis
                and {int(found[1]), int(found[2])} == {seq_len, batch}):
            return "pe-wrong-axis"
        return None

    return slug


def run_forward(impl: Implementation, module: nn.Module, x: Tensor, on: str,
                batch_first: bool) -> Tensor:
    seq_len, batch = (x.size(1), x.size(0)) if batch_first else (x.size(0), x.size(1))
    slugger = forward_exception_slug(seq_len, batch, batch_first)
    return impl.call(module, x, what="PositionalEncoding.forward", on=on, exception_slugs=slugger)


def dropout_in_eval(expected: Tensor, p: float) -> Suspect:
    """dropout-in-eval: some values zeroed, the rest scaled by 1 / (1 - p)."""

    def matches(got) -> bool:
        if not isinstance(got, Tensor) or got.shape != expected.shape or not 0 < p < 1:
            return False
        got64 = as_float64(got)
        zeros = got64 == 0
        kept = (got64[~zeros] - expected[~zeros] / (1 - p)).abs() <= 1e-3 * (1 + expected[~zeros].abs())
        return bool(zeros.any()) and bool(kept.all())

    return Suspect("dropout-in-eval", matches=matches)


def forward_suspects(x: Tensor, d_model: int, max_len: int, batch_first: bool, out_dtype,
                     dropout: float) -> list[Suspect]:
    """What each mistake would return for x: a wrong table, the wrong axis, dropout in eval."""
    table, angle = reference_table(max_len, d_model)
    x64 = as_float64(x)
    expected = x64 + along_sequence(table, x, batch_first)
    expected_angle = along_sequence(angle, x, batch_first)

    def added(make: Callable[[], Table], along=along_sequence) -> Callable[[], Table]:
        def output() -> Table:
            values, angles = make()
            return x64 + along(values, x, batch_first), along(angles, x, batch_first)
        return output

    suspects = []
    if x.size(0) <= max_len and x.size(1) <= max_len:
        suspects.append(angle_suspect("pe-wrong-axis", added(lambda: (table, angle), along_batch),
                                      expected, expected_angle, out_dtype))
    for slug, make in mistaken_tables(max_len, d_model, 10000.0):
        suspects.append(angle_suspect(slug, added(make), expected, expected_angle, out_dtype))
    return suspects + [dropout_in_eval(expected, dropout)]


def check_forward(impl: Implementation, *, seq_len: int, batch: int, d_model: int,
                  batch_first: bool = False, max_len: int = 50, dtype=torch.float32,
                  seed: int = 0, module: nn.Module | None = None, x: Tensor | None = None,
                  dropout: float = 0.1) -> Tensor:
    """Eval-mode output against x + pe[:seq_len] along the sequence axis, mistakes named.

    x defaults to N(0, 1) values of shape (seq, batch, d), or (batch, seq, d) with
    batch_first; ``dropout`` is the module's p. Returns the learner's output.
    """
    if module is None:
        module = build(impl, d_model, dropout=dropout, max_len=max_len, batch_first=batch_first)
    module.eval()
    if x is None:
        shape = (batch, seq_len, d_model) if batch_first else (seq_len, batch, d_model)
        x = randn(*shape, seed=seed, dtype=dtype)
    on = f"{describe_inputs(x=x)} ({module_description(module, d_model, max_len, batch_first)})"
    got = run_forward(impl, module, x, on, batch_first)
    table, angle = reference_table(max_len, d_model)
    expected = as_float64(x) + along_sequence(table, x, batch_first)
    layout = "(batch, seq, d)" if batch_first else "(seq, batch, d)"
    expect_values(got, expected.to(device=x.device, dtype=x.dtype), along_sequence(angle, x, batch_first),
                  _("the output x + pe[:seq_len] for x {layout}", layout=layout), on,
                  forward_suspects(x, d_model, max_len, batch_first, x.dtype, dropout))
    return got


@title(N_("pe is a registered buffer"))
@pytest.mark.core
def test_pe_is_a_buffer(impl):
    """pe is a registered buffer (max_len, d_model) holding the table: not a parameter, and
    moved by .to()."""
    d_model, max_len = 10, 64
    module = build(impl, d_model, max_len=max_len)
    on = f"PositionalEncoding({d_model}, max_len={max_len})"
    check = _("the buffer pe")
    if not hasattr(module, "pe"):
        raise verdict(check, on, [_("the module has no attribute pe: keep the table as "
                                    "self.register_buffer('pe', table)")])
    pe = module.pe
    parameters = dict(module.named_parameters())
    if "pe" in parameters or isinstance(pe, nn.Parameter):
        raise verdict(check, on, [_("pe is an nn.Parameter: the optimiser would train it and "
                                    "it counts as a weight")], slug="pe-not-buffer")
    if "pe" not in dict(module.named_buffers()):
        raise verdict(check, on, [_("pe is a plain attribute ({value}), not in "
                                    "module.named_buffers()", value=describe_value(pe))],
                      slug="pe-not-buffer")
    expected, angle = reference_table(max_len, d_model)
    expect_values(pe, expected.to(TABLE_DTYPE), angle, _("the buffer pe (max_len, d_model)"), on,
                  table_suspects(max_len, d_model, 10000.0, expected, angle))
    moved = impl.call(module.to, torch.float64, what="module.to(torch.float64)", on=on)
    moved_pe = getattr(moved, "pe", None)
    if not isinstance(moved_pe, Tensor) or moved_pe.dtype != torch.float64:
        raise verdict(_("the buffer pe after module.to(torch.float64)"), on,
                      [_("expected pe in float64, got {value}", value=describe_value(moved_pe))],
                      slug="pe-not-buffer")


@title(N_("forward with the sequence first"))
@pytest.mark.core
def test_forward_seq_first(impl):
    """batch_first=False: x (seq, batch, d), seq != batch; the table goes along dim 0."""
    check_forward(impl, seq_len=7, batch=3, d_model=12, seed=1)
    check_forward(impl, seq_len=2, batch=5, d_model=9, seed=2)


@title(N_("forward with the batch first"))
@pytest.mark.core
def test_forward_batch_first(impl):
    """batch_first=True: x (batch, seq, d), seq != batch; the table goes along dim 1."""
    check_forward(impl, seq_len=7, batch=3, d_model=12, batch_first=True, seed=3)
    check_forward(impl, seq_len=2, batch=5, d_model=9, batch_first=True, seed=4)


def forward_case(rng):
    seq_len = rng.randint(1, 9)
    return dict(seq_len=seq_len, batch=rng.randint(1, 5), d_model=rng.randint(1, 16),
                batch_first=rng.random() < 0.5, max_len=seq_len + rng.randint(0, 8),
                seed=rng.randint(0, 10_000))


@title(N_("forward on random shapes"))
@pytest.mark.core
def test_forward_random_shapes(impl):
    """Random sizes and layouts; max_len may equal the sequence length."""
    for case in drawn_cases(forward_case):
        check_forward(impl, **case)


# ------------------------------------------------------------------------------ follow-ups


@title(N_("a long table"))
@pytest.mark.followup
def test_long_table(impl):
    """Long tables (the module's default max_len=5000): float32 angles reach 5000 radians."""
    check_table(impl, 5000, 32)
    check_table(impl, 3000, 17, base=1000.0)
    module = build(impl, 8)
    expected, angle = reference_table(5000, 8)
    expect_values(getattr(module, "pe", None), expected.to(TABLE_DTYPE), angle,
                  _("the buffer pe (max_len, d_model)"),
                  _("PositionalEncoding(8) (default max_len=5000)"),
                  table_suspects(5000, 8, 10000.0, expected, angle))


@title(N_("dropout only in training mode"))
@pytest.mark.followup
def test_dropout_only_in_training(impl):
    """Eval mode: exactly x + pe, every call. Training mode: about p of the values zeroed,
    the others (x + pe) / (1 - p)."""
    d_model, max_len, p = 16, 64, 0.5
    module = build(impl, d_model, dropout=p, max_len=max_len)
    # x + pe stays far from 0, so every zero in the output is dropout's.
    x = 3.0 + 0.1 * randn(40, 8, d_model, seed=90)
    sums = [check_forward(impl, seq_len=40, batch=8, d_model=d_model, max_len=max_len,
                          module=module, x=x, dropout=p) for _ in range(2)]
    module.train()
    on = f"{describe_inputs(x=x)} ({module_description(module, d_model, max_len, False)}, dropout={p})"
    check = _("dropout(x + pe) with p={p} in training mode", p=p)
    got = run_forward(impl, module, x, on, batch_first=False)
    expect_close(got, sums[0], check, on, mask=torch.tensor(False))  # type, shape, dtype
    got64, full = as_float64(got), as_float64(sums[0])
    zeros = got64 == 0
    share = zeros.double().mean().item()
    if share == 0:
        raise verdict(check, on, [_("no value was zeroed: apply dropout to x + pe while training "
                                    "(nn.Dropout(p), or F.dropout(..., training=self.training))")])
    if not 0.4 <= share <= 0.6:
        raise verdict(check, on, [_("{share} of the values were zeroed, expected about {p}",
                                    share=f"{share:.0%}", p=f"{p:.0%}")])
    kept, kept_full = got64[~zeros], full[~zeros]
    if not bool(((kept - kept_full / (1 - p)).abs() <= 1e-4 * (1 + kept_full.abs())).all()):
        if bool(((kept - kept_full).abs() <= 1e-4 * (1 + kept_full.abs())).all()):
            problem = _("they were not scaled by 1 / (1 - p)")
        else:
            problem = _("dropout must act on the sum x + pe")
        raise verdict(check, on, [
            _("the values kept should be (x + pe) / (1 - p): {problem}", problem=problem),
            _("expected {value}", value=describe_tensor(kept_full / (1 - p))),
            _("got      {value}", value=describe_tensor(kept))])


def expect_value_error(impl: Implementation, module: nn.Module, x: Tensor, seq_len: int,
                       max_len: int, on: str) -> None:
    """forward(x) must raise a ValueError that says the sequence is longer than max_len."""

    def attempt(x: Tensor):
        try:
            return module(x)
        except NotImplementedError:
            raise
        except Exception as exc:  # judged below, with the ValueError the contract asks for
            return exc

    result = impl.call(attempt, x, what="PositionalEncoding.forward", on=on)
    check = _("a sequence of {seq_len} positions with max_len={max_len}", seq_len=seq_len,
              max_len=max_len)
    wanted = _("expected a ValueError saying the sequence is longer than max_len")
    if isinstance(result, ValueError):
        message = str(result)
        words = (str(seq_len), str(max_len), "max_len", "length", "long")
        if not any(word in message.lower() for word in words):
            raise verdict(check, on, [_("raised ValueError({message}): say why, e.g. "
                                        "'sequence length {seq_len} exceeds max_len {max_len}'",
                                        message=repr(message), seq_len=seq_len, max_len=max_len)])
        return
    if isinstance(result, BaseException):
        first = (str(result).strip().splitlines() or [""])[0][:160]
        raise verdict(check, on, [_("raised {error}: {message}", error=type(result).__name__,
                                    message=first), wanted])
    raise verdict(check, on, [_("returned {value}", value=describe_value(result)), wanted])


@title(N_("a sequence longer than max_len"))
@pytest.mark.followup
def test_sequence_longer_than_max_len(impl):
    """One position too many raises ValueError, in both layouts; exactly max_len positions,
    or a batch larger than max_len, are fine."""
    d_model, max_len = 6, 10
    for batch_first in (False, True):
        module = build(impl, d_model, max_len=max_len, batch_first=batch_first).eval()
        desc = module_description(module, d_model, max_len, batch_first)
        shape = (2, max_len + 1, d_model) if batch_first else (max_len + 1, 2, d_model)
        x = randn(*shape, seed=95)
        expect_value_error(impl, module, x, max_len + 1, max_len, f"{describe_inputs(x=x)} ({desc})")
        check_forward(impl, seq_len=max_len, batch=2, d_model=d_model, batch_first=batch_first,
                      max_len=max_len, seed=96, module=module)
        check_forward(impl, seq_len=4, batch=max_len + 2, d_model=d_model,
                      batch_first=batch_first, max_len=max_len, seed=97, module=module)


@title(N_("the output's dtype follows the input"))
@pytest.mark.followup
def test_dtype_follows_input(impl):
    """float64 x gives a float64 output; after module.to(float64) a float32 x still gives
    float32: the output is in x's dtype."""
    for batch_first in (False, True):
        check_forward(impl, seq_len=5, batch=3, d_model=8, batch_first=batch_first,
                      dtype=torch.float64, seed=100)
        module = build(impl, 8, max_len=50, batch_first=batch_first)
        module = impl.call(module.to, torch.float64, what="module.to(torch.float64)",
                           on="PositionalEncoding(8, max_len=50)")
        check_forward(impl, seq_len=5, batch=3, d_model=8, batch_first=batch_first,
                      seed=101, module=module)


@title(N_("gradients flow to the input"))
@pytest.mark.followup
def test_gradients_flow_to_input(impl):
    """The gradient of x is the incoming gradient itself (eval mode: out = x + pe)."""
    d_model, max_len = 8, 20
    (x,) = leaf_copies(randn(6, 3, d_model, seed=110))
    got = check_forward(impl, seq_len=6, batch=3, d_model=d_model, max_len=max_len, x=x)
    on = (f"{describe_inputs(x=x)} (PositionalEncoding({d_model}, max_len={max_len})"
          + _(", eval mode") + ")")
    expect_tracks_grad({_("the output"): got}, _("backward through the output"), on)
    grads = grads_of(weighted_sum([got], seed=111), {"x": x}, on=on)
    (rx,) = leaf_copies(x)
    reference = rx + reference_table(max_len, d_model)[0][:6, None].float()
    expected = grads_of(weighted_sum([reference], seed=111), {"x": rx})
    expect_grads_close(grads, expected, _("backward through the output"), on)


@title(N_("half precision on a CUDA GPU"))
@pytest.mark.followup
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_half_precision_on_cuda(impl):
    """module.to('cuda') moves pe; float16 and bfloat16 x on the GPU keep dtype and device."""
    d_model, max_len = 16, 64
    for batch_first in (False, True):
        module = build(impl, d_model, max_len=max_len, batch_first=batch_first)
        on = f"PositionalEncoding({d_model}, max_len={max_len}, batch_first={batch_first})"
        module = impl.call(module.to, "cuda", what="module.to('cuda')", on=on).eval()
        pe = getattr(module, "pe", None)
        if not isinstance(pe, Tensor) or pe.device.type != "cuda":
            raise verdict(_("the buffer pe after module.to('cuda')"), on,
                          [_("expected pe on cuda, got {value}", value=describe_value(pe))],
                          slug="pe-not-buffer")
        for dtype in (torch.float16, torch.bfloat16):
            shape = (3, 9, d_model) if batch_first else (9, 3, d_model)
            x = randn(*shape, seed=120, dtype=dtype, device="cuda")
            check_forward(impl, seq_len=9, batch=3, d_model=d_model, batch_first=batch_first,
                          max_len=max_len, module=module, x=x)
