"""Grader for kata 29: sequence log-probabilities and TRL's DPO loss (sigmoid, conservative, IPO).

Every check computes the expected result with :mod:`graders.dpo.twin` and, on a mismatch, what
each catalogued mistake would produce on the same inputs, naming the one that matches. Values and
gradients are compared at compare.py's per-dtype tolerances.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest
import torch
from torch import Tensor

from graders.core.compare import (expect_close, expect_grads_close, expect_tracks_grad,
                                  expect_tuple)
from graders.core.i18n import N_, _
from graders.core.implementation import Implementation
from graders.core.inputs import generator, grads_of, randn
from graders.core.mistakes import Suspect
from graders.core.report import GradingFailure, describe_inputs, describe_value, title, verdict
from graders.dpo import twin

__all__ = [
    "test_sequence_logprobs_float64",
    "test_sequence_logprobs_float32",
    "test_dpo_loss_float64",
    "test_dpo_loss_float32",
    "test_rewards",
    "test_reference_gets_no_gradient",
    "test_large_margins",
    "test_unknown_loss_type",
    "test_conservative_dpo",
    "test_ipo",
    "test_half_precision_logits",
    "test_at_initialisation",
]

# Each row: (prompt, response, padding), right-padded as TRL's concatenated batches are; a row's
# lengths sum to seq. Prompts and padding differ in length from row to row (one row has none),
# so that counting either changes the value, and counting one differs from counting the other.
LAYOUTS = {
    10: ((3, 4, 3), (2, 6, 2), (4, 6, 0), (2, 3, 5)),
    6: ((2, 3, 1), (3, 3, 0)),
}


def layout_masks(rows: tuple[tuple[int, int, int], ...]) -> tuple[Tensor, Tensor]:
    """(loss_mask, attention_mask), each (batch, seq) bool: the response; prompt and response."""
    loss, attention = [], []
    for prompt, response, padding in rows:
        loss.append([False] * prompt + [True] * response + [False] * padding)
        attention.append([True] * (prompt + response) + [False] * padding)
    return torch.tensor(loss), torch.tensor(attention)


def logprob_inputs(seq: int, vocab: int, seed: int, dtype: torch.dtype
                   ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(logits, input_ids, loss_mask, attention_mask) for the layout of length seq. Padding
    positions hold ordinary token ids: only the mask says they do not count."""
    loss_mask, attention_mask = layout_masks(LAYOUTS[seq])
    b = loss_mask.shape[0]
    logits = (randn(b, seq, vocab, seed=seed, dtype=torch.float64) * 2.0).to(dtype)
    ids = torch.randint(0, vocab, (b, seq), generator=generator(seed + 1))
    return logits, ids, loss_mask, attention_mask


def logprobs_on(logits: Tensor, ids: Tensor, loss_mask: Tensor) -> str:
    rows = [f"{int(r.sum())}" for r in loss_mask]
    return (describe_inputs(logits=logits, input_ids=ids, loss_mask=loss_mask)
            + _(", response tokens per row {counts}, prompts and padding of several lengths",
                counts="/".join(rows)))


def logprob_grad(logits: Tensor, ids: Tensor, loss_mask: Tensor, attention: Tensor,
                 weight: Tensor, mistake: str | None = None) -> Tensor:
    leaf = logits.detach().clone().requires_grad_(True)
    out = twin.sequence_logprobs(leaf, ids, loss_mask, attention, mistake)
    return torch.autograd.grad((out * weight.to(out.dtype)).sum(), leaf)[0]


def check_logprobs(impl: Implementation, logits: Tensor, ids: Tensor, loss_mask: Tensor,
                   attention: Tensor, grads: bool = True, advice: str | None = None) -> None:
    """The value (and, with grads, the gradient w.r.t. logits) against the twin; ``advice``
    ends a value verdict that names no mistake."""
    on = logprobs_on(logits, ids, loss_mask)
    check = _("sequence_logprobs(logits, input_ids, loss_mask)")
    leaf = logits.detach().clone().requires_grad_(grads)
    got = impl.call(impl.attr("sequence_logprobs"), leaf, ids.clone(), loss_mask.clone(),
                    what="sequence_logprobs", on=on)
    expected = twin.sequence_logprobs(logits, ids, loss_mask)
    try:
        expect_close(got, expected, check, on, [
            Suspect(slug, lambda m=m: twin.sequence_logprobs(logits, ids, loss_mask, attention, m))
            for m, slug in twin.LOGPROB_MISTAKES.items()])
    except GradingFailure as failure:
        if advice is None or failure.slug is not None:
            raise
        raise GradingFailure(f"{failure}\n  {advice}") from None
    if not grads:
        return
    expect_tracks_grad({"sequence_logprobs(...)": got}, check, on)
    weight = randn(*got.shape, seed=7, dtype=got.dtype)
    got_grads = grads_of((got * weight).sum(), {"logits": leaf}, on)
    want = logprob_grad(logits, ids, loss_mask, attention, weight)
    expect_grads_close(got_grads, {"logits": want}, check, on, [
        Suspect(slug, lambda m=m: logprob_grad(logits, ids, loss_mask, attention, weight, m))
        for m, slug in twin.LOGPROB_MISTAKES.items()])


def logprobs_in(impl: Implementation, dtype: torch.dtype) -> None:
    for seq, vocab, seed in ((10, 11, 1), (6, 5, 2)):
        check_logprobs(impl, *logprob_inputs(seq, vocab, seed, dtype))


# ------------------------------------------------------------------------- dpo_loss inputs

def logps_inputs(b: int, seed: int, dtype: torch.dtype) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(πc, πr, refc, refr), each (b,): reference sums in [-60, -10], the policy a few nats off,
    so both log-ratios are far from 0."""
    g = generator(seed)
    ref = -(10.0 + 50.0 * torch.rand(2, b, generator=g, dtype=torch.float64))
    policy = ref + 3.0 * torch.randn(2, b, generator=g, dtype=torch.float64)
    return tuple(t.to(dtype) for t in (policy[0], policy[1], ref[0], ref[1]))


def dpo_on(logps: tuple[Tensor, ...], beta: float, eps: float, loss_type: str) -> str:
    pc = logps[0]
    return (describe_inputs(policy_chosen_logps=pc) + _(" (and the three others alike)")
            + f", beta={beta}, label_smoothing={eps}, loss_type={loss_type!r}")


def call_dpo(impl: Implementation, logps: tuple[Tensor, ...], beta: float, eps: float,
             loss_type: str, on: str) -> tuple:
    got = impl.call(impl.attr("dpo_loss"), *logps, beta=beta, label_smoothing=eps,
                    loss_type=loss_type, what="dpo_loss", on=on)
    return expect_tuple(got, 3, _("dpo_loss(...)"), on,
                        "losses, chosen_rewards, rejected_rewards")


def loss_suspects(predict: Callable[[str], Any]) -> list[Suspect]:
    return [Suspect(slug, lambda m=m: predict(m)) for m, slug in twin.LOSS_MISTAKES.items()]


def policy_grads(logps: tuple[Tensor, ...], beta: float, eps: float, loss_type: str,
                 weight: Tensor, mistake: str | None = None) -> tuple[Tensor, Tensor]:
    pc, pr = (t.detach().clone().requires_grad_(True) for t in logps[:2])
    losses = twin.dpo_loss(pc, pr, *logps[2:], beta, eps, loss_type, mistake)[0]
    return torch.autograd.grad((losses * weight).sum(), (pc, pr))


POLICY = ("policy_chosen_logps", "policy_rejected_logps")


def expect_policy_grads(got: dict[str, Tensor | None], logps: tuple[Tensor, ...], beta: float,
                        eps: float, loss_type: str, weight: Tensor, on: str,
                        extra: tuple[Suspect, ...] = ()) -> None:
    """Each policy gradient against the twin's, with the suspects of that same gradient."""
    want = policy_grads(logps, beta, eps, loss_type, weight)
    for i, name in enumerate(POLICY):
        expect_grads_close({name: got[name]}, {name: want[i]}, _("the gradient of the losses"),
                           on, [Suspect(slug, lambda m=m, i=i: policy_grads(
                               logps, beta, eps, loss_type, weight, m)[i])
                                for m, slug in twin.LOSS_MISTAKES.items()] + list(extra))


def check_dpo(impl: Implementation, logps: tuple[Tensor, ...], beta: float, eps: float = 0.0,
              loss_type: str = "sigmoid", weight: Tensor | None = None) -> None:
    """losses (values and their gradient w.r.t. the policy's log-probs) and both rewards."""
    on = dpo_on(logps, beta, eps, loss_type)
    pc, pr = (t.detach().clone().requires_grad_(True) for t in logps[:2])
    losses, chosen, rejected = call_dpo(impl, (pc, pr, *(t.clone() for t in logps[2:])), beta,
                                        eps, loss_type, on)
    expected = twin.dpo_loss(*logps, beta, eps, loss_type)
    expect_close(losses, expected[0], _("the losses dpo_loss returns"), on, loss_suspects(
        lambda m: twin.dpo_loss(*logps, beta, eps, loss_type, m)[0]))
    for index, (name, got) in enumerate(((_("chosen_rewards"), chosen),
                                         (_("rejected_rewards"), rejected)), start=1):
        expect_close(got, expected[index], _("the {name} dpo_loss returns", name=name), on,
                     loss_suspects(lambda m, i=index: twin.dpo_loss(*logps, beta, eps,
                                                                    loss_type, m)[i]))
    expect_tracks_grad({"losses": losses}, _("the gradient of the losses"), on)
    weight = torch.ones_like(losses) if weight is None else weight
    got = grads_of((losses * weight).sum(), dict(zip(POLICY, (pc, pr))), on)
    expect_policy_grads(got, logps, beta, eps, loss_type, weight, on)


def dpo_in(impl: Implementation, dtype: torch.dtype) -> None:
    for b, seed, beta in ((5, 11, 0.1), (4, 12, 1.0), (3, 13, 0.5)):
        weight = randn(b, seed=seed + 50, dtype=dtype)
        check_dpo(impl, logps_inputs(b, seed, dtype), beta, weight=weight)


# ------------------------------------------------------------------------------ core

@pytest.mark.core
@title(N_("sequence_logprobs, float64: the shifted sum over response tokens, and its gradient"))
def test_sequence_logprobs_float64(impl: Implementation) -> None:
    logprobs_in(impl, torch.float64)


@pytest.mark.core
@title(N_("sequence_logprobs, float32: the shifted sum over response tokens, and its gradient"))
def test_sequence_logprobs_float32(impl: Implementation) -> None:
    logprobs_in(impl, torch.float32)


@pytest.mark.core
@title(N_("dpo_loss, float64: the sigmoid loss per pair, the rewards, the policy's gradients"))
def test_dpo_loss_float64(impl: Implementation) -> None:
    dpo_in(impl, torch.float64)


@pytest.mark.core
@title(N_("dpo_loss, float32: the sigmoid loss per pair, the rewards, the policy's gradients"))
def test_dpo_loss_float32(impl: Implementation) -> None:
    dpo_in(impl, torch.float32)


@pytest.mark.core
@title(N_("the rewards are detached: metrics, not part of the loss's graph"))
def test_rewards(impl: Implementation) -> None:
    logps = logps_inputs(4, 21, torch.float64)
    on = dpo_on(logps, 0.1, 0.0, "sigmoid")
    pc, pr = (t.clone().requires_grad_(True) for t in logps[:2])
    got = call_dpo(impl, (pc, pr, logps[2].clone(), logps[3].clone()), 0.1, 0.0, "sigmoid", on)
    for name, rewards in ((_("chosen_rewards"), got[1]), (_("rejected_rewards"), got[2])):
        if isinstance(rewards, Tensor) and rewards.requires_grad:
            raise verdict(_("the {name} dpo_loss returns", name=name), on, [
                _("{name} requires grad (grad_fn {fn}): the policy's log-probs reach it",
                  name=name, fn=type(rewards.grad_fn).__name__)], "rewards-not-detached")


@pytest.mark.core
@title(N_("the reference's log-probs get no gradient, even when they require grad"))
def test_reference_gets_no_gradient(impl: Implementation) -> None:
    logps = logps_inputs(4, 31, torch.float64)
    on = dpo_on(logps, 0.5, 0.0, "sigmoid") + _(", all four requiring grad")
    leaves = {name: t.clone().requires_grad_(True)
              for name, t in zip(POLICY + ("ref_chosen_logps", "ref_rejected_logps"), logps)}
    losses = call_dpo(impl, tuple(leaves.values()), 0.5, 0.0, "sigmoid", on)[0]
    check = _("the gradient of the losses w.r.t. the reference's log-probs")
    expect_tracks_grad({"losses": losses}, check, on)
    if not isinstance(losses, Tensor) or losses.shape != logps[0].shape:
        raise verdict(check, on, [_("expected losses of shape {shape}, got {value}",
                                    shape=tuple(logps[0].shape), value=describe_value(losses))])
    grads = grads_of(losses.sum(), leaves, on)
    for name in ("ref_chosen_logps", "ref_rejected_logps"):
        grad = grads[name]
        if grad is not None and bool((grad != 0).any()):
            raise verdict(check, on, [
                _("{name} got a gradient {value}: the loss optimises the frozen reference too",
                  name=name, value=describe_value(grad))], "reference-gets-gradient")
    expect_policy_grads(grads, logps, 0.5, 0.0, "sigmoid", torch.ones_like(logps[0]), on)


def margins_input(dtype: torch.dtype) -> tuple[Tensor, ...]:
    """logits = (πc − πr) − (refc − refr) = [1000, −1000, 300, −300, 0.5], exact in float32."""
    pc = torch.tensor([-10.0, -1010.0, -20.0, -320.0, -30.0], dtype=dtype)
    pr = torch.tensor([-1010.0, -10.0, -320.0, -20.0, -30.5], dtype=dtype)
    rc = torch.tensor([-40.0, -40.0, -15.0, -15.0, -25.0], dtype=dtype)
    rr = torch.tensor([-40.0, -40.0, -15.0, -15.0, -25.0], dtype=dtype)
    return pc, pr, rc, rr


def unstable(logps: tuple[Tensor, ...], beta: float) -> Suspect:
    """A loss (or gradient) finite where |beta * logits| is small and not finite somewhere it is
    large: what log(sigmoid(x)) and log(1 + exp(-x)) give."""
    logits = ((logps[0] - logps[1]) - (logps[2] - logps[3])).double() * beta
    large = logits.abs() >= 50

    def matches(got: Any) -> bool:
        if not isinstance(got, Tensor) or got.shape != large.shape:
            return False
        finite = torch.isfinite(got.detach())
        return bool(finite[~large].all()) and not bool(finite[large].all())

    return Suspect("log-sigmoid-unstable", matches=matches)


@pytest.mark.core
@title(N_("margins of 1e3: finite losses and gradients (a stable log-sigmoid)"))
def test_large_margins(impl: Implementation) -> None:
    for dtype in (torch.float64, torch.float32):
        logps = margins_input(dtype)
        for beta, eps in ((1.0, 0.0), (0.1, 0.0), (1.0, 0.1)):
            on = dpo_on(logps, beta, eps, "sigmoid") + _(", logits = [1000, -1000, 300, -300, 0.5]")
            pc, pr = (t.clone().requires_grad_(True) for t in logps[:2])
            losses = call_dpo(impl, (pc, pr, logps[2].clone(), logps[3].clone()), beta, eps,
                              "sigmoid", on)[0]
            suspects = loss_suspects(lambda m: twin.dpo_loss(*logps, beta, eps, "sigmoid", m)[0])
            expect_close(losses, twin.dpo_loss(*logps, beta, eps)[0],
                         _("the losses dpo_loss returns"), on, suspects + [unstable(logps, beta)])
            expect_tracks_grad({"losses": losses}, _("the gradient of the losses"), on)
            got = grads_of(losses.sum(), dict(zip(POLICY, (pc, pr))), on)
            expect_policy_grads(got, logps, beta, eps, "sigmoid", torch.ones_like(logps[0]), on,
                                (unstable(logps, beta),))


@pytest.mark.core
@title(N_("an unknown loss_type raises ValueError"))
def test_unknown_loss_type(impl: Implementation) -> None:
    logps = logps_inputs(3, 41, torch.float64)
    on = dpo_on(logps, 0.1, 0.0, "hinge")

    dpo_loss = impl.attr("dpo_loss")

    def attempt(*args: Tensor, **kwargs: Any) -> Any:
        try:
            return dpo_loss(*args, **kwargs)
        except NotImplementedError:
            raise
        except Exception as exc:  # judged below: the contract asks for a ValueError
            return exc

    result = impl.call(attempt, *logps, beta=0.1, label_smoothing=0.0, loss_type="hinge",
                       what="dpo_loss", on=on)
    if isinstance(result, ValueError):
        return
    check = _("dpo_loss(..., loss_type='hinge')")
    wanted = _("expected a ValueError: only 'sigmoid' and 'ipo' are defined")
    if isinstance(result, BaseException):
        first = (str(result).strip().splitlines() or [""])[0][:160]
        raise verdict(check, on, [_("raised {error}: {message}", error=type(result).__name__,
                                    message=first), wanted])
    raise verdict(check, on, [_("returned {value}", value=describe_value(result)), wanted])


# ------------------------------------------------------------------------- follow-ups

@pytest.mark.followup
@title(N_("conservative DPO: label_smoothing > 0, values and gradients"))
def test_conservative_dpo(impl: Implementation) -> None:
    for dtype, (b, seed, beta, eps) in ((torch.float64, (5, 51, 0.1, 0.1)),
                                        (torch.float64, (4, 52, 0.5, 0.3)),
                                        (torch.float32, (3, 53, 1.0, 0.2))):
        check_dpo(impl, logps_inputs(b, seed, dtype), beta, eps,
                  weight=randn(b, seed=seed + 50, dtype=dtype))


@pytest.mark.followup
@title(N_("IPO: (logits - 1/(2 beta))^2, label_smoothing ignored"))
def test_ipo(impl: Implementation) -> None:
    for dtype, (b, seed, beta, eps) in ((torch.float64, (5, 61, 0.1, 0.0)),
                                        (torch.float64, (4, 62, 0.5, 0.2)),
                                        (torch.float32, (3, 63, 0.25, 0.0))):
        check_dpo(impl, logps_inputs(b, seed, dtype), beta, eps, "ipo",
                  weight=randn(b, seed=seed + 50, dtype=dtype))


@pytest.mark.followup
@title(N_("sequence_logprobs on float16 and bfloat16 logits: computed and returned in float32"))
def test_half_precision_logits(impl: Implementation) -> None:
    # The expected value is the float32 computation on the same (rounded) logits: an upcast
    # before log_softmax matches it to float32's tolerance, a half-precision log_softmax not.
    for seed, dtype in ((71, torch.float16), (72, torch.bfloat16)):
        check_logprobs(impl, *logprob_inputs(10, 11, seed, dtype), grads=False, advice=_(
            "upcast before log_softmax (logits.float()): in float16 or bfloat16 it keeps only 2 "
            "to 3 significant digits, and the sum over a response adds their errors up"))


@pytest.mark.followup
@title(N_("at initialisation (policy = reference): log 2 per pair, gradients -beta/2 and +beta/2"))
def test_at_initialisation(impl: Implementation) -> None:
    for dtype, beta in ((torch.float64, 0.1), (torch.float32, 0.5)):
        ref = logps_inputs(4, 81, dtype)[2:]
        # The policy's log-probs equal the reference's, in tensors of their own.
        check_dpo(impl, (ref[0].clone(), ref[1].clone(), ref[0], ref[1]), beta)
