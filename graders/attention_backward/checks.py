"""Grader for kata 19: ``attention_backward``, the backward pass of softmax attention by hand.

Expected numbers come from PyTorch in float64, cast to the input's dtype (lse to float32 for
float16/bfloat16 inputs, as FlashAttention returns it): the forward from
``F.scaled_dot_product_attention`` and ``torch.logsumexp``, the gradients from autograd
through ``F.scaled_dot_product_attention`` (the grader may use it; the learner may not).
``attention_backward`` is graded with ``out`` and ``lse`` from that correct forward, so
recomputing P by a fresh softmax, or D as rowsum(P ∘ dP), give the same numbers.

What the kata is about is checked by behaviour:
- the tiled memory rule, by recording every tensor ``attention_backward`` creates
  (graders.core.memory, as kata 14 does);
- no autograd inside the backward, by refusing autograd's entry points (by identity, so
  names imported at module level are caught) while ``attention_backward`` or the
  Function's backward runs (graders.core.guard.forbidding);
- what the Function keeps for the backward, by walking ``saved_tensors`` and the ctx's
  attributes (lists, tuples, dicts) before the backward runs.

:func:`by_hand` is the backward by the formulas, in float64, with one switch per
catalogued mistake; a wrong gradient is named by the mistake whose reproduction it matches.
"""

from __future__ import annotations

import contextlib
import functools
import math
from typing import Any, Iterator

import pytest
import torch
from torch import Tensor

from graders.core import guard
from graders.core.compare import GRAD_SLACK, expect_close, expect_tuple
from graders.core.i18n import N_, _
from graders.core.implementation import Implementation
from graders.core.inputs import drawn_cases, randn
from graders.core.memory import CreatedTensors, is_score_sized, memory_limit
from graders.core.mistakes import Suspect
from graders.core.report import describe_inputs, title, verdict
from graders.attention_backward.twin import (
    expected_forward,
    expected_grads,
    forward_suspects,
    grad_suspects,
    GRADS,
)

__all__ = [
    "test_forward_matches_pytorch",
    "test_backward_matches_autograd",
    "test_backward_causal",
    "test_backward_tiled",
    "test_backward_never_builds_the_score_matrix",
    "test_function_matches_autograd",
    "test_function_random_shapes",
    "test_float64",
    "test_gradcheck",
    "test_large_scores",
    "test_half_precision_on_cuda",
]


def slug_for_exception(exc: BaseException) -> str | None:
    """``.view`` on a tensor whose memory does not allow it: a transposed ``grad_out`` (the
    contract allows a non-contiguous one; the usual head merge makes one)."""
    if isinstance(exc, RuntimeError) and "view size is not compatible" in str(exc):
        return "non-contiguous-view"
    return None


# ------------------------------------------------------------------ running learner code


def describe_call(q, k, v, causal: bool, block_size: int | None = None, **more) -> str:
    extra: dict[str, Any] = {} if block_size is None else {"block_size": block_size}
    if causal:
        extra["causal"] = True
    return describe_inputs(q=q, k=k, v=v, **extra, **more)


def run_forward(impl: Implementation, q, k, v, causal: bool, on: str) -> tuple[Any, Any]:
    fn = impl.attr("attention_forward")
    kwargs = {"causal": True} if causal else {}
    result = impl.call(fn, q, k, v, what="attention_forward", on=on, **kwargs)
    return expect_tuple(result, 2, "attention_forward", on, "out, lse")


def run_backward(impl: Implementation, q, k, v, out, lse, grad_out, causal: bool,
                 block_size: int | None, on: str, recorder: CreatedTensors | None = None):
    """The learner's (dq, dk, dv), autograd refused while it runs; arguments left at their
    defaults are not passed. With ``recorder``, every tensor the call creates is recorded."""
    inner = impl.attr("attention_backward")
    forbidden = impl.kata.forbidden

    @functools.wraps(inner)
    def fn(*args, **kwargs):
        with guard.forbidding(forbidden, autograd=True), (recorder or contextlib.nullcontext()):
            return inner(*args, **kwargs)

    kwargs: dict[str, Any] = {} if block_size is None else {"block_size": block_size}
    if causal:
        kwargs["causal"] = True
    result = impl.call(fn, q, k, v, out, lse, grad_out, what="attention_backward", on=on, **kwargs)
    return expect_tuple(result, 3, "attention_backward", on, "dq, dk, dv")


def expect_grads(got: tuple, want: tuple, suspects: list[list[Suspect]], check: str, on: str,
                 names: tuple[str, ...] = GRADS, slack: float = 1.0) -> None:
    for name, g, w, s in zip(names, got, want, suspects):
        if w is not None:
            expect_close(g, w, _("{check}: {name}", check=check, name=name), on, s,
                         slack=GRAD_SLACK * slack)


def check_backward(impl: Implementation, q, k, v, causal: bool = False,
                   block_size: int | None = None, *, transposed_grad: bool = False,
                   slack: float = 1.0, note: str = "") -> None:
    """attention_backward's (dq, dk, dv) against autograd through PyTorch's attention."""
    out, lse = expected_forward(q, k, v, causal)
    grad_out = randn(q.size(0), q.size(1), q.size(-1), q.size(-2), seed=q.size(-2) * 7 + 3,
                     dtype=q.dtype, device=q.device)
    grad_out = grad_out.transpose(-2, -1) if transposed_grad else grad_out.transpose(-2, -1).contiguous()
    more = {"grad_out": "non-contiguous"} if transposed_grad else {}
    on = describe_call(q, k, v, causal, block_size, **more) + note
    got = run_backward(impl, q, k, v, out, lse, grad_out, causal, block_size, on)
    want = expected_grads(q, k, v, grad_out, causal)
    suspects = grad_suspects(q, k, v, out, lse, grad_out, causal, block_size)
    expect_grads(got, want, suspects, _("the gradients attention_backward returns"), on, slack=slack)


def check_forward(impl: Implementation, q, k, v, causal: bool = False, slack: float = 1.0,
                  note: str = "") -> None:
    on = describe_call(q, k, v, causal) + note
    out, lse = run_forward(impl, q, k, v, causal, on)
    want_out, want_lse = expected_forward(q, k, v, causal)
    out_suspects, lse_suspects = forward_suspects(q, k, v, causal)
    expect_close(out, want_out, _("the output out (b, h, n, d)"), on, out_suspects, slack=slack)
    check = _("the log-sum-exp lse (b, h, n)")
    if isinstance(lse, Tensor) and lse.shape == want_lse.shape and lse.dtype != want_lse.dtype:
        raise verdict(check, on, [
            _("expected dtype {expected}, got {got}", expected=want_lse.dtype, got=lse.dtype),
            _("lse is float32 for float16/bfloat16 inputs, as FlashAttention returns it (the "
              "backward rebuilds P = exp(S - lse) from it), and in q's dtype for float32 and "
              "float64"),
        ])
    if isinstance(lse, Tensor) and q.dtype in (torch.float16, torch.bfloat16):
        # float32, judged at the input's precision (scores may be rounded to the half type
        # before the float32 statistics, as a bfloat16 matmul returns them)
        lse, want_lse = lse.to(q.dtype), want_lse.to(q.dtype)
    expect_close(lse, want_lse, check, on, lse_suspects, slack=slack)


# ------------------------------------------------------------------------- the Function


def attention_node(out: Tensor, cls: type) -> Any:
    """The node of ``cls`` (the learner's Function) in out's graph, or None."""
    stack, seen = [out.grad_fn], set()
    while stack and len(seen) < 200:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        forward_cls = getattr(type(node), "_forward_cls", None)
        if isinstance(forward_cls, type) and issubclass(forward_cls, cls):
            return node
        stack.extend(next_node for next_node, _index in node.next_functions)
    return None


def kept_tensors(node: Any) -> list[tuple[str, Tensor]]:
    """Every tensor the ctx keeps: saved_tensors, and its attributes through lists, tuples
    and dicts, as (where, tensor)."""
    found: list[tuple[str, Tensor]] = []
    try:
        saved = node.saved_tensors
    except Exception:  # nothing saved, or already freed
        saved = ()
    found += [(f"ctx.saved_tensors[{i}]", t) for i, t in enumerate(saved) if isinstance(t, Tensor)]

    def walk(value: Any, where: str, depth: int) -> None:
        if isinstance(value, Tensor):
            found.append((where, value))
        elif depth < 4 and isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                walk(item, f"{where}[{i}]", depth + 1)
        elif depth < 4 and isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{where}[{key!r}]", depth + 1)

    for name, value in vars(node).items():
        walk(value, f"ctx.{name}", 0)
    return found


def score_like(shape: tuple[int, ...], n: int, m: int) -> bool:
    """Whether a tensor has a query axis and a separate key axis (P, S, a mask, any layout)."""
    return any(i != j for i, size in enumerate(shape) if size == n
               for j, other in enumerate(shape) if other == m)


def expect_no_probabilities(node: Any, q: Tensor, k: Tensor, check: str, on: str) -> None:
    """No kept tensor is an (n, m) matrix per (batch, head) — the probabilities, the scores
    or a mask, in any layout — where that is more than the max(n, m) * d elements allowed
    (saves-probabilities). Copies of q, k, v, out and lse, stacked or not, pass."""
    n, m, d = q.size(-2), k.size(-2), q.size(-1)
    b_h = q[..., 0, 0].numel()  # the (batch, head) pairs
    per_head = max(n, m) * d
    # q, k, v, out and lse's own shapes are never a mask, whatever their sizes.
    allowed = {tuple(q.shape), tuple(k.shape), tuple(q.shape[:-1])}
    if n * m <= per_head:
        return  # the contract's bound allows an (n, m) tensor here
    for where, t in kept_tensors(node):
        shape = tuple(t.shape)
        # Counted per (batch, head): lse kept as (b, h, n, 1) holds n numbers per pair, an
        # (n, m) matrix n * m of them, whatever b and h are.
        if shape not in allowed and t.numel() >= b_h * n * m and score_like(shape, n, m):
            raise verdict(check, on, [
                _("your forward kept {where}, of shape {shape} ({count} elements, {per} per "
                  "(batch, head)): an (n, m) = ({n}, {m}) matrix per (batch, head)",
                  where=where, shape=shape, count=f"{t.numel():,}",
                  per=f"{t.numel() // b_h:,}", n=n, m=m),
                _("the ctx may keep q, k, v, out and lse: at most max(n, m) * d = {limit} "
                  "elements per (batch, head); recompute P in the backward", limit=per_head),
            ], "saves-probabilities")


@contextlib.contextmanager
def backward_refused_autograd(cls: type, forbidden) -> Iterator[None]:
    """While active, the learner's Function's backward (or vjp) runs with autograd and the
    forbidden built-ins refused: the autograd engine calls it outside the graded call."""
    name = "vjp" if cls.vjp is not torch.autograd.Function.vjp else "backward"
    user_fn = getattr(cls, name)
    own = name in vars(cls)
    raw = vars(cls).get(name)

    def refused(ctx, *grads):
        with guard.forbidding(forbidden, autograd=True):
            return user_fn(ctx, *grads)

    setattr(cls, name, staticmethod(refused))
    try:
        yield
    finally:
        if own:
            setattr(cls, name, raw)
        else:
            delattr(cls, name)


def function_class(impl: Implementation, on: str) -> type:
    cls = impl.attr("Attention")
    if not (isinstance(cls, type) and issubclass(cls, torch.autograd.Function)):
        raise verdict(_("the class Attention"), on,
                      [_("Attention must subclass torch.autograd.Function")])
    return cls


def run_function(impl: Implementation, q, k, v, causal: bool, needs_grad: str, on: str,
                 via_apply: bool = False) -> tuple[Any, Any, tuple]:
    """The learner's attention(q, k, v[, causal]) (or Attention.apply), its Attention node
    and the gradients of sum(out * grad_out) for the inputs named in ``needs_grad``."""
    cls = function_class(impl, on)
    fn = cls.apply if via_apply else impl.attr("attention")
    what = "Attention.apply" if via_apply else "attention"
    leaves = [t.detach().clone().requires_grad_(name in needs_grad) for name, t in zip("qkv", (q, k, v))]
    args = (*leaves, True) if causal else tuple(leaves)
    out = impl.call(fn, *args, what=what, on=on)
    if not isinstance(out, Tensor) or out.grad_fn is None:
        raise verdict(_("the output of {what}", what=what), on, [
            _("expected a tensor that tracks gradients, got {value}",
              value=type(out).__name__ if not isinstance(out, Tensor) else _("one without grad_fn"))])
    node = attention_node(out, cls)
    if node is None:
        raise verdict(_("the output of {what}", what=what), on, [
            _("its graph has no Attention node: autograd differentiated your forward, never "
              "your backward (return Attention.apply(q, k, v, causal))")])
    expect_no_probabilities(node, q, k, _("what Attention's forward keeps in ctx"), on)
    grad_out = randn(*out.shape, seed=11, dtype=q.dtype, device=q.device)
    wanted = [t for t in leaves if t.requires_grad]

    def differentiate(out, grad_out):
        return torch.autograd.grad((out * grad_out).sum(), wanted, allow_unused=True)

    with backward_refused_autograd(type(node)._forward_cls, impl.kata.forbidden):
        got = impl.call(differentiate, out, grad_out, what="Attention.backward", on=on)
    grads = iter(got)
    return out, grad_out, tuple(next(grads) if t.requires_grad else None for t in leaves)


def check_function(impl: Implementation, q, k, v, causal: bool = False, needs_grad: str = "qkv",
                   via_apply: bool = False, slack: float = 1.0, note: str = "") -> None:
    """attention's output and the gradients of its Function against PyTorch's."""
    more = {} if needs_grad == "qkv" else {"requires_grad": needs_grad}
    on = describe_call(q, k, v, causal, **more) + (", Attention.apply" if via_apply else "") + note
    out, grad_out, got = run_function(impl, q, k, v, causal, needs_grad, on, via_apply)
    want_out, want_lse = expected_forward(q, k, v, causal)
    out_suspects, _lse_suspects = forward_suspects(q, k, v, causal)
    expect_close(out, want_out, _("the output of attention"), on, out_suspects, slack=slack)
    want = expected_grads(q, k, v, grad_out, causal)
    want = tuple(w if name in needs_grad else None for name, w in zip("qkv", want))
    suspects = grad_suspects(q, k, v, want_out, want_lse, grad_out, causal, None, lse_wrong=True)
    expect_grads(got, want, suspects, _("the gradients through attention (your backward)"), on,
                 slack=slack)


def qkv(b: int, h: int, n: int, m: int, d: int, seed: int, dtype=torch.float32,
        device="cpu") -> tuple[Tensor, Tensor, Tensor]:
    return (randn(b, h, n, d, seed=seed, dtype=dtype, device=device),
            randn(b, h, m, d, seed=seed + 1, dtype=dtype, device=device),
            randn(b, h, m, d, seed=seed + 2, dtype=dtype, device=device))


# ------------------------------------------------------------------------------ core


@pytest.mark.core
@title(N_("the forward: out and lse"))
def test_forward_matches_pytorch(impl):
    """attention_forward's out against F.scaled_dot_product_attention and lse against
    torch.logsumexp: batch > 1, heads > 1, n != m, causal, m above 64."""
    check_forward(impl, *qkv(2, 2, 6, 9, 4, seed=10))
    check_forward(impl, *qkv(2, 2, 7, 7, 4, seed=20), causal=True)
    check_forward(impl, *qkv(1, 2, 5, 70, 4, seed=30))


@pytest.mark.core
@title(N_("the backward against autograd"))
def test_backward_matches_autograd(impl):
    """attention_backward's dq, dk, dv against autograd through PyTorch's attention, with
    out and lse from a correct forward: n == m, n != m both ways, grad_out non-contiguous."""
    check_backward(impl, *qkv(2, 2, 6, 6, 4, seed=40))
    check_backward(impl, *qkv(2, 2, 5, 9, 4, seed=50), transposed_grad=True)
    check_backward(impl, *qkv(2, 2, 9, 6, 8, seed=60))


@pytest.mark.core
@title(N_("the causal backward"))
def test_backward_causal(impl):
    """causal=True (n == m): query i sees keys 0 .. i, in the recomputed P too."""
    check_backward(impl, *qkv(2, 2, 7, 7, 4, seed=70), causal=True)


@pytest.mark.core
@title(N_("the tiled backward"))
def test_backward_tiled(impl):
    """block_size 1, smaller than n and m (not dividing them), equal to m, larger than m;
    causal with tiles on the diagonal; grad_out non-contiguous (transposed): the answer
    never depends on the tiling."""
    q, k, v = qkv(2, 2, 6, 9, 4, seed=80)
    for block_size in (3, 1, 4, 9, 16):
        check_backward(impl, q, k, v, block_size=block_size)
    # grad_out as the usual head merge hands it over: transposed, not contiguous.
    check_backward(impl, q, k, v, block_size=4, transposed_grad=True)
    q, k, v = qkv(2, 2, 10, 10, 4, seed=90)
    for block_size in (4, 3, 1, 16):
        check_backward(impl, q, k, v, causal=True, block_size=block_size)
    check_backward(impl, q, k, v, causal=True, block_size=3, transposed_grad=True)


@pytest.mark.core
@title(N_("the tiled backward's memory"))
def test_backward_never_builds_the_score_matrix(impl):
    """With a block_size, every tensor attention_backward creates holds at most
    max(n, m) * max(block_size, d) elements per (batch, head): no (n, m) scores,
    probabilities or mask. Only the memory is judged here: the values are the other checks'."""
    for causal, (n, m) in ((False, (40, 48)), (True, (40, 40))):
        q, k, v = qkv(1, 2, n, m, 4, seed=100 + n + m)
        out, lse = expected_forward(q, k, v, causal)
        grad_out = randn(*out.shape, seed=110)
        on = describe_call(q, k, v, causal, 8)
        recorder = CreatedTensors()
        run_backward(impl, q, k, v, out, lse, grad_out, causal, 8, on, recorder)
        limit = memory_limit(q, k, 8)
        numel, shape, op = recorder.largest or (0, (), "")
        if numel > limit:
            b_h = q[..., 0, 0].numel()
            whole = is_score_sized(shape, numel, q, k)
            what = [_("that is an (n, m) = ({n}, {m}) matrix per (batch, head): all the scores, "
                      "probabilities or mask at once", n=n, m=m)] if whole else []
            raise verdict(_("the size of every tensor attention_backward creates"), on, [
                _("your code created a tensor of shape {shape} ({count} elements), made by "
                  "{op}", shape=shape, count=f"{numel:,}", op=op), *what,
                _("the limit is max(n, m) * max(block_size, d) = {limit} elements per (batch, "
                  "head), {total} in all: one tile of the scores at a time",
                  limit=f"{limit // b_h:,}", total=f"{limit:,}"),
                _("recompute each tile's P from lse: exp(q_i k_jᵀ * scale - lse_i), its causal "
                  "mask from the tile's own indices"),
            ], "full-score-matrix" if whole else None)


@pytest.mark.core
@title(N_("the autograd Function against autograd"))
def test_function_matches_autograd(impl):
    """attention(q, k, v[, causal]): the output, then the gradients through your backward,
    against autograd through PyTorch's attention: n != m, causal, m above 64, only some
    inputs requiring grad, Attention.apply called with causal positional. The ctx may not
    keep (n, m) probabilities, scores or masks."""
    check_function(impl, *qkv(2, 2, 6, 9, 4, seed=120))
    check_function(impl, *qkv(2, 2, 7, 7, 4, seed=130), causal=True, via_apply=True)
    check_function(impl, *qkv(1, 2, 5, 70, 4, seed=140))
    check_function(impl, *qkv(2, 2, 6, 9, 4, seed=150), needs_grad="k")
    check_function(impl, *qkv(2, 2, 7, 7, 4, seed=160), causal=True, needs_grad="qv")


def function_case(rng):
    b, h, d = rng.randint(1, 2), rng.randint(1, 3), rng.randint(1, 6)
    causal = rng.random() < 0.4
    n = rng.randint(1, 8)
    m = n if causal else rng.randint(1, 10)
    block_size = rng.choice([None, rng.randint(1, 9)])
    return b, h, n, m, d, causal, block_size, rng.randint(0, 10_000)


@pytest.mark.core
@title(N_("random shapes"))
def test_function_random_shapes(impl):
    """Random shapes, causal and block sizes, drawn from a fixed seed (the same every run):
    attention_backward and the Function."""
    for b, h, n, m, d, causal, block_size, seed in drawn_cases(function_case, count=8):
        check_backward(impl, *qkv(b, h, n, m, d, seed), causal=causal, block_size=block_size)
        check_function(impl, *qkv(b, h, n, m, d, seed + 5), causal=causal)


# ------------------------------------------------------------------------- follow-ups


@pytest.mark.followup
@title(N_("float64"))
def test_float64(impl):
    """float64 in, float64 out: the forward, the backward (tiled and not) and the
    Function, at float64 precision."""
    q, k, v = qkv(2, 2, 6, 9, 4, seed=200, dtype=torch.float64)
    check_forward(impl, q, k, v)
    check_backward(impl, q, k, v, block_size=4)
    check_function(impl, *qkv(2, 2, 7, 7, 4, seed=210, dtype=torch.float64), causal=True)


def finite_differences_agree(fn, inputs: tuple[Tensor, ...], causal: bool, seed: int,
                             eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3) -> bool:
    """torch.autograd.gradcheck's fast mode, float64: along a random direction w of each
    input in turn, uᵀ J w from the backward against (u·f(x + εw) − u·f(x − εw)) / 2ε.
    (Written out: torch.autograd.gradcheck passes grad_outputs to autograd, which makes it
    import sympy, as costly as a third of import torch.)"""
    extra = (True,) if causal else ()
    out = fn(*inputs, *extra)
    u = randn(*out.shape, seed=seed, dtype=out.dtype)
    grads = torch.autograd.grad((out * u).sum(), inputs)
    for index, x in enumerate(inputs):
        w = randn(*x.shape, seed=seed + 1 + index, dtype=x.dtype)
        analytic = float((grads[index] * w).sum())
        with torch.no_grad():
            moved = [[t.detach() for t in inputs] for _sign in (1, -1)]
            moved[0][index] = x.detach() + eps * w
            moved[1][index] = x.detach() - eps * w
            plus, minus = ((fn(*args, *extra) * u).sum() for args in moved)
        numeric = float(plus - minus) / (2 * eps)
        if abs(numeric - analytic) > atol + rtol * abs(numeric):
            return False
    return True


@pytest.mark.followup
@title(N_("finite differences (gradcheck)"))
def test_gradcheck(impl):
    """gradcheck's fast mode in float64 on tiny inputs, with and without causal: your
    backward agrees with finite differences of your forward."""
    for causal, (n, m) in ((False, (3, 4)), (True, (3, 3))):
        q, k, v = (t.requires_grad_(True) for t in qkv(1, 2, n, m, 3, seed=220 + m, dtype=torch.float64))
        on = describe_call(q, k, v, causal)
        fn = impl.attr("attention")
        cls = function_class(impl, on)

        def gradcheck(q, k, v):
            with backward_refused_autograd(cls, impl.kata.forbidden):
                return finite_differences_agree(fn, (q, k, v), causal, seed=230 + m)

        if not impl.call(gradcheck, q, k, v, what=_("attention (finite differences)"), on=on):
            raise verdict(_("finite differences of attention, as torch.autograd.gradcheck takes "
                            "them"), on, [
                _("your backward's gradients disagree with finite differences of your forward")])


def large_scores(n: int, m: int, magnitude: float, seed: int, dtype) -> tuple[Tensor, Tensor, Tensor]:
    """Scores of about ±magnitude (by query) spread by order-1 terms."""
    q, k, v = qkv(2, 2, n, m, 4, seed, torch.float64)
    a = math.sqrt(magnitude * 2)
    q[..., 0] = torch.tensor([1.0, -1.0], dtype=torch.float64).repeat(n)[:n] * a
    k[..., 0] = a
    return q.to(dtype), k.to(dtype), v.to(dtype)


@pytest.mark.followup
@title(N_("large scores"))
def test_large_scores(impl):
    """Scores of about ±100 in float32 (beyond what exp can hold): the forward's lse and
    the backward's recomputed P stay finite and exact."""
    q, k, v = large_scores(6, 9, 100.0, seed=230, dtype=torch.float32)
    note = _("; scores of about +100 and -100")
    check_forward(impl, q, k, v, slack=5.0, note=note)
    check_backward(impl, q, k, v, block_size=4, slack=5.0, note=note)


@pytest.mark.followup
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@title(N_("float16 and bfloat16 on CUDA"))
def test_half_precision_on_cuda(impl):
    """float16 and bfloat16 on the GPU keep their dtype and device; lse is float32
    (FlashAttention's), and the backward is handed a float32 lse."""
    for i, dtype in enumerate((torch.float16, torch.bfloat16)):
        q, k, v = qkv(2, 2, 24, 40, 16, seed=400 + i, dtype=dtype, device="cuda")
        check_forward(impl, q, k, v)
        check_backward(impl, q, k, v, block_size=16)
        check_function(impl, *qkv(2, 2, 24, 24, 16, seed=410 + i, dtype=dtype, device="cuda"),
                       causal=True)
