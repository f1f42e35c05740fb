"""Kata 10's dropout and drop path checks: their behaviour is graded, never seed for seed
(which values are zeroed, how the kept ones are scaled, only in training mode, roughly the
right share dropped over many draws from a fixed seed).
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import Tensor, nn

from graders.core.i18n import N_, _
from graders.core.compare import MISTAKE_SLACK, expect_close, tolerance
from graders.core.implementation import Implementation
from graders.core.inputs import randn
from graders.core.mistakes import Suspect
from graders.core.report import describe_inputs, describe_tensor, describe_value, verdict, title
from graders.twins.projections import weights_behind_output
from graders.vit.twin import (
    attention_reference,
    attention_state,
    attention_twin,
    block_state,
    block_twin,
    drop_path_outcomes,
    mlp_reference,
    mlp_state,
)
from graders.core.modules import learner_grads
from graders.vit.learner import (
    ATTENTION_NAMES,
    block_on,
    build,
    MLP_NAMES,
    new_block,
    run,
    seeded,
)


# -------------------------------------------------------------------------------- DropPath


def drop_path_module(impl: Implementation, p: float, scale_by_keep: bool = True,
                     training: bool = True, dtype=torch.float64) -> tuple[nn.Module, str]:
    kwargs = {} if scale_by_keep else {"scale_by_keep": False}
    module = build(impl, "DropPath", (p,), kwargs, None, "", dtype)
    module.train(training)
    flags = "" if scale_by_keep else ", scale_by_keep=False"
    mode = _("training mode") if training else _("eval mode")
    return module, _("{module} in {mode}", module=f"DropPath({p}{flags})", mode=mode)


def branch(*shape: int, seed: int, dtype=torch.float64) -> Tensor:
    """A residual branch whose every value is clearly nonzero (|x| >= 0.5), so a dropped
    value (0) is never mistaken for a kept one."""
    x = randn(*shape, seed=seed, dtype=dtype)
    return x + 0.5 * torch.where(x >= 0, 1.0, -1.0).to(dtype)


def drop_pattern(out: Tensor, x: Tensor, p: float) -> dict[str, Tensor]:
    """Per element of ``out``: dropped (0), kept and scaled (x / (1 - p)), kept unscaled (x)."""
    rtol, atol = tolerance(x.dtype, MISTAKE_SLACK)
    got, x64 = out.detach().double(), x.detach().double()
    zero = got.abs() <= atol
    scaled = (torch.isclose(got, x64 / (1 - p), rtol=rtol, atol=atol) if p < 1
              else torch.zeros_like(zero))
    plain = torch.isclose(got, x64, rtol=rtol, atol=atol)
    return {"zero": zero, "scaled": scaled, "plain": plain}


def samples_mixed(zero: Tensor) -> int:
    """How many samples (dim 0) have some elements zeroed and others kept."""
    flat = zero.reshape(zero.shape[0], -1)
    return int((flat.any(1) & ~flat.all(1)).sum())


def check_drop_path_training(impl: Implementation, p: float, shape: tuple[int, ...], seed: int,
                             scale_by_keep: bool = True) -> Tensor:
    """One call in training mode: every sample either all zeros or all kept (x / (1 - p)
    with scale_by_keep, x without), some of each. Returns the per-sample kept flags."""
    module, what = drop_path_module(impl, p, scale_by_keep)
    x = branch(*shape, seed=seed)
    on = _("{inputs} with {module}", inputs=describe_inputs(x=x), module=what)
    with seeded(seed + 1):
        out = run(impl, module, x, "DropPath", on)
    check = _("which samples DropPath kept")
    if out.shape != x.shape or out.dtype != x.dtype:
        expect_close(out, x, check, on)  # explains the shape or dtype
    pattern = drop_pattern(out, x, p)
    zero = pattern["zero"]
    kept_as = pattern["scaled"] if scale_by_keep else pattern["plain"]
    expected_kept = "x / (1 - p)" if scale_by_keep else _("x (scale_by_keep=False: unscaled)")
    mixed = samples_mixed(zero)
    if bool(torch.isnan(out).any()):
        raise verdict(check, on, [_("got NaN in {count} place(s)", count=int(torch.isnan(out).sum()))])
    if mixed:
        raise verdict(check, on, [
            _("{mixed} of {total} samples had some values zeroed and others kept: one "
              "keep/drop draw must cover a whole sample x[i]", mixed=mixed, total=shape[0])],
            "drop-path-per-element")
    kept_samples = ~zero.reshape(shape[0], -1).all(1)
    if not bool(zero.any()):
        raise verdict(check, on, [_("no sample was dropped among {total} (p={p}): DropPath "
                                    "must drop in training mode", total=shape[0], p=p)])
    if not bool((zero | kept_as).all()):
        if scale_by_keep and bool((zero | pattern["plain"]).all()):
            raise verdict(check, on, [
                _("the kept samples equal x; expected x / (1 - p) = x * {factor}",
                  factor=f"{1 / (1 - p):g}")],
                "drop-path-not-rescaled")
        if not scale_by_keep and bool((zero | pattern["scaled"]).all()):
            raise verdict(check, on, [
                _("the kept samples were divided by 1 - p; with scale_by_keep=False they stay "
                  "x")])
        bad = int((~(zero | kept_as)).sum())
        raise verdict(check, on, [
            _("{bad} of {total} values are neither 0 (dropped) nor {kept}", bad=bad,
              total=out.numel(), kept=expected_kept),
            f"x   {describe_tensor(x)}", _("got {value}", value=describe_tensor(out))])
    if not bool(kept_samples.any()):
        raise verdict(check, on, [_("every sample was dropped (p={p})", p=p)])
    return kept_samples


@title(N_("drop path is the identity in eval mode"))
@pytest.mark.core
def test_drop_path_identity_in_eval(impl):
    """In eval mode DropPath returns its input unchanged, whatever drop_prob."""
    for p, seed in ((0.5, 400), (0.9, 410)):
        module, what = drop_path_module(impl, p, training=False)
        x = branch(16, 3, 4, seed=seed)
        on = _("{inputs} with {module}", inputs=describe_inputs(x=x), module=what)
        with seeded(seed + 1):
            out = run(impl, module, x, "DropPath", on)

        def dropped_in_eval(got: Tensor, p=p, x=x) -> bool:
            pattern = drop_pattern(got, x, p)
            return bool((pattern["zero"] | pattern["scaled"] | pattern["plain"]).all()
                        and not pattern["plain"].all())

        expect_close(out, x, _("DropPath in eval mode (the identity)"), on,
                     [Suspect("drop-path-in-eval", matches=dropped_in_eval)])


@title(N_("drop path in training mode"))
@pytest.mark.core
def test_drop_path_in_training(impl):
    """In training mode each sample's whole branch is dropped (zeros) or kept and divided by
    1 - p; at p = 0 DropPath is the identity."""
    check_drop_path_training(impl, 0.25, (64, 3, 4), seed=500)
    check_drop_path_training(impl, 0.5, (32, 5, 2), seed=510)
    module, what = drop_path_module(impl, 0.0)
    x = branch(8, 3, 4, seed=520)
    on = _("{inputs} with {module}", inputs=describe_inputs(x=x), module=what)
    with seeded(521):
        out = run(impl, module, x, "DropPath", on)
    expect_close(out, x, _("DropPath at drop_prob=0 in training mode (the identity)"), on)


@title(N_("drop path at p = 1"))


@pytest.mark.followup


def test_drop_path_extremes(impl):
    """drop_prob=1 gives zeros (never NaN: no division by 1 - p = 0). (p = 0, the identity,
    is graded with training mode, in test_drop_path_in_training.)"""
    module, what = drop_path_module(impl, 1.0)
    x = branch(6, 3, 4, seed=1000)
    on = _("{inputs} with {module}", inputs=describe_inputs(x=x), module=what)
    with seeded(1001):
        out = run(impl, module, x, "DropPath", on)
    expect_close(out, torch.zeros_like(x), _("DropPath at drop_prob=1 (every sample dropped)"), on)


@title(N_("drop path with scale_by_keep=False"))
@pytest.mark.followup
def test_drop_path_scale_by_keep(impl):
    """scale_by_keep=False keeps the kept samples as they are (no division by 1 - p)."""
    check_drop_path_training(impl, 0.5, (32, 3, 4), seed=1010, scale_by_keep=False)


@title(N_("drop path's keep rate"))
@pytest.mark.followup
def test_drop_path_keep_rate(impl):
    """Over many samples about 1 - p of them are kept: p is the probability to *drop*.
    (Bounds wide enough that a correct DropPath never fails: 10 standard deviations.)"""
    for p, seed in ((0.2, 1100), (0.7, 1110)):
        samples = 2000
        kept = check_drop_path_training(impl, p, (samples, 1, 2), seed=seed)
        share = float(kept.double().mean())
        sd = math.sqrt(p * (1 - p) / samples)
        if abs(share - (1 - p)) > 10 * sd:
            raise verdict(
                _("the share of samples DropPath kept"),
                _("{count} samples with {module}", count=samples, module=f"DropPath({p})"),
                [_("kept {share}; expected about 1 - p = {keep} (drop_prob is the probability "
                   "to drop a sample, not to keep it)", share=f"{share:.1%}", keep=f"{1 - p:.0%}")])


@title(N_("drop path on inputs of any rank and its gradient"))
@pytest.mark.followup
def test_drop_path_any_rank_and_gradient(impl):
    """One draw per index of dim 0 for inputs of any rank ((B, D) and (B, C, H, W)); the
    gradient flows to the kept samples, scaled by 1 / (1 - p), and not to the dropped ones."""
    check_drop_path_training(impl, 0.5, (32, 6), seed=1200)
    check_drop_path_training(impl, 0.5, (32, 2, 3, 2), seed=1210)
    module, what = drop_path_module(impl, 0.5)
    base = branch(16, 3, 4, seed=1220)
    x = base.clone().requires_grad_(True)
    on = _("{inputs} with {module}", inputs=describe_inputs(x=x), module=what)
    with seeded(1221):
        out = run(impl, module, x, "DropPath", on)
    check = _("backward through {module}", module="DropPath")
    (grad,) = learner_grads(out, {"x": x}, 1222, check, on).values()
    r = randn(*out.shape, seed=1222, dtype=out.dtype)
    expected = r * (out.detach() / base)  # d out / d x is the per-sample factor, 0 or 1/(1-p)
    expect_close(grad, expected, _("{check}: gradient of {name}", check=check, name="x"), on)


def dropout_pattern_problems(got: Tensor, clean: Tensor, p: float, what: str) -> list[str]:
    """Why ``got`` is not ``clean`` after dropout(p) elementwise: every value either 0 or
    clean / (1 - p), both kinds present."""
    pattern = drop_pattern(got, clean, p)
    zero, scaled = pattern["zero"], pattern["scaled"]
    if not bool((zero | scaled).all()):
        bad = int((~(zero | scaled)).sum())
        return [_("{bad} of {total} values of {what} are neither 0 (dropped) nor the value "
                  "without dropout times 1/(1-p) = {factor}", bad=bad, total=got.numel(),
                  what=what, factor=f"{1 / (1 - p):g}")]
    if not bool(zero.any()):
        return [_("nothing in {what} was dropped", what=what)]
    if bool(zero.all()):
        return [_("every value of {what} was zeroed", what=what)]
    return []


def two_calls_differ(impl, module, x, what, on, seed) -> bool:
    with seeded(seed):
        first = run(impl, module, x, what, on)
    with seeded(seed + 1):
        second = run(impl, module, x, what, on)
    return first.shape == second.shape and not torch.allclose(first, second)


@title(N_("attention dropout in training mode"))
@pytest.mark.followup
def test_attention_dropout_in_training(impl):
    """attn_drop acts on the attention weights (each 0 or w / (1 - p)) and proj_drop on the
    output, only in training mode. float64, head_dim >= N, so the weights behind the output
    can be recovered. Behaviour only, never seed for seed."""
    dim, heads, b, n, p = 16, 2, 3, 6, 0.5
    twin = attention_twin(dim, heads, True, seed=1300, dtype=torch.float64)
    state = attention_state(twin, True)
    x = randn(b, n, dim, seed=1301, dtype=torch.float64)
    clean_out, clean_w = twin(x, x, x, need_weights=True, average_attn_weights=False)
    clean_out, clean_w = clean_out.detach(), clean_w.detach()

    module = build(impl, "Attention", (dim,), dict(num_heads=heads, qkv_bias=True, attn_drop=p),
                   state, ATTENTION_NAMES)
    on = _("{inputs} with {module}", inputs=describe_inputs(x=x),
           module=f"Attention({dim}, num_heads={heads}, qkv_bias=True, attn_drop={p})")
    expect_close(run(impl, module, x, "Attention", on + _(", eval mode")), clean_out,
                 _("the output in eval mode (no dropout)"), on + _(", eval mode"))
    module.train()
    on += _(", training mode")
    with seeded(1302):
        out = run(impl, module, x, "Attention", on)
    check = _("attn_drop on the attention weights (p={p})", p=p)
    if out.shape != clean_out.shape:
        expect_close(out, clean_out, check, on)
    mha_state = {k: v.detach() for k, v in twin.state_dict().items()}
    weights = weights_behind_output(mha_state, x, out, heads, batch_first=True)
    problems = dropout_pattern_problems(weights, clean_w, p, _("the attention weights behind "
                                                                 "your output"))
    if problems:
        raise verdict(check, on, problems + [
            _("attn_drop must act on softmax(q k^T * scale), before the weights multiply v")])

    module = build(impl, "Attention", (dim,), dict(num_heads=heads, qkv_bias=True, proj_drop=p),
                   state, ATTENTION_NAMES).train()
    on = _("{inputs} with {module}", inputs=describe_inputs(x=x),
           module=f"Attention({dim}, num_heads={heads}, qkv_bias=True, proj_drop={p})") \
        + _(", training mode")
    with seeded(1303):
        out = run(impl, module, x, "Attention", on)
    check = _("proj_drop on the output (p={p})", p=p)
    if out.shape != clean_out.shape:
        expect_close(out, clean_out, check, on)
    problems = dropout_pattern_problems(out, clean_out, p, _("the output"))
    if problems:
        raise verdict(check, on, problems + [_("proj_drop acts on proj's output, last")])


def check_mlp_dropout(impl: Implementation, module: nn.Module, state: dict[str, Tensor],
                      x: Tensor, p: float, on: str, seed: int, prefix: str = "") -> None:
    """In training mode with dropout p after act and after fc2: about p of the outputs are
    exactly 0, and the others are not simply clean / (1 - p) (the hidden layer was dropped
    too)."""
    clean = mlp_reference(state, x, prefix=prefix)
    with seeded(seed):
        out = run(impl, module, x, "Mlp", on)
    check = _("dropout in the Mlp (p={p})", p=p)
    if out.shape != clean.shape:
        expect_close(out, clean, check, on)
    pattern = drop_pattern(out, clean, p)
    zero_share = float(pattern["zero"].double().mean())
    if not 0.3 <= zero_share <= 0.7:
        raise verdict(check, on, [
            _("{share} of the outputs are 0; about {p} should be: drop acts after fc2 (and "
              "after act)", share=f"{zero_share:.0%}", p=f"{p:.0%}")])
    kept = ~pattern["zero"]
    if bool(pattern["scaled"][kept].all()):
        raise verdict(check, on, [
            _("every nonzero output is exactly the undropped one / (1 - p): nothing was "
              "dropped between act and fc2 (drop acts after act too)")])


@title(N_("MLP dropout in training mode"))
@pytest.mark.followup
def test_mlp_dropout_in_training(impl):
    """drop acts after act and after fc2, in training mode only."""
    p = 0.5
    state = mlp_state(6, 12, 6, seed=1400, dtype=torch.float64)
    module = build(impl, "Mlp", (6, 12, 6), {"drop": p}, state, MLP_NAMES)
    x = randn(4, 10, 6, seed=1402, dtype=torch.float64)
    on = _("{inputs} with {module}", inputs=describe_inputs(x=x), module=f"Mlp(6, 12, 6, drop={p})")
    expect_close(run(impl, module, x, "Mlp", on + _(", eval mode")), mlp_reference(state, x),
                 _("the output in eval mode (no dropout)"), on + _(", eval mode"))
    check_mlp_dropout(impl, module.train(), state, x, p, on + _(", training mode"), seed=1403)


def submodule(module: nn.Module, name: str, what: str) -> nn.Module:
    sub = getattr(module, name, None)
    if not isinstance(sub, nn.Module):
        raise verdict(f"{what}.{name}", _("construction"),
                      [_("expected a submodule {name}, got {value}", name=name,
                         value=describe_value(sub))])
    return sub


@title(N_("where the block applies dropout"))
@pytest.mark.followup
def test_block_dropout_wiring(impl):
    """Block's drop is the attention's proj_drop and the Mlp's dropout; attn_drop is the
    attention's attn_drop; eval mode has no dropout. Checked on block.attn and block.mlp in
    training mode, by behaviour."""
    dim, heads, p = 16, 2, 0.5
    hidden = int(dim * 4.0)
    twin = block_twin(dim, heads, hidden, True, seed=1500, dtype=torch.float64)
    state = block_state(twin, True)
    x = randn(3, 6, dim, seed=1501, dtype=torch.float64)
    clean_attn = attention_reference(state, x, heads, prefix="attn.")
    mlp_state_only = {k: v for k, v in state.items() if k.startswith("mlp.")}

    for extra, seed in (({"drop": p}, 1502), ({"attn_drop": p}, 1510)):
        block = new_block(impl, dim, heads, 4.0, True, state, torch.float64, "cpu", extra)
        flags = ", " + ", ".join(f"{k}={v}" for k, v in extra.items())
        on = block_on(x, dim, heads, 4.0, True, flags)
        expect_close(run(impl, block, x, "Block", on + _(", eval mode")), twin(x),
                     _("the output in eval mode (no dropout)"), on + _(", eval mode"))
        block.train()
        if not two_calls_differ(impl, block, x, "Block", on + _(", training mode"), seed):
            raise verdict(_("two calls in training mode"), on + _(", training mode"), [
                _("they gave the same output: the dropout is not wired in")])
        attn = submodule(block, "attn", "Block")
        mlp = submodule(block, "mlp", "Block")
        attn_on = (_("{module} on x {shape}", module="block.attn", shape=tuple(x.shape))
                   + f", Block({dim}, {heads}{flags})" + _(", training mode"))
        with seeded(seed + 3):
            attn_out = run(impl, attn, x, "block.attn", attn_on)
        if "drop" in extra:
            problems = dropout_pattern_problems(attn_out, clean_attn, p,
                                                _("{module}'s output", module="block.attn"))
            if problems:
                raise verdict(_("drop reaches the attention's proj_drop"), attn_on, problems)
            mlp_on = attn_on.replace("block.attn", "block.mlp")
            check_mlp_dropout(impl, mlp, mlp_state_only, x, p, mlp_on, seed + 4, prefix="mlp.")
        else:
            zeros = int((attn_out.detach() == 0).sum())
            if zeros:
                raise verdict(_("attn_drop is not proj_drop"), attn_on, [
                    _("{zeros} values of block.attn's output are exactly 0: attn_drop must act "
                      "on the attention weights, not on the output", zeros=zeros)])
            mlp_on = attn_on.replace("block.attn", "block.mlp")
            with seeded(seed + 4):
                mlp_out = run(impl, mlp, x, "block.mlp", mlp_on)
            expect_close(mlp_out, mlp_reference(state, x, prefix="mlp."),
                         _("block.mlp with drop=0.0 (attn_drop does not reach the Mlp)"), mlp_on)


def per_sample_match(out: Tensor, outcomes: list[Tensor]) -> Tensor:
    """(B, 4) bool: which outcomes each sample of ``out`` equals."""
    rtol, atol = tolerance(out.dtype, MISTAKE_SLACK)
    got = out.detach().double()
    return torch.stack([torch.isclose(got, o.double(), rtol=rtol, atol=atol).flatten(1).all(1)
                        for o in outcomes], dim=1)


@title(N_("the block's drop path"))
@pytest.mark.followup
def test_block_drop_path(impl):
    """Block(drop_path=p): in training mode each sample's attention branch and Mlp branch are
    each kept (and divided by 1 - p) or dropped, per sample; in eval mode nothing is."""
    dim, heads, p, b = 8, 2, 0.5, 32
    twin = block_twin(dim, heads, 32, True, seed=1600, dtype=torch.float64)
    state = block_state(twin, True)
    x = randn(b, 3, dim, seed=1601, dtype=torch.float64)
    block = new_block(impl, dim, heads, 4.0, True, state, torch.float64, "cpu",
                      {"drop_path": p})
    on = block_on(x, dim, heads, 4.0, True, f", drop_path={p}")
    scaled = drop_path_outcomes(state, x, heads, p, scaled=True)
    plain = drop_path_outcomes(state, x, heads, p, scaled=False)

    def dropped_in_eval(got: Tensor) -> bool:
        return bool((per_sample_match(got, scaled) | per_sample_match(got, plain)).any(1).all())

    with seeded(1602):
        out = run(impl, block, x, "Block", on + _(", eval mode"))
    expect_close(out, twin(x), _("the output in eval mode (DropPath is the identity)"),
                 on + _(", eval mode"), [Suspect("drop-path-in-eval", matches=dropped_in_eval)])

    block.train()
    on += _(", training mode")
    with seeded(1603):
        out = run(impl, block, x, "Block", on)
    check = _("which samples' branches the block's DropPath kept")
    if out.shape != x.shape:
        expect_close(out, x, check, on)
    matched = per_sample_match(out, scaled)
    unscaled = per_sample_match(out, plain)
    if bool(unscaled[:, 0].all()):  # every sample is the plain block: nothing dropped
        raise verdict(check, on, [_("no branch of any of the {count} samples was dropped: drop_path "
                                    "must reach a DropPath around both branches", count=b)])
    if not bool(matched.any(1).all()):
        if bool(unscaled.any(1).all()):
            raise verdict(check, on, [_("each sample's branches were kept or dropped, but the "
                                        "kept ones were not divided by 1 - p")],
                          "drop-path-not-rescaled")
        bad = int((~matched.any(1)).sum())
        raise verdict(check, on, [
            _("{bad} of {total} samples are none of: both branches kept (each / (1 - p)), one "
              "of them dropped, both dropped", bad=bad, total=b),
            _("x = x + drop_path(attn(norm1(x))); x = x + drop_path(mlp(norm2(x))), with one "
              "keep/drop draw per sample and branch")])
