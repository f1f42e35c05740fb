"""Kata 19's two behavioural checks outside any kata run: autograd refused by call while a
hand-written backward runs (every entry point, however imported), and the grader's
finite-difference check agreeing with torch.autograd.gradcheck."""

from __future__ import annotations

import importlib.util

import pytest
import torch
import torch.autograd.functional as autograd_functional
import torch.func
from torch.autograd import grad as imported_grad

from graders.attention_backward import checks as grader
from graders.core import guard
from graders.core.registry import get

x = torch.linspace(-1, 1, 3, dtype=torch.float64)

AUTOGRAD_CALLS = {
    "torch.autograd.grad": lambda: torch.autograd.grad((y := x.clone().requires_grad_()).sin().sum(), y),
    "grad imported at module level": lambda: imported_grad((y := x.clone().requires_grad_()).sin().sum(), y),
    "torch.autograd.backward": lambda: torch.autograd.backward(x.clone().requires_grad_().sin().sum()),
    "Tensor.backward": lambda: x.clone().requires_grad_().sin().sum().backward(),
    "torch.func.vjp": lambda: torch.func.vjp(torch.sin, x)[1](torch.ones_like(x)),
    "torch.func.grad": lambda: torch.func.grad(lambda t: t.sin().sum())(x),
    "torch.func.grad_and_value": lambda: torch.func.grad_and_value(lambda t: t.sin().sum())(x),
    "torch.func.jacrev": lambda: torch.func.jacrev(torch.sin)(x),
    "torch.func.jacfwd": lambda: torch.func.jacfwd(torch.sin)(x),
    "torch.autograd.functional.vjp": lambda: autograd_functional.vjp(torch.sin, x, torch.ones_like(x)),
    "torch.autograd.functional.jacobian": lambda: autograd_functional.jacobian(torch.sin, x),
}


@pytest.mark.parametrize("call", AUTOGRAD_CALLS.values(), ids=AUTOGRAD_CALLS.keys())
def test_every_autograd_entry_point_is_refused_inside_and_free_outside(call):
    call()  # outside: autograd works
    with pytest.raises(guard.ForbiddenCall) as refused:
        with guard.forbidding((), autograd=True):
            call()
    assert refused.value.slug == "autograd-in-backward"


def test_plain_arithmetic_and_forbidden_builtins_inside_the_refusal():
    with guard.forbidding(get("19").forbidden, autograd=True):
        assert torch.allclose(torch.softmax(x, 0).sum(), torch.tensor(1.0, dtype=torch.float64))
        with pytest.raises(guard.ForbiddenCall) as refused:
            torch.nn.functional.scaled_dot_product_attention(*(torch.ones(1, 2, 3) for _ in range(3)))
    assert refused.value.slug == "forbidden-builtin"


def reference_attention():
    kata = get("19")
    spec = importlib.util.spec_from_file_location("reference_19_guard", kata.solution_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("causal", [False, True])
def test_finite_differences_agree_with_torch_gradcheck(causal):
    module = reference_attention()
    q, k, v = (t.requires_grad_() for t in grader.qkv(1, 2, 3, 3, 3, seed=5, dtype=torch.float64))
    args = (q, k, v, True) if causal else (q, k, v)
    assert torch.autograd.gradcheck(module.attention, args, fast_mode=True)
    assert grader.finite_differences_agree(module.attention, (q, k, v), causal, seed=9)

    def wrong_dq(ctx, grad_out):  # dq off by half: both checks say so
        q, k, v, out, lse = ctx.saved_tensors
        dq, dk, dv = module.attention_backward(q, k, v, out, lse, grad_out, ctx.causal)
        return dq * 1.5, dk, dv, None

    module.Attention.backward = staticmethod(wrong_dq)
    assert not torch.autograd.gradcheck(module.attention, args, fast_mode=True, raise_exception=False)
    assert not grader.finite_differences_agree(module.attention, (q, k, v), causal, seed=9)
