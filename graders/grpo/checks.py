"""Grader for kata 30: GRPO's group-relative advantages and its clipped, KL-regularised loss.

Every check computes the expected result with :mod:`graders.grpo.twin` in float64 and, on a
mismatch, what each catalogued mistake would give on the same inputs, naming the one that
matches. The graded inputs make every mistake visible: ratios beyond both clip bounds with
advantages of both signs, ragged masks that differ per completion, padded positions holding
values of their own, and a group of equal rewards among the others.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import Tensor

from graders.core.compare import expect_close, expect_tracks_grad, expect_tuple
from graders.core.i18n import N_, _
from graders.core.implementation import Implementation
from graders.core.inputs import generator, grads_of, leaf_copies
from graders.core.mistakes import Suspect
from graders.core.report import describe_inputs, describe_value, title, verdict
from graders.grpo import twin

__all__ = [
    "test_group_advantages",
    "test_equal_rewards",
    "test_sequence_loss_float64",
    "test_sequence_loss_float32",
    "test_old_logprobs_constant",
    "test_stats",
    "test_dr_grpo_advantages",
    "test_token_loss_length_bias",
    "test_one_batch_used_once",
    "test_kl_is_k3",
]

CLIP = 0.2
EPS_SLACK = 100.0  # float64 advantages compared at 1e-5 relative (see check_advantages)
LOG_HIGH, LOG_LOW = torch.log1p(torch.tensor(CLIP)).item(), torch.log1p(torch.tensor(-CLIP)).item()


# ------------------------------------------------------------------------------ inputs

def rewards_of(groups: int, size: int, seed: int, dtype: torch.dtype) -> Tensor:
    """(groups·size,) rewards: the first group all equal (1.0), the others varied."""
    g = generator(seed)
    r = torch.randint(0, 5, (groups, size), generator=g).to(torch.float64) * 0.5
    r[1:, 0], r[1:, 1] = 0.0, 2.0  # every other group holds two different rewards
    r[0] = 1.0
    return r.reshape(-1).to(dtype)


def loss_inputs(completions: int, n: int, seed: int, dtype: torch.dtype,
                lengths: list[int] | None = None) -> dict[str, Tensor]:
    """Log-probs (completions, n) where each row's first four tokens have ratios above 1 + ε,
    below 1 − ε, inside, and above again; advantages of alternating signs; a right-padded mask
    of a different length per row (padded positions keep values of their own)."""
    g = generator(seed)
    old = -(torch.rand(completions, n, generator=g, dtype=torch.float64) * 2 + 0.1)
    delta = torch.rand(completions, n, generator=g, dtype=torch.float64) * 1.2 - 0.6
    delta[:, :4] = torch.tensor([0.45, -0.5, 0.05, 0.3], dtype=torch.float64)
    near = ((delta - LOG_HIGH).abs() < 0.02) | ((delta - LOG_LOW).abs() < 0.02)
    delta = torch.where(near, delta + 0.05, delta)  # never on a clip bound
    logprobs = old + delta
    ref = logprobs + torch.randn(completions, n, generator=g, dtype=torch.float64) * 0.6
    sign = torch.tensor([1.0, -1.0], dtype=torch.float64).repeat(completions // 2 + 1)[:completions]
    adv = sign * (torch.rand(completions, generator=g, dtype=torch.float64) + 0.3)
    if lengths is None:  # ragged: one full row, one of a single token, the rest drawn
        drawn = torch.randint(2, n, (completions,), generator=g).tolist()
        lengths = [n, 1, *drawn[2:]]
    mask = torch.arange(n).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
    return {"logprobs": logprobs.to(dtype), "old_logprobs": old.to(dtype),
            "ref_logprobs": ref.to(dtype), "advantages": adv.to(dtype), "response_mask": mask}


def describe_loss_inputs(x: dict[str, Tensor], **options: Any) -> str:
    lengths = x["response_mask"].sum(dim=1).tolist()
    extra = "".join(f", {k}={v!r}" for k, v in options.items())
    return (describe_inputs(logprobs=x["logprobs"], advantages=x["advantages"])
            + _(", response lengths {lengths}", lengths=lengths) + extra)


# ------------------------------------------------------------------------------ calls

def call_advantages(impl: Implementation, rewards: Tensor, group_size: int, **options: Any
                    ) -> tuple[Any, str]:
    on = describe_inputs(rewards=rewards) + f", group_size={group_size}" + "".join(
        f", {k}={v!r}" for k, v in options.items())
    got = impl.call(impl.attr("group_advantages"), rewards.clone(), group_size,
                    what="group_advantages", on=on, **options)
    return got, on


def check_advantages(impl: Implementation, rewards: Tensor, group_size: int,
                     normalize_by_std: bool = True) -> None:
    options = {} if normalize_by_std else {"normalize_by_std": False}
    got, on = call_advantages(impl, rewards, group_size, **options)
    expected = twin.advantages(rewards, group_size, normalize_by_std=normalize_by_std)
    suspects = [Suspect(slug, lambda m=m: twin.advantages(rewards, group_size,
                                                          normalize_by_std=normalize_by_std,
                                                          mistake=m).to(rewards.dtype))
                for m, slug in twin.ADVANTAGE_MISTAKES.items()]
    # float64 at 1e-5 relative: eps placed otherwise (max(std, eps), sqrt(var + eps)) moves the
    # advantages by about 1e-6 and is no mistake; float32 keeps its own tolerance.
    expect_close(got, expected.to(rewards.dtype), _("group_advantages(rewards, group_size)"), on,
                 suspects, slack=EPS_SLACK if rewards.dtype == torch.float64 else 1.0)


def call_loss(impl: Implementation, x: dict[str, Tensor], check: str, on: str,
              **options: Any) -> tuple[Any, dict, dict[str, Tensor]]:
    """Runs grpo_loss on fresh leaves (logprobs and old_logprobs record gradients) and returns
    (loss, stats, the leaves)."""
    lp, old = leaf_copies(x["logprobs"], x["old_logprobs"])
    leaves = {"logprobs": lp, "old_logprobs": old}
    out = impl.call(impl.attr("grpo_loss"), lp, old, x["ref_logprobs"].clone(),
                    x["advantages"].clone(), x["response_mask"].clone(), what="grpo_loss",
                    on=on, **options)
    loss, stats = expect_tuple(out, 2, check, on, "loss, stats")
    if not isinstance(stats, dict):
        raise verdict(check, on, [_("expected stats to be a dict with 'clip_fraction' and 'kl', "
                                    "got {value}", value=describe_value(stats))])
    return loss, stats, leaves


def loss_suspects(x: dict[str, Tensor], dtype: torch.dtype, which: int, **options: Any
                  ) -> list[Suspect]:
    """One suspect per switch: which=0 predicts the loss, which=1 its gradient."""
    return [Suspect(slug, lambda m=m: twin.loss(**x, **options, mistake=m)[which].to(dtype))
            for m, slug in twin.LOSS_MISTAKES.items()]


def check_loss(impl: Implementation, x: dict[str, Tensor], **options: Any) -> dict:
    """The loss's value and its gradient with respect to logprobs against the twin's; returns
    the stats (and the expected ones under "expected")."""
    dtype = x["logprobs"].dtype
    on = describe_loss_inputs(x, **options)
    check = _("grpo_loss(...) value")
    loss, stats, leaves = call_loss(impl, x, check, on, **options)
    value, grad, expected_stats = twin.loss(**x, **options)
    if isinstance(loss, (int, float)):
        raise verdict(check, on, [_("expected the loss as a 0-dim torch.Tensor, got a Python "
                                    "{kind} {value}: .item(), .tolist() and float() leave "
                                    "autograd", kind=type(loss).__name__,
                                    value=describe_value(loss))])
    expect_close(loss, value.to(dtype), check, on, loss_suspects(x, dtype, 0, **options))
    expect_tracks_grad({"loss": loss}, check, on)
    got = grads_of(loss, {"logprobs": leaves["logprobs"]}, on)["logprobs"]
    what = _("the gradient of grpo_loss(...) with respect to logprobs")
    if got is None:
        raise verdict(what, on, [_("expected a gradient, got None: is logprobs detached?")])
    expect_close(got, grad.to(dtype), what, on, loss_suspects(x, dtype, 1, **options), slack=10)
    return {**stats, "expected": expected_stats}


def as_number(value: Any, name: str, check: str, on: str) -> float:
    try:
        return float(value)
    except Exception:
        raise verdict(check, on, [_("stats[{name!r}]: expected a Python float, got {value}",
                                    name=name, value=describe_value(value))]) from None


def check_stats(stats: dict, x: dict[str, Tensor], on: str) -> None:
    expected = stats["expected"]
    dtype = x["logprobs"].dtype
    check = _("the stats grpo_loss returns")
    for name in ("clip_fraction", "kl"):
        if name not in stats:
            raise verdict(check, on, [_("stats has no key {name!r} (its keys: {keys})", name=name,
                                        keys=sorted(k for k in stats if k != "expected"))])
    clip = as_number(stats["clip_fraction"], "clip_fraction", check, on)
    expect_close(torch.tensor(clip, dtype=dtype), torch.tensor(expected["clip_fraction"], dtype=dtype),
                 _("stats['clip_fraction'] (masked tokens clipped where it mattered)"), on)
    kl = as_number(stats["kl"], "kl", check, on)
    token, sequence = expected["kl"], expected["kl_sequence"]
    nearest = min((token, sequence), key=lambda e: abs(e - kl))
    what = _("stats['kl'] (the masked mean of k3)")
    reversed_stats = twin.loss(**x, mistake="kl-reversed")[2]
    expect_close(torch.tensor(kl, dtype=dtype), torch.tensor(nearest, dtype=dtype), what, on,
                 [Suspect("kl-wrong-direction",
                          lambda e=e: torch.tensor(reversed_stats[e], dtype=dtype))
                  for e in ("kl", "kl_sequence")])


# ------------------------------------------------------------------------------ core

@pytest.mark.core
@title(N_("group_advantages: per group, unbiased std, float64 and float32"))
def test_group_advantages(impl: Implementation) -> None:
    for dtype, groups, size, seed in ((torch.float64, 3, 4, 1), (torch.float32, 4, 3, 2),
                                      (torch.float64, 2, 2, 3), (torch.float32, 2, 6, 4)):
        check_advantages(impl, rewards_of(groups, size, seed, dtype), size)


@pytest.mark.core
@title(N_("group_advantages on groups of equal rewards: zeros, never NaN"))
def test_equal_rewards(impl: Implementation) -> None:
    for dtype in (torch.float32, torch.float64):
        rewards = torch.tensor([1.0] * 4 + [0.0] * 4 + [0.5] * 4, dtype=dtype)
        got, on = call_advantages(impl, rewards, 4)
        nan = Suspect("nan-on-equal-rewards",
                      matches=lambda g: isinstance(g, Tensor) and bool(torch.isnan(g).any()))
        expect_close(got, torch.zeros_like(rewards), _("group_advantages(rewards, 4)"), on,
                     [nan, *(Suspect(slug, lambda m=m: twin.advantages(rewards, 4, mistake=m)
                                     .to(dtype))
                             for m, slug in twin.ADVANTAGE_MISTAKES.items() if m != "no-eps")])


@pytest.mark.core
@title(N_("grpo_loss, aggregation='sequence', float64: value and gradient"))
def test_sequence_loss_float64(impl: Implementation) -> None:
    check_loss(impl, loss_inputs(6, 7, 11, torch.float64), beta=0.2)
    check_loss(impl, loss_inputs(4, 5, 12, torch.float64))  # the defaults: ε 0.2, β 0.04


@pytest.mark.core
@title(N_("grpo_loss, aggregation='sequence', float32: value and gradient"))
def test_sequence_loss_float32(impl: Implementation) -> None:
    check_loss(impl, loss_inputs(8, 6, 13, torch.float32), clip_eps=CLIP, beta=0.3,
               aggregation="sequence")


@pytest.mark.core
@title(N_("old_logprobs are constants: no gradient reaches them"))
def test_old_logprobs_constant(impl: Implementation) -> None:
    x = loss_inputs(4, 5, 21, torch.float64)
    on = describe_loss_inputs(x) + _(", old_logprobs requiring grad")
    check = _("the gradient of grpo_loss(...) with respect to old_logprobs")
    loss, _stats, leaves = call_loss(impl, x, check, on)
    expect_tracks_grad({"loss": loss}, check, on)
    got = grads_of(loss, leaves, on)["old_logprobs"]
    if got is not None and bool((got != 0).any()):
        raise verdict(check, on, [_("expected no gradient (None or zeros), got {value}",
                                    value=describe_value(got))], "old-logprobs-get-gradient")


@pytest.mark.core
@title(N_("the stats: clip_fraction and kl, Python floats"))
def test_stats(impl: Implementation) -> None:
    for dtype, seed in ((torch.float64, 31), (torch.float32, 32)):
        x = loss_inputs(6, 6, seed, dtype)
        stats = check_loss(impl, x, beta=0.1)
        check_stats(stats, x, describe_loss_inputs(x, beta=0.1))


# ------------------------------------------------------------------------------ follow-ups

@pytest.mark.followup
@title(N_("group_advantages(..., normalize_by_std=False): r - mean, no division by the std"))
def test_dr_grpo_advantages(impl: Implementation) -> None:
    for dtype, groups, size, seed in ((torch.float64, 3, 4, 41), (torch.float32, 2, 5, 42)):
        check_advantages(impl, rewards_of(groups, size, seed, dtype), size, normalize_by_std=False)


@pytest.mark.followup
@title(N_("aggregation='token' (DAPO): every token weighs the same, whatever its length"))
def test_token_loss_length_bias(impl: Implementation) -> None:
    for dtype, seed in ((torch.float64, 51), (torch.float32, 52)):
        x = loss_inputs(4, 8, seed, dtype, lengths=[8, 1, 5, 2])
        check_loss(impl, x, beta=0.2, aggregation="token")


@pytest.mark.followup
@title(N_("one batch used once: ratio 1, the gradient is -A / (B·G · |o_i|) per token"))
def test_one_batch_used_once(impl: Implementation) -> None:
    x = loss_inputs(6, 5, 61, torch.float64)
    x["old_logprobs"] = x["logprobs"].clone()
    check_loss(impl, x, beta=0.0)


@pytest.mark.followup
@title(N_("the KL term is k3 (never negative), not k1 (whose mean can be)"))
def test_kl_is_k3(impl: Implementation) -> None:
    x = loss_inputs(4, 6, 71, torch.float64)
    x["ref_logprobs"] = x["logprobs"] + 0.4 + 0.3 * x["ref_logprobs"].sin()  # pi_ref > pi
    options = {"beta": 0.5}
    on = describe_loss_inputs(x, **options)
    stats = check_loss(impl, x, **options)
    kl = as_number(stats.get("kl"), "kl", _("the stats grpo_loss returns"), on)
    k1 = twin.k1_mean(x["logprobs"], x["ref_logprobs"], x["response_mask"])
    if any(abs(kl - k) <= 1e-6 * max(1.0, abs(k)) for k in k1):
        raise verdict(_("stats['kl'] (the masked mean of k3)"), on, [
            _("got {kl}, the mean of k1 = log pi - log pi_ref: unbiased, but negative here, "
              "where every token has pi_ref > pi", kl=f"{kl:.6g}"),
            _("report k3 = exp(ref - logprobs) - (ref - logprobs) - 1, the term in the loss")])
    check_stats(stats, x, on)
