"""Grader for kata 27: AdamW step for step against torch.optim.AdamW(foreach=False),
clip_grad_norm_ against torch.nn.utils.clip_grad_norm_, lr_at against CS336 a1's schedule.

The AdamW checks train the grader's own small model (graders/adamw/training.py): the
learner's optimizer, PyTorch's and each of the twin's mistakes (graders/adamw/twin.py) go
through the same gradients, learning rates and steps, so a wrong run is named by the mistake
whose whole run it reproduces. The clip checks hand the same gradients to the learner's
function, PyTorch's and the twin's.
"""

from __future__ import annotations

import functools
import math
import numbers
from typing import Any, Callable

import pytest
import torch
from torch import Tensor, nn

from graders.adamw import twin
from graders.adamw.training import (HYPER, NO_DECAY, SCHEDULE, Hooks, Run, Training, locate,
                                    skip_optimizer_dynamo_import, torch_hooks, train)
from graders.core.compare import MISTAKE_SLACK, expect_close, tolerance
from graders.core.i18n import N_, _
from graders.core.implementation import Implementation
from graders.core.mistakes import Suspect, identify
from graders.core.report import describe_value, title, verdict

__all__ = [
    "test_adamw_float64",
    "test_adamw_state",
    "test_adamw_float32",
    "test_parameter_without_gradient",
    "test_resume_from_state_dict",
    "test_adamw_defaults",
    "test_clip_grad_norm",
    "test_clip_grad_norm_of_model_parameters",
    "test_lr_at",
    "test_clip_inf_and_1_norms",
    "test_clip_error_if_nonfinite",
    "test_clip_single_tensor_and_no_gradients",
]

STATE_KEYS = ("step", "exp_avg", "exp_avg_sq")
# lr_at is plain float arithmetic: any order of operations agrees to far better than this.
LR_RTOL, LR_ATOL = 1e-9, 1e-15

skip_optimizer_dynamo_import()


# ------------------------------------------------------------------------------ AdamW runs

def describe(training: Training) -> str:
    """The run, in the verdict's words."""
    if training.defaults:
        return _("AdamW(model.parameters()) with the defaults, {steps} steps, {dtype}, on a small "
                 "MLP (Linear 6 -> 8, LayerNorm, Tanh, Linear 8 -> 3, MSE loss)",
                 steps=training.steps, dtype=str(training.dtype).replace("torch.", ""))
    text = _("a small MLP (Linear 6 -> 8, LayerNorm, Tanh, Linear 8 -> 3, MSE loss), {steps} "
             "steps, {dtype}; groups: the weight matrices with weight_decay={wd}, the biases and "
             "the norm's weight with weight_decay=0 and betas={betas0}; lr = lr_at(step, {max_lr}, "
             "{min_lr}, {warmup}, {cosine}) set before every step (half of it in the second "
             "group), betas={betas}, eps={eps}", steps=training.steps,
             dtype=str(training.dtype).replace("torch.", ""), wd=HYPER["weight_decay"],
             betas0=NO_DECAY["betas"], max_lr=SCHEDULE["max_lr"], min_lr=SCHEDULE["min_lr"],
             warmup=SCHEDULE["warmup_steps"], cosine=SCHEDULE["cosine_steps"],
             betas=HYPER["betas"], eps=HYPER["eps"])
    if training.extra:
        text += _("; with a head that gets a gradient every third step and a parameter that "
                  "never gets one")
    if training.resume_at is not None:
        text += _("; after step {n}, state_dict() deep-copied and loaded into a fresh AdamW on a "
                  "copy of the model", n=training.resume_at)
    return text


def step_exception(exc: BaseException) -> str | None:
    """1 - beta1 ** 0 in Python floats: the step count used before it was incremented."""
    return "bias-correction-off-by-one" if isinstance(exc, ZeroDivisionError) else None


class NotAnOptimizer(Exception):
    """AdamW(...) built something that is not a torch.optim.Optimizer (args[0]: what)."""


def learner_run(impl: Implementation, training: Training) -> Run:
    """The learner's AdamW through ``training``, as one guarded call: a call per step would
    cost the guard's set-up 50 times a run, more than the steps themselves."""
    cls = impl.attr("AdamW")
    on = describe(training)

    def build(params: Any, kwargs: dict) -> Any:
        opt = cls(params, **kwargs)
        if not isinstance(opt, torch.optim.Optimizer):
            raise NotAnOptimizer(describe_value(opt))
        return opt

    def run() -> Run | NotAnOptimizer:
        try:
            return train(training, Hooks(build=build, step=lambda opt, index: opt.step()))
        except NotAnOptimizer as exc:
            return exc

    what = (_("AdamW, with state_dict() and load_state_dict()")
            if training.resume_at is not None else "AdamW")
    result = impl.call(run, what=what, on=on, exception_slugs=step_exception)
    if isinstance(result, NotAnOptimizer):
        raise verdict("AdamW(...)", on, [
            _("expected a torch.optim.Optimizer (AdamW subclasses it), got {value}",
              value=result.args[0])])
    return result


def twin_hooks(mistake: str | None) -> Hooks:
    return Hooks(build=lambda params, kw: twin.TwinAdamW(params, mistake=mistake, **kw),
                 step=lambda opt, index: opt.step())


# The switches that change nothing without a parameter that skips steps or a resumed run.
GRADLESS = ("gradless-zero-grad", "gradless-decayed")
STATE = ("shared-counter", "own-attributes")


def twin_suspects(training: Training) -> list[Suspect]:
    """Each AdamW mistake's whole run through the same training (only those this training
    can show: a run costs as much as the learner's)."""
    idle = set()
    if not training.extra:
        idle.update(GRADLESS)
    if not training.extra and training.resume_at is None:
        idle.update(STATE)
    if training.resume_at is None:
        idle.add("own-attributes")
    return [Suspect(slug, predict=lambda m=m: twin_trajectory(training, m))
            for m, slug in twin.ADAMW_MISTAKES.items() if m not in idle]


@functools.cache
def twin_trajectory(training: Training, mistake: str) -> Tensor:
    """The twin's whole run with ``mistake``, (steps, P) float64. It depends on nothing but
    the two (the net, batches and learning rates are seeded), so a process that grades again
    (a notebook's kernel, the self-tests) trains each one once; read-only. Unbounded but
    small: the checks' five trainings times the twin's mistakes, 50 KB a run."""
    return train(training, twin_hooks(mistake)).trajectory


def fmt(value: float) -> str:
    return f"{value:.6g}"


def expect_trajectory(got: Run, expected: Run, check: str, on: str,
                      suspects: list[Suspect], dtype: torch.dtype) -> None:
    """Fail at the first step where a parameter is off, naming the mistake whose whole run
    reproduces the learner's."""
    rtol, atol = tolerance(dtype)
    a, b = got.trajectory, expected.trajectory
    bad = ~torch.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
    if not bool(bad.any()):
        return
    step = int(bad.any(dim=1).nonzero()[0])
    flat = int(bad[step].nonzero()[0])
    slug = identify(a, b, suspects, rtol * MISTAKE_SLACK, atol * MISTAKE_SLACK)
    raise verdict(check, on, [
        _("after step {step} of {steps}, {where}: expected {expected}, got {got}", step=step + 1,
          steps=a.shape[0], where=locate(expected.names, flat), expected=fmt(float(b[step, flat])),
          got=fmt(float(a[step, flat]))),
        _("{off} of {total} parameter values off after that step (rtol {rtol:.0e}, atol "
          "{atol:.0e})", off=int(bad[step].sum()), total=a.shape[1], rtol=rtol, atol=atol),
    ], slug)


# The last runs made: (implementation, training, its run, PyTorch's), so that the state check
# reads the float64 runs again without training twice (a run is deterministic). It holds the
# implementation itself, compared by identity: a new one (a file graded again) never matches.
LAST_RUNS: list[tuple[Implementation, Training, Run, Run]] = []


def runs(impl: Implementation, training: Training,
         reference: Training | None = None) -> tuple[Run, Run]:
    """The learner's run and PyTorch's (``reference``: PyTorch's run when it differs, e.g.
    uninterrupted)."""
    for mine, same, got, expected in LAST_RUNS:
        if mine is impl and same == training and reference is None:
            return got, expected
    got = learner_run(impl, training)
    expected = train(reference or training, torch_hooks())
    LAST_RUNS[:] = [(impl, training, got, expected)]
    return got, expected


def graded_run(impl: Implementation, training: Training, check: str,
               reference: Training | None = None) -> tuple[Run, Run]:
    """The learner's run and PyTorch's, compared step for step."""
    got, expected = runs(impl, training, reference)
    expect_trajectory(got, expected, check, describe(training), twin_suspects(training),
                      training.dtype)
    return got, expected


STEP_CHECK = N_("every parameter after every step, against torch.optim.AdamW(foreach=False)")


@pytest.mark.core
@title(N_("AdamW step for step against torch.optim.AdamW, float64, two param groups"))
def test_adamw_float64(impl: Implementation) -> None:
    graded_run(impl, Training(torch.float64), _(STEP_CHECK))




def as_number(value: Any) -> float | None:
    if isinstance(value, Tensor) and value.numel() == 1:
        return float(value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    return None


@pytest.mark.core
@title(N_("the state per parameter: step, exp_avg and exp_avg_sq, PyTorch's names and values"))
def test_adamw_state(impl: Implementation) -> None:
    training = Training(torch.float64)
    on = describe(training)
    check = _("self.state[p] after the run, against torch.optim.AdamW's")
    got, expected = runs(impl, training)
    rtol, atol = tolerance(torch.float64)
    if not torch.allclose(got.trajectory, expected.trajectory, rtol=rtol, atol=atol):
        raise verdict(check, on, [_("not checked: the parameters are already off (see the "
                                    "step-for-step checks)")])
    params = zip(got.names, got.net.parameters(), expected.net.parameters())
    for (name, _shape), mine, theirs in params:
        state = got.optimizer.state.get(mine, {})
        want = expected.optimizer.state[theirs]
        missing = [key for key in STATE_KEYS if key not in state]
        if missing:
            raise verdict(check, on, [
                _("self.state for {name} has the keys {keys}; expected {expected} (PyTorch's "
                  "names, which state_dict() saves)", name=name, keys=sorted(map(str, state)),
                  expected=list(STATE_KEYS))])
        count = as_number(state["step"])
        if count != float(want["step"]):
            raise verdict(check, on, [
                _("self.state[{name}]['step'] is {got}; expected {expected} (one per step with a "
                  "gradient)", name=name, got=describe_value(state["step"]),
                  expected=int(want["step"]))])
        for key in ("exp_avg", "exp_avg_sq"):
            value = state[key]
            if isinstance(value, Tensor) and value.is_floating_point():
                value = value.detach().to(torch.float64)  # a wider dtype is fine
            expect_close(value, want[key].detach(), _("self.state[{name}][{key!r}]", name=name,
                                                       key=key), on)


@pytest.mark.core
@title(N_("AdamW step for step against torch.optim.AdamW, float32, two param groups"))
def test_adamw_float32(impl: Implementation) -> None:
    graded_run(impl, Training(torch.float32), _(STEP_CHECK))


@pytest.mark.core
@title(N_("a parameter without a gradient is untouched: no decay, no step counted"))
def test_parameter_without_gradient(impl: Implementation) -> None:
    training = Training(torch.float64, steps=30, extra=True)
    got, _expected = graded_run(impl, training, _(STEP_CHECK))
    unused = got.net.unused
    on = describe(training)
    if not torch.equal(unused.detach(), training.make_net().unused.detach()):
        raise verdict(_("the parameter that never gets a gradient"), on, [
            _("it changed; a parameter whose .grad is None must stay exactly as it is")],
                      "gradless-param-updated")
    count = as_number(got.optimizer.state.get(unused, {}).get("step", 0))
    if count:
        raise verdict(_("the parameter that never gets a gradient"), on, [
            _("its state counts {count} steps; a parameter whose .grad is None takes no step",
              count=fmt(count))], "gradless-param-updated")


@pytest.mark.core
@title(N_("a run resumed through state_dict() and load_state_dict() continues identically"))
def test_resume_from_state_dict(impl: Implementation) -> None:
    training = Training(torch.float32, steps=50, resume_at=25)
    graded_run(impl, training, _("every parameter after every step, against 50 uninterrupted "
                                 "steps of torch.optim.AdamW"),
               reference=Training(torch.float32, steps=50))


@pytest.mark.core
@title(N_("AdamW(model.parameters()) with the defaults lr=1e-3, betas=(0.9, 0.999), eps=1e-8, "
          "weight_decay=1e-2"))
def test_adamw_defaults(impl: Implementation) -> None:
    graded_run(impl, Training(torch.float64, steps=10, defaults=True), _(STEP_CHECK))


# ------------------------------------------------------------------------------ clipping

SHAPES = ((4, 3), (5,), (2, 3, 2), (3,))
SCALES = (1.5, 0.5, 3.0, 1.0)  # unequal norms, so that clipping each alone differs


def grad_params(dtype: torch.dtype, seed: int) -> list[Tensor]:
    """Leaf tensors with gradients (one, third, without): totals of order 10."""
    g = torch.Generator().manual_seed(seed)
    params = []
    for i, (shape, scale) in enumerate(zip(SHAPES, SCALES)):
        p = torch.zeros(shape, dtype=dtype, requires_grad=True)
        p.grad = (torch.randn(shape, generator=g, dtype=torch.float64) * scale).to(dtype)
        params.append(p)
        if i == 1:
            params.append(torch.zeros(2, 2, dtype=dtype, requires_grad=True))  # grad None
    return params


def copies(params: list[Tensor]) -> list[Tensor]:
    out = []
    for p in params:
        q = p.detach().clone().requires_grad_(p.requires_grad)
        q.grad = None if p.grad is None else p.grad.clone()
        out.append(q)
    return out


def flat_grads(params: list[Tensor]) -> Tensor:
    return torch.cat([p.grad.detach().flatten() for p in params if p.grad is not None])


def describe_grads(params: list[Tensor], max_norm: float, norm_type: float, extra: str = "") -> str:
    shapes = ", ".join(str(tuple(p.shape)) + ("" if p.grad is not None else _(" without .grad"))
                       for p in params)
    return _("{dtype} gradients of {shapes}, max_norm={max_norm}, norm_type={norm_type}",
             dtype=str(params[0].dtype).replace("torch.", ""), shapes=shapes, max_norm=max_norm,
             norm_type=norm_type) + extra


def clip_suspects(params: list[Tensor], max_norm: float, norm_type: float,
                  result: Callable[[list[Tensor], Tensor], Any]) -> list[Suspect]:
    def predict(mistake: str) -> Any:
        mine = copies(params)
        total = twin.clip_grad_norm_(mine, max_norm, norm_type, mistake=mistake)
        return result(mine, total)
    return [Suspect(slug, predict=lambda m=m: predict(m)) for m, slug in twin.CLIP_MISTAKES.items()]


def check_clip(impl: Implementation, params: list[Tensor], max_norm: float,
               norm_type: float = 2.0, argument: Callable[[list[Tensor]], Any] = list,
               on: str | None = None, generator: bool = False, **options: Any) -> None:
    """The learner's clip_grad_norm_ on copies of ``params`` (passed as ``argument`` makes of
    them) against torch.nn.utils.clip_grad_norm_ on other copies: the total, then the grads."""
    on = on or describe_grads(params, max_norm, norm_type)
    mine, theirs = copies(params), copies(params)
    got = impl.call(impl.attr("clip_grad_norm_"), argument(mine), max_norm, norm_type=norm_type,
                    what="clip_grad_norm_", on=on, **options)
    expected = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type=norm_type, **options)
    if isinstance(got, (int, float)) and not isinstance(got, bool):
        raise verdict(_("the total norm clip_grad_norm_ returns"), on, [
            _("expected a 0-d tensor, got a Python {kind}: {value} (return the tensor, not "
              ".item())", kind=type(got).__name__, value=fmt(got))])
    expect_close(got, expected, _("the total norm clip_grad_norm_ returns"), on,
                 clip_suspects(params, max_norm, norm_type, lambda ps, total: total))
    after, want = flat_grads(mine), flat_grads(theirs)
    if generator and torch.equal(after, flat_grads(params)):
        raise verdict(_("the gradients after clip_grad_norm_"), on, [
            _("the total is right but no gradient was scaled: a generator such as "
              "model.parameters() can be read only once (make a list of it first)")])
    expect_close(after, want, _("the gradients after clip_grad_norm_"), on,
                 clip_suspects(params, max_norm, norm_type, lambda ps, total: flat_grads(ps)))


@pytest.mark.core
@title(N_("clip_grad_norm_ with the 2-norm, above and below max_norm, float64 and float32"))
def test_clip_grad_norm(impl: Implementation) -> None:
    for dtype, seed in ((torch.float64, 1), (torch.float32, 2)):
        params = grad_params(dtype, seed)
        check_clip(impl, params, 5.0)    # the total is about 10: clipped
        check_clip(impl, params, 50.0)   # below max_norm: unchanged


class Tiny(nn.Module):
    """(batch, 4) -> (batch, 2): two Linear layers, the first one's bias frozen."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 3), nn.Linear(3, 2)
        self.fc1.bias.requires_grad_(False)


@pytest.mark.core
@title(N_("clip_grad_norm_(model.parameters(), 1.0): a generator, a frozen bias"))
def test_clip_grad_norm_of_model_parameters(impl: Implementation) -> None:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(3)
        net = Tiny()
    g = torch.Generator().manual_seed(4)
    for p in net.parameters():
        if p.requires_grad:
            p.grad = torch.randn(p.shape, generator=g) * 2.0
    params = list(net.parameters())
    on = _("clip_grad_norm_(model.parameters(), 1.0) on two Linear layers (4 -> 3 -> 2), "
           "float32, fc1.bias frozen (no .grad)")
    check_clip(impl, params, 1.0, argument=lambda ps: (p for p in ps), on=on,
               generator=True)


# ------------------------------------------------------------------------------ the schedule

LR_CASES = (
    (dict(max_lr=1e-3, min_lr=1e-4, warmup_steps=10, cosine_steps=100), 121),
    (dict(max_lr=3e-4, min_lr=3e-5, warmup_steps=0, cosine_steps=40), 51),
    (dict(max_lr=1.0, min_lr=0.1, warmup_steps=7, cosine_steps=21), 26),
)


@pytest.mark.core
@title(N_("lr_at: warmup, cosine and the floor, from step 0 to past cosine_steps"))
def test_lr_at(impl: Implementation) -> None:
    fn = impl.attr("lr_at")
    for args, steps in LR_CASES:
        on = _("lr_at(step, max_lr={max_lr}, min_lr={min_lr}, warmup_steps={warmup_steps}, "
               "cosine_steps={cosine_steps}) for step = 0 ... {last}", last=steps - 1, **args)
        every = impl.call(lambda: [fn(step, **args) for step in range(steps)], what="lr_at",
                          on=on)  # one guarded call for the whole schedule
        values = []
        for step, value in enumerate(every):
            if as_number(value) is None or isinstance(value, Tensor):
                raise verdict("lr_at", on, [_("at step {step}: expected a float, got {value}",
                                              step=step, value=describe_value(value))])
            values.append(float(value))
        got = torch.tensor(values, dtype=torch.float64)
        expected = torch.tensor([twin.lr_at(s, **args) for s in range(steps)], dtype=torch.float64)
        bad = ~torch.isclose(got, expected, rtol=LR_RTOL, atol=LR_ATOL)
        if bool(bad.any()):
            step = int(bad.nonzero()[0])
            suspects = [Suspect(slug, predict=lambda m=m: torch.tensor(
                [twin.lr_at(s, **args, mistake=m) for s in range(steps)], dtype=torch.float64))
                for m, slug in twin.LR_MISTAKES.items()]
            slug = identify(got, expected, suspects, LR_RTOL * MISTAKE_SLACK, LR_ATOL)
            raise verdict(_("the learning rate at each step"), on, [
                _("at step {step}: expected {expected}, got {got}", step=step,
                  expected=fmt(float(expected[step])), got=fmt(float(got[step]))),
                _("{off} of {total} steps off", off=int(bad.sum()), total=steps)], slug)


# ------------------------------------------------------------------------------ follow-ups

@pytest.mark.followup
@title(N_("clip_grad_norm_ with norm_type=inf (the largest magnitude) and norm_type=1"))
def test_clip_inf_and_1_norms(impl: Implementation) -> None:
    for dtype, seed in ((torch.float64, 5), (torch.float32, 6)):
        params = grad_params(dtype, seed)
        check_clip(impl, params, 2.0, norm_type=math.inf)
        check_clip(impl, params, 10.0, norm_type=1.0)


@pytest.mark.followup
@title(N_("error_if_nonfinite=True: RuntimeError on an inf or NaN total, before any change"))
def test_clip_error_if_nonfinite(impl: Implementation) -> None:
    fn = impl.attr("clip_grad_norm_")
    for bad_value in (math.inf, math.nan):
        params = grad_params(torch.float32, 7)
        params[3].grad[1, 1, 0] = bad_value
        mine = copies(params)
        on = describe_grads(params, 5.0, 2.0, _(", error_if_nonfinite=True, one gradient "
                                                "entry {value}", value=bad_value))

        def attempt() -> str:
            try:
                fn(mine, 5.0, norm_type=2.0, error_if_nonfinite=True)
            except NotImplementedError:
                raise
            except RuntimeError:
                return "raised"
            return "returned"

        outcome = impl.call(attempt, what="clip_grad_norm_", on=on)
        check = _("clip_grad_norm_ with a non-finite total")
        if outcome != "raised":
            raise verdict(check, on, [_("expected a RuntimeError; it returned")])
        if not torch.equal(torch.nan_to_num(flat_grads(mine)), torch.nan_to_num(flat_grads(params))):
            raise verdict(check, on, [_("it raised RuntimeError, but after changing gradients; "
                                        "compute the total and raise before scaling any")])
    check_clip(impl, grad_params(torch.float32, 8), 5.0, error_if_nonfinite=True,
               on=describe_grads(grad_params(torch.float32, 8), 5.0, 2.0,
                                 _(", error_if_nonfinite=True, every entry finite")))


@pytest.mark.followup
@title(N_("clip_grad_norm_ on a single tensor, and with no gradient at all: tensor(0.)"))
def test_clip_single_tensor_and_no_gradients(impl: Implementation) -> None:
    params = grad_params(torch.float64, 9)[:1]
    check_clip(impl, params, 1.0, argument=lambda ps: ps[0],
               on=describe_grads(params, 1.0, 2.0, _(", passed as one tensor, not a list")))
    empty = [torch.zeros(3, requires_grad=True), torch.zeros(2, 2, requires_grad=True)]
    on = _("two parameters, neither with a .grad, max_norm=1.0")
    got = impl.call(impl.attr("clip_grad_norm_"), empty, 1.0, what="clip_grad_norm_", on=on)
    if not (isinstance(got, Tensor) and got.dim() == 0 and not got.is_complex()
            and float(got) == 0.0):
        raise verdict(_("the total norm clip_grad_norm_ returns"), on, [
            _("expected tensor(0.), got {value}", value=describe_value(got))])
