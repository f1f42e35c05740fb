"""Grader for kata 28: ``LoRALinear``, ``apply_lora`` and ``lora_state_dict``, PEFT's
``LoraLayer`` being the reference.

Graded by behaviour: the grader keeps its own copy of every base weight, sets ``lora_A`` and
``lora_B`` to values of its own where a check needs non-zero adapters, and compares the
learner's forward with ``base(x) + x Aᵀ Bᵀ · scaling`` (graders.lora.twin); whole models
(kata 15's Llama block, a small stack: graders.lora.models) against kata 15's functional twin
with effective weights ``W + scaling · B A``. A wrong number is named by the mistake whose
reproduction it matches. Dropout is graded as a property, never seed for seed: the adapter's
part of the output must be what ``lora_B(lora_A(m ⊙ x / (1 − p))) · scaling`` gives for some
0/1 mask ``m``, recovered by least squares (``r = in`` makes ``B A`` injective).
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Mapping
from typing import Any, Callable

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graders.core.compare import (StateDictDiff, expect_close, expect_grads_close,
                                  expect_tracks_grad)
from graders.core.i18n import N_, _
from graders.core.implementation import Implementation
from graders.core.inputs import grads_of, leaf_copies, randn, randomize_, weighted_sum
from graders.core.mistakes import Suspect
from graders.core.modules import construct
from graders.core.report import GradingFailure, describe_inputs, describe_value, title, verdict
from graders.lora import models, twin

__all__ = [
    "test_init_equals_base",
    "test_forward_and_scaling",
    "test_gradients_reach_adapters_only",
    "test_dropout_on_adapter_input",
    "test_merge_unmerge",
    "test_apply_lora_llama_block",
    "test_apply_lora_stack",
    "test_lora_state_dict",
    "test_rslora_scaling",
    "test_merge_llama_block",
]

# (in, out, r, alpha, bias, dtype, x's leading shape): alpha / r, r / alpha and 1 all differ.
LAYER_CASES = (
    (8, 6, 2, 6.0, True, torch.float64, (2, 3)),
    (5, 7, 3, 12.0, False, torch.float64, (7,)),
    (16, 16, 4, 2.0, True, torch.float32, (2, 3)),
)
LLAMA_TARGETS = ("q_proj", "v_proj")
STACK_TARGETS = (("q_proj", "v_proj"), ["mlp.up", "lm_head"])
DROPOUT = 0.3  # not 0.5, where dropping with 1 - p instead of p looks the same


# ------------------------------------------------------------------------------ helpers

def base_linear(fin: int, fout: int, bias: bool, dtype: torch.dtype, seed: int) -> nn.Linear:
    return randomize_(nn.Linear(fin, fout, bias=bias, dtype=dtype), seed)


def frozen_copy(base: nn.Linear) -> tuple[Tensor, Tensor | None]:
    """The grader's own (weight, bias), taken before the learner sees the layer."""
    bias = None if base.bias is None else base.bias.detach().clone()
    return base.weight.detach().clone(), bias


def layer_on(fin: int, fout: int, r: int, alpha: float, bias: bool, dtype: torch.dtype,
             extra: str = "") -> str:
    kind = "" if dtype == torch.float32 else f" {str(dtype)[6:]}"
    return (f"LoRALinear(nn.Linear({fin}, {fout}, bias={bias}){kind}, r={r}, alpha={alpha:g}"
            f"{extra})")


def factors(r: int, fin: int, fout: int, dtype: torch.dtype, seed: int) -> tuple[Tensor, Tensor]:
    """The grader's adapter values (A (r, in), B (out, r)), A well-conditioned."""
    A = randn(r, fin, seed=seed, dtype=dtype) * 0.5
    A[:, :r] += torch.eye(r, dtype=dtype) if r <= fin else 0.0
    return A, randn(fout, r, seed=seed + 1, dtype=dtype) * 0.5


def check_structure(layer: Any, fin: int, fout: int, r: int, dtype: torch.dtype, on: str) -> None:
    """``base`` an nn.Linear; ``lora_A``, ``lora_B`` nn.Linear without bias, of the right
    shapes, in the base's dtype."""
    problems = []
    if not isinstance(getattr(layer, "base", None), nn.Linear):
        problems.append(_("base should be the wrapped nn.Linear, got {value}",
                          value=describe_value(getattr(layer, "base", None))))
    for name, shape in (("lora_A", (r, fin)), ("lora_B", (fout, r))):
        module = getattr(layer, name, None)
        if not isinstance(module, nn.Linear):
            problems.append(_("{name} should be an nn.Linear, got {value}", name=name,
                              value=describe_value(module)))
            continue
        if module.bias is not None:
            problems.append(_("{name} has a bias; it takes bias=False", name=name))
        if tuple(module.weight.shape) != shape:
            problems.append(_("{name}.weight has shape {got}, expected {expected}", name=name,
                              got=tuple(module.weight.shape), expected=shape))
        elif module.weight.dtype != dtype:
            problems.append(_("{name}.weight is {got}; make it in the base's dtype, {expected}",
                              name=name, got=module.weight.dtype, expected=dtype))
    if problems:
        raise verdict(_("LoRALinear's base, lora_A and lora_B"), on, problems)


def new_layer(impl: Implementation, base: nn.Linear, r: int, alpha: float, on: str,
              **kwargs: Any) -> nn.Module:
    layer = construct(impl, "LoRALinear", (base, r, alpha), kwargs, on)
    check_structure(layer, base.in_features, base.out_features, r, base.weight.dtype, on)
    return layer


def expect_like(got: Any, like: Tensor, check: str, on: str) -> None:
    """Fail as :func:`expect_close` does unless ``got`` is a tensor of ``like``'s shape, dtype
    and device (its values are checked otherwise)."""
    if not (isinstance(got, Tensor) and got.shape == like.shape and got.dtype == like.dtype
            and got.device == like.device):
        expect_close(got, like, check, on)


def set_adapter(layer: nn.Module, A: Tensor, B: Tensor) -> None:
    with torch.no_grad():
        layer.lora_A.weight.copy_(A)
        layer.lora_B.weight.copy_(B)


def forward(impl: Implementation, module: nn.Module, x: Tensor, on: str) -> Any:
    return impl.call(module, x, what=_("the forward"), on=on)


def b_nonzero(layers: list[nn.Module]) -> Suspect:
    return Suspect("b-not-zero-initialised", matches=lambda got: any(
        bool(m.lora_B.weight.detach().abs().max() > 0) for m in layers))


def implied_scaling(got: Any, base_out: Tensor, term: Tensor) -> float | None:
    """c when got = base_out + c · term exactly (the learner's scaling), else None."""
    if not (isinstance(got, Tensor) and got.shape == term.shape and got.device == term.device):
        return None
    rest = got.detach().double() - base_out.double()
    t = term.double()
    c = float((rest * t).sum() / (t * t).sum().clamp_min(1e-30))
    fits = (rest - c * t).abs().max() <= 1e-4 * rest.abs().max().clamp_min(1e-12)
    return c if bool(fits) else None


def expect_scaled(got: Any, expected: Tensor, check: str, on: str, suspects: list[Suspect],
                  base_out: Tensor, term: Tensor, scaling: float) -> None:
    """:func:`expect_close`; an unnamed mismatch that is the base plus a multiple of the
    adapter's term says which multiple."""
    try:
        expect_close(got, expected, check, on, suspects)
    except GradingFailure as failure:
        c = None if failure.slug else implied_scaling(got, base_out, term)
        if c is None:
            raise
        raise GradingFailure(str(failure) + "\n  " + _(
            "your output is base(x) + {got} · x Aᵀ Bᵀ: the scaling should be {expected}",
            got=f"{c:.6g}", expected=f"{scaling:.6g}"), slug=None) from None


def scaling_suspects(r: int, alpha: float, use_rslora: bool,
                     predict: Callable[[float], Tensor],
                     switches: tuple[str, ...] = tuple(twin.SCALING_MISTAKES)) -> list[Suspect]:
    return [Suspect(twin.SCALING_MISTAKES[m], lambda m=m: predict(twin.scaling(r, alpha,
                                                                               use_rslora, m)))
            for m in switches]


def trainable_check(model: nn.Module, wrapped: dict[str, nn.Module], on: str) -> None:
    """Exactly the adapters' weights require gradients; the slug says what else does."""
    adapters = {id(p) for m in wrapped.values() for p in (m.lora_A.weight, m.lora_B.weight)}
    bases = {id(m.base.weight) for m in wrapped.values()}
    biases = {id(m.base.bias) for m in wrapped.values() if m.base.bias is not None}
    named = list(model.named_parameters())
    check = _("which parameters train (requires_grad)")
    frozen = [n for n, p in named if id(p) in adapters and not p.requires_grad]
    if frozen:
        raise verdict(check, on, [_("the adapters must train, but these do not: {names}",
                                    names=", ".join(frozen[:6]))])
    extra = [(n, p) for n, p in named if p.requires_grad and id(p) not in adapters]
    if not extra:
        return
    slug = ("base-not-frozen" if any(id(p) in bases for _n, p in extra)
            else "base-bias-not-frozen" if any(id(p) in biases for _n, p in extra)
            else "other-params-trainable")
    count = sum(p.numel() for _n, p in named if p.requires_grad)
    goal = sum(m.lora_A.weight.numel() + m.lora_B.weight.numel() for m in wrapped.values())
    raise verdict(check, on, [
        _("trainable besides the adapters: {names}", names=", ".join(n for n, _p in extra[:6])
          + (", ..." if len(extra) > 6 else "")),
        _("{count} trainable parameters; the adapters alone have {goal} (r · (in + out) each)",
          count=f"{count:,}", goal=f"{goal:,}")], slug)


def applied(impl: Implementation, model: nn.Module, targets, r: int, alpha: float, on: str,
            dropout: float | None = None) -> dict[str, nn.Module]:
    """Run apply_lora and check where the LoRALinear layers went; returns them by name."""
    names = models.linear_names(model)
    kwargs = {} if dropout is None else {"dropout": dropout}
    got = impl.call(impl.attr("apply_lora"), model, targets, r, alpha, what="apply_lora", on=on,
                    **kwargs)
    check = _("apply_lora(model, target_modules, r, alpha)")
    if got is not model:
        raise verdict(check, on, [_("expected the model it was given, changed in place; got "
                                    "{value}", value=describe_value(got))])
    lora_class = impl.attr("LoRALinear")
    wrapped = {n: m for n, m in model.named_modules() if isinstance(m, lora_class)}
    expected = twin.targeted(names, targets)
    if sorted(wrapped) != sorted(expected):
        slug = next((slug for rule, slug in twin.TARGET_MISTAKES.items()
                     if sorted(twin.targeted(names, targets, rule)) == sorted(wrapped)), None)
        raise verdict(check, on, [
            _("expected a LoRALinear at {names}", names=", ".join(expected)),
            _("found one at {names}", names=", ".join(wrapped) or _("no module"))], slug)
    for name, layer in wrapped.items():
        base = getattr(layer, "base", None)
        fin, fout = (base.in_features, base.out_features) if isinstance(base, nn.Linear) else (0, 0)
        check_structure(layer, fin, fout, r, next(model.parameters()).dtype, f"{on}: {name}")
    return wrapped


def adapter_values(wrapped: dict[str, nn.Module], seed: int) -> dict[str, tuple[Tensor, Tensor]]:
    values = {}
    for i, (name, layer) in enumerate(wrapped.items()):
        fout, fin = layer.base.weight.shape
        values[name] = factors(layer.lora_A.weight.shape[0], fin, fout, layer.base.weight.dtype,
                               seed + 2 * i)
        set_adapter(layer, *values[name])
    return values


def weight_after(layer: nn.Module) -> Tensor:
    return layer.base.weight.detach().clone()


def calls_and_warns(impl: Implementation, method: Callable[[], Any], what: str, on: str) -> bool:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        impl.call(method, what=what, on=on)
    return bool(caught)


# ------------------------------------------------------------------------------ core

@pytest.mark.core
@title(N_("LoRALinear at initialisation: the base's output, B zeros, A from kaiming_uniform_"))
def test_init_equals_base(impl: Implementation) -> None:
    for i, (fin, fout, r, alpha, bias, dtype, lead) in enumerate(LAYER_CASES):
        base = base_linear(fin, fout, bias, dtype, seed=10 + i)
        W, b = frozen_copy(base)
        x = randn(*lead, fin, seed=20 + i, dtype=dtype)
        on = layer_on(fin, fout, r, alpha, bias, dtype) + ", " + describe_inputs(x=x)
        layer = new_layer(impl, base, r, alpha, on)
        got = forward(impl, layer, x, on)
        expect_close(got, F.linear(x, W, b), _("the output at initialisation equals base(x)"),
                     on, [b_nonzero([layer])])
        A, B = layer.lora_A.weight.detach(), layer.lora_B.weight.detach()
        check = _("lora_A and lora_B at initialisation")
        if bool(B.abs().max() > 0):
            raise verdict(check, on, [_("lora_B holds non-zero values: PEFT starts B at zeros "
                                        "and A random (kaiming_uniform_), not the reverse")])
        if not bool(A.abs().max() > 0):
            raise verdict(check, on, [_("lora_A is all zeros too: with A = B = 0 the gradient "
                                        "of each factor is zero, so nothing ever trains")],
                          "both-factors-zero")
        bound = 1 / math.sqrt(fin)
        if float(A.abs().max()) > bound * (1 + 1e-6):
            raise verdict(check, on, [_(
                "lora_A's largest entry is {got}, beyond kaiming_uniform_(a=sqrt(5))'s bound "
                "1/sqrt(in_features) = {bound}", got=f"{float(A.abs().max()):.4g}",
                bound=f"{bound:.4g}")])


@pytest.mark.core
@title(N_("LoRALinear's forward with non-zero adapters: base(x) + B A x · alpha / r"))
def test_forward_and_scaling(impl: Implementation) -> None:
    for i, (fin, fout, r, alpha, bias, dtype, lead) in enumerate(LAYER_CASES):
        base = base_linear(fin, fout, bias, dtype, seed=30 + i)
        W, b = frozen_copy(base)
        x = randn(*lead, fin, seed=40 + i, dtype=dtype)
        on = layer_on(fin, fout, r, alpha, bias, dtype) + ", " + describe_inputs(x=x)
        layer = new_layer(impl, base, r, alpha, on)
        A, B = factors(r, fin, fout, dtype, seed=50 + 2 * i)
        set_adapter(layer, A, B)
        s = twin.scaling(r, alpha)
        got = forward(impl, layer, x, on)
        expect_scaled(got, twin.lora_forward(x, W, b, A, B, s),
                      _("the forward with the grader's lora_A and lora_B"), on,
                      scaling_suspects(r, alpha, False,
                                       lambda c: twin.lora_forward(x, W, b, A, B, c)),
                      F.linear(x, W, b), twin.adapter_term(x, A, B, 1.0), s)


@pytest.mark.core
@title(N_("gradients reach lora_A and lora_B only: the base is frozen"))
def test_gradients_reach_adapters_only(impl: Implementation) -> None:
    fin, fout, r, alpha = 6, 5, 2, 4.0
    base = base_linear(fin, fout, True, torch.float64, seed=60)
    W, b = frozen_copy(base)
    on = layer_on(fin, fout, r, alpha, True, torch.float64)
    layer = new_layer(impl, base, r, alpha, on)
    check = _("which parameters train (requires_grad)")
    if layer.base.weight.requires_grad:
        raise verdict(check, on, [_("base.weight requires grad")], "base-not-frozen")
    if layer.base.bias.requires_grad:
        raise verdict(check, on, [_("base.bias requires grad")], "base-bias-not-frozen")
    trainable_check(layer, {"": layer}, on)
    s = twin.scaling(r, alpha)
    for stage, seed in ((_("at initialisation"), 61), (_("with non-zero adapters"), 63)):
        if seed == 63:
            set_adapter(layer, *factors(r, fin, fout, torch.float64, seed=64))
        A, B = layer.lora_A.weight.detach().clone(), layer.lora_B.weight.detach().clone()
        x = randn(2, 3, fin, seed=seed, dtype=torch.float64).requires_grad_(True)
        where = f"{on}, {describe_inputs(x=x)}, {stage}"
        got = forward(impl, layer, x, where)
        expect_tracks_grad({_("the output"): got}, check, where)
        expect_close(got, twin.lora_forward(x.detach(), W, b, A, B, s), _("the forward"), where)
        named = {"x": x, "lora_A.weight": layer.lora_A.weight, "lora_B.weight": layer.lora_B.weight}
        grads = grads_of(weighted_sum([got], seed), named, where)
        x_, A_, B_ = leaf_copies(x, A, B)
        ref = twin.lora_forward(x_, W, b, A_, B_, s)
        expected = grads_of(weighted_sum([ref], seed), {"x": x_, "lora_A.weight": A_,
                                                        "lora_B.weight": B_})
        expect_grads_close(grads, expected, _("the gradients"), where)


@pytest.mark.core
@title(N_("dropout in training mode: on the adapter's input only, none in eval mode"))
def test_dropout_on_adapter_input(impl: Implementation) -> None:
    fin, fout, r, alpha, p = 5, 7, 5, 10.0, DROPOUT
    base = base_linear(fin, fout, True, torch.float64, seed=70)
    W, b = frozen_copy(base)
    x = randn(4, 8, fin, seed=71, dtype=torch.float64)  # 160 entries: some surely dropped
    x = torch.sign(x) * (0.5 + x.abs())  # no entry near 0: kept and dropped look different
    on = (layer_on(fin, fout, r, alpha, True, torch.float64, f", dropout={p}") + ", "
          + describe_inputs(x=x))
    layer = new_layer(impl, base, r, alpha, on, dropout=p)
    A, B = factors(r, fin, fout, torch.float64, seed=72)
    set_adapter(layer, A, B)
    s = twin.scaling(r, alpha)
    base_out, term = F.linear(x, W, b), twin.adapter_term(x, A, B, s)
    # Eval mode first: a wrong scaling is named there, not mistaken for a dropout mistake.
    layer.eval()
    expect_scaled(forward(impl, layer, x, on + _(", eval mode")), base_out + term,
                  _("the forward in eval mode (no dropout)"), on,
                  scaling_suspects(r, alpha, False,
                                   lambda c: base_out + twin.adapter_term(x, A, B, c)),
                  base_out, twin.adapter_term(x, A, B, 1.0), s)
    layer.train()
    got = forward(impl, layer, x, on + _(", training mode"))
    check = _("the forward in training mode")
    expect_like(got, term, check, on)
    y = got.detach()
    z, residual = twin.recovered_input(y - base_out, A, B, s)
    if residual < 1e-8 and twin.is_mask_of(z, x, 1 - p):
        return
    keep = 1 - p
    on_output = (twin.is_mask_of(y, base_out + term, keep)
                 or twin.is_mask_of(y - term, base_out, keep)
                 or twin.is_mask_of(y - base_out, term, keep))
    if bool(torch.allclose(y, base_out + term, rtol=1e-9, atol=1e-9)):
        details = [_("nothing was dropped: in training mode with dropout={p}, a fraction p of "
                     "the adapter's input entries is zeroed (the rest divided by 1 - p)", p=p)]
    else:
        details = [_("y - base(x) is not lora_B(lora_A(m * x / (1 - p))) * scaling for any "
                     "0/1 mask m: dropout acts on the adapter's input only, and the base path "
                     "stays deterministic")]
    raise verdict(check, on, details, "dropout-on-output" if on_output else None)


@pytest.mark.core
@title(N_("merge() and unmerge(): base.weight ± scaling · B @ A, the same output"))
def test_merge_unmerge(impl: Implementation) -> None:
    for i, (fin, fout, r, alpha, bias) in enumerate(((6, 6, 2, 6.0, True),
                                                     (5, 7, 3, 12.0, False))):
        base = base_linear(fin, fout, bias, torch.float64, seed=80 + i)
        W, b = frozen_copy(base)
        x = randn(2, 3, fin, seed=82 + i, dtype=torch.float64)
        on = layer_on(fin, fout, r, alpha, bias, torch.float64) + ", " + describe_inputs(x=x)
        layer = new_layer(impl, base, r, alpha, on)
        A, B = factors(r, fin, fout, torch.float64, seed=84 + 2 * i)
        set_adapter(layer, A, B)
        s = twin.scaling(r, alpha)
        merged = twin.merged_weight(W, A, B, s)
        y0 = twin.lora_forward(x, W, b, A, B, s)
        merge_mistakes = [m for m in twin.MERGE_MISTAKES if m != "transposed" or fin == fout]
        impl.call(layer.merge, what="merge()", on=on)
        expect_close(weight_after(layer), merged, _("base.weight after merge()"), on,
                     [Suspect(twin.MERGE_MISTAKES[m], lambda m=m: twin.merged_weight(W, A, B, s, m))
                      for m in merge_mistakes]
                     # not scaling-missing: its merge is merge-without-scaling's
                     + scaling_suspects(r, alpha, False, lambda c: twin.merged_weight(W, A, B, c),
                                        ("inverted",)))
        expect_close(forward(impl, layer, x, on), y0, _("the forward after merge()"), on,
                     [Suspect("merge-twice-applied",
                              lambda: F.linear(x, merged, b) + twin.adapter_term(x, A, B, s))])
        warned = calls_and_warns(impl, layer.merge, "merge()", on)
        expect_close(weight_after(layer), merged, _("base.weight after a second merge()"), on,
                     [Suspect("merge-twice-applied",
                              lambda: twin.merged_weight(W, A, B, s, "twice"))])
        if not warned:
            raise verdict(_("a second merge()"), on, [_(
                "it changed nothing, as it should, but gave no warning: call warnings.warn(...) "
                "when the layer is already merged")])
        impl.call(layer.unmerge, what="unmerge()", on=on)
        expect_close(weight_after(layer), W, _("base.weight after merge() and unmerge()"), on,
                     [Suspect(slug, lambda m=m: twin.unmerged_weight(W, A, B, s, m))
                      for m, slug in twin.UNMERGE_MISTAKES.items()])
        expect_close(forward(impl, layer, x, on), y0, _("the forward after unmerge()"), on,
                     [Suspect("unmerge-wrong", lambda: F.linear(x, W, b))])
        warned = calls_and_warns(impl, layer.unmerge, "unmerge()", on)
        expect_close(weight_after(layer), W, _("base.weight after a second unmerge()"), on,
                     [Suspect("unmerge-wrong", lambda: W - twin.delta(A, B, s))])
        if not warned:
            raise verdict(_("a second unmerge()"), on, [_(
                "it changed nothing, as it should, but gave no warning: call warnings.warn(...) "
                "when the layer is not merged")])


def llama_on(x: Tensor, targets, r: int, alpha: float) -> str:
    return (_("kata 15's LlamaBlock(16, 4, 2, 24), {x}, target_modules={targets}, r={r}, "
              "alpha={alpha}", x=describe_inputs(x=x), targets=tuple(targets), r=r,
              alpha=f"{alpha:g}"))


def lora_llama(impl: Implementation, seed: int, r: int, alpha: float
               ) -> tuple[nn.Module, dict[str, Tensor], dict[str, nn.Module], Tensor, str]:
    block = models.llama_block(seed)
    state = {k: v.detach().clone() for k, v in block.state_dict().items()}
    x = randn(2, 5, models.CONFIG.dim, seed=seed + 1, dtype=torch.float64)
    on = llama_on(x, LLAMA_TARGETS, r, alpha)
    wrapped = applied(impl, block, LLAMA_TARGETS, r, alpha, on)
    return block, state, wrapped, x, on


@pytest.mark.core
@title(N_("apply_lora on kata 15's Llama block: q_proj and v_proj adapted, the rest frozen"))
def test_apply_lora_llama_block(impl: Implementation) -> None:
    r, alpha = 4, 8.0
    s = twin.scaling(r, alpha)
    block, state, wrapped, x, on = lora_llama(impl, 90, r, alpha)
    trainable_check(block, wrapped, on)
    expect_close(forward(impl, block, x, on), models.llama_expected(state, x),
                 _("the LoRA'd block at initialisation equals the block"), on,
                 [b_nonzero(list(wrapped.values()))])
    adapters = adapter_values(wrapped, seed=92)
    expect_close(forward(impl, block, x, on),
                 models.llama_expected(twin.effective_state(state, adapters, s), x),
                 _("the LoRA'd block with the grader's adapters"), on,
                 scaling_suspects(r, alpha, False, lambda c: models.llama_expected(
                     twin.effective_state(state, adapters, c), x)))
    xg = x.clone().requires_grad_(True)
    got = forward(impl, block, xg, on)
    expect_tracks_grad({_("the output"): got}, _("the gradients"), on)
    named = {"x": xg}
    for name, layer in wrapped.items():
        named[f"{name}.lora_A.weight"] = layer.lora_A.weight
        named[f"{name}.lora_B.weight"] = layer.lora_B.weight
    grads = grads_of(weighted_sum([got], 93), named, on)
    leaves = {name: leaf_copies(A, B) for name, (A, B) in adapters.items()}
    x_ = leaf_copies(x)[0]
    ref = models.llama_expected(twin.effective_state(state, leaves, s), x_)
    ref_named = {"x": x_}
    for name, (A_, B_) in leaves.items():
        ref_named[f"{name}.lora_A.weight"], ref_named[f"{name}.lora_B.weight"] = A_, B_
    expect_grads_close(grads, grads_of(weighted_sum([ref], 93), ref_named),
                       _("the gradients"), on)


@pytest.mark.core
@title(N_("apply_lora on a small stack: PEFT's name matching (kv_proj is not v_proj)"))
def test_apply_lora_stack(impl: Implementation) -> None:
    r, alpha = 2, 3.0
    s = twin.scaling(r, alpha)
    for i, targets in enumerate(STACK_TARGETS):
        model = models.stack(100 + i)
        pristine = copy.deepcopy(model)
        state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        x = randn(2, 3, 8, seed=102 + i, dtype=torch.float64)
        on = _("the stack {names}, {x}, target_modules={targets}, r={r}, alpha={alpha}",
               names="layers.{0,1}.{norm, attn.{q,k,v,kv,o}_proj, mlp.{up,down}}, v_proj, lm_head",
               x=describe_inputs(x=x), targets=targets, r=r, alpha=f"{alpha:g}")
        wrapped = applied(impl, model, targets, r, alpha, on)
        trainable_check(model, wrapped, on)
        adapters = adapter_values(wrapped, seed=104 + 10 * i)
        expected = models.run_with(pristine, twin.effective_state(state, adapters, s), x)
        expect_close(forward(impl, model, x, on), expected,
                     _("the LoRA'd stack with the grader's adapters"), on,
                     scaling_suspects(r, alpha, False, lambda c: models.run_with(
                         pristine, twin.effective_state(state, adapters, c), x)))


@pytest.mark.core
@title(N_("lora_state_dict: exactly the adapters' tensors, under their qualified names"))
def test_lora_state_dict(impl: Implementation) -> None:
    model = models.stack(110)
    on = _("the stack, target_modules={targets}, r=2, alpha=4", targets=STACK_TARGETS[0])
    wrapped = applied(impl, model, STACK_TARGETS[0], 2, 4.0, on)
    adapters = adapter_values(wrapped, seed=112)
    expected = {}
    for name, (A, B) in adapters.items():
        expected[f"{name}.lora_A.weight"], expected[f"{name}.lora_B.weight"] = A, B
    got = impl.call(impl.attr("lora_state_dict"), model, what="lora_state_dict", on=on)
    check = _("lora_state_dict(model)")
    if not isinstance(got, Mapping):
        raise verdict(check, on, [_("expected a dict of tensors, got {value}",
                                    value=describe_value(got))])
    diff = StateDictDiff.of(dict(got), expected)
    if diff:
        raise verdict(check, on, diff.lines())
    for key, value in expected.items():
        if not (isinstance(got[key], Tensor) and got[key].shape == value.shape
                and bool(torch.equal(got[key].detach().to(value.dtype), value))):
            raise verdict(check, on, [_("{key} is {got}, not the adapter's tensor {expected}",
                                        key=key, got=describe_value(got[key]),
                                        expected=describe_value(value))])


# ------------------------------------------------------------------------------ follow-ups

@pytest.mark.followup
@title(N_("rsLoRA: use_rslora=True scales by alpha / sqrt(r)"))
def test_rslora_scaling(impl: Implementation) -> None:
    fin, fout, r, alpha = 8, 6, 4, 8.0
    base = base_linear(fin, fout, True, torch.float64, seed=120)
    W, b = frozen_copy(base)
    x = randn(2, 3, fin, seed=121, dtype=torch.float64)
    on = (layer_on(fin, fout, r, alpha, True, torch.float64, ", use_rslora=True") + ", "
          + describe_inputs(x=x))
    layer = new_layer(impl, base, r, alpha, on, use_rslora=True)
    A, B = factors(r, fin, fout, torch.float64, seed=122)
    set_adapter(layer, A, B)
    s = twin.scaling(r, alpha, use_rslora=True)
    expect_scaled(forward(impl, layer, x, on), twin.lora_forward(x, W, b, A, B, s),
                  _("the forward with use_rslora=True"), on,
                  scaling_suspects(r, alpha, True, lambda c: twin.lora_forward(x, W, b, A, B, c)),
                  F.linear(x, W, b), twin.adapter_term(x, A, B, 1.0), s)


@pytest.mark.followup
@title(N_("merging every adapter of a LoRA'd Llama block, then unmerging them"))
def test_merge_llama_block(impl: Implementation) -> None:
    r, alpha = 4, 8.0
    s = twin.scaling(r, alpha)
    block, state, wrapped, x, on = lora_llama(impl, 130, r, alpha)
    adapters = adapter_values(wrapped, seed=132)
    effective = twin.effective_state(state, adapters, s)
    expected = models.llama_expected(effective, x)
    for name, layer in wrapped.items():
        impl.call(layer.merge, what=f"{name}.merge()", on=on)
        W, (A, B) = state[f"{name}.weight"], adapters[name]
        expect_close(weight_after(layer), effective[f"{name}.weight"],
                     _("{name}.base.weight after merge()", name=name), on,
                     [Suspect(slug, lambda m=m, W=W, A=A, B=B: twin.merged_weight(W, A, B, s, m))
                      for m, slug in twin.MERGE_MISTAKES.items()]
                     + scaling_suspects(r, alpha, False, lambda c, W=W, A=A, B=B:
                                        twin.merged_weight(W, A, B, c), ("inverted",)))
    expect_close(forward(impl, block, x, on), expected, _("the merged block"), on)
    for name, layer in wrapped.items():
        impl.call(layer.unmerge, what=f"{name}.unmerge()", on=on)
        W, (A, B) = state[f"{name}.weight"], adapters[name]
        expect_close(weight_after(layer), W, _("{name}.base.weight after unmerge()", name=name),
                     on, [Suspect(slug, lambda m=m, W=W, A=A, B=B:
                                  twin.unmerged_weight(W, A, B, s, m))
                          for m, slug in twin.UNMERGE_MISTAKES.items()])
    expect_close(forward(impl, block, x, on), expected, _("the unmerged block"), on)
