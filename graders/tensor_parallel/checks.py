"""Grader for kata 31: Megatron's tensor-parallel attention on torch.distributed (gloo, CPU).

Each check runs the learner's layer on 1, 2 or 4 forked ranks (graders.tensor_parallel.ranks),
every rank loading the same nn.MultiheadAttention built from a seed, and compares every rank's
report with that module: the shards after load_full_state_dict, the output, each shard's
gradient (the slice of the full module's), x.grad, and the collectives the rank called. A
mismatch is named when a rank's numbers equal what graders.tensor_parallel.twin computes with
one mistake's switch. One run per world size serves its four checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graders.core.compare import expect_close, shape_mismatches
from graders.core.i18n import N_, _
from graders.core.implementation import Implementation
from graders.core.inputs import bool_mask, randn
from graders.core.mistakes import Suspect
from graders.core.report import describe_inputs, describe_value, title, verdict
from graders.tensor_parallel import ranks, twin
from graders.tensor_parallel.ranks import RECORDER, RankFailed, learner_call, sendable

__all__ = [
    "test_column_parallel_linear",
    "test_row_parallel_linear",
    "test_attention_world_size_1",
    "test_shards_world_size_2",
    "test_forward_world_size_2",
    "test_gradients_world_size_2",
    "test_collectives_world_size_2",
    "test_shards_world_size_4",
    "test_forward_world_size_4",
    "test_gradients_world_size_4",
    "test_collectives_world_size_4",
    "test_without_bias",
    "test_linears_world_size_4",
]

E, H, BATCH, SEQ = 16, 4, 2, 5  # head width 4: it splits in 2 and in 4 (local-heads-wrong)
COLUMN = ("ColumnParallelLinear", 8, 12)  # (class, in_features, out_features)
ROW = ("RowParallelLinear", 12, 8)
GATHERS = ("all_gather", "all_gather_into_tensor", "_all_gather_base", "all_gather_object",
           "all_gather_coalesced")


# ------------------------------------------------------------------------------ the cases

@dataclass
class AttentionCase:
    """One graded input, the same on every rank, with the full module's answers."""

    on: str
    dtype: torch.dtype
    bias: bool
    sd: dict
    x: Tensor
    mask: Tensor | None
    is_causal: bool
    w: Tensor  # the loss is (out * w).sum() on every rank
    _expected: dict = field(default_factory=dict)
    _twins: dict = field(default_factory=dict)

    def expected(self) -> dict:
        """nn.MultiheadAttention's output and gradients (in the learner's parameter names)."""
        if not self._expected:
            mha = nn.MultiheadAttention(E, H, batch_first=True, bias=self.bias, dtype=self.dtype)
            mha.load_state_dict(self.sd)
            x = self.x.clone().requires_grad_()
            mask = twin.causal(SEQ) if self.is_causal else self.mask
            out, _weights = mha(x, x, x, attn_mask=mask, need_weights=False)
            (out * self.w).sum().backward()
            grads = {name: p.grad for name, p in mha.named_parameters()}
            self._expected.update(out=out.detach(), grads=grads, x=x.grad)
        return self._expected

    def expected_grads(self, ws: int, rank: int) -> dict:
        return twin.attention_shards(self.expected()["grads"], E, H, ws, rank)

    def twin(self, ws: int, layout: str = "correct", mode: str = "correct") -> list[dict]:
        key = (ws, layout, mode)
        if key not in self._twins:
            self._twins[key] = twin.attention_ranks(self.sd, E, H, ws, self.x, self.mask,
                                                    self.is_causal, self.w, layout, mode)
        return self._twins[key]


def state_dict(seed: int, dtype: torch.dtype, bias: bool = True) -> dict:
    """nn.MultiheadAttention(E, H)'s state dict with random weights and biases (its own init
    zeroes the biases, which would hide a bias added on every rank)."""
    sd = {"in_proj_weight": randn(3 * E, E, seed=seed, dtype=dtype) / E ** 0.5,
          "out_proj.weight": randn(E, E, seed=seed + 1, dtype=dtype) / E ** 0.5}
    if bias:
        sd["in_proj_bias"] = randn(3 * E, seed=seed + 2, dtype=dtype) * 0.5
        sd["out_proj.bias"] = randn(E, seed=seed + 3, dtype=dtype) * 0.5
    return sd


def attention_case(seed: int, dtype: torch.dtype, mask: str = "", bias: bool = True
                   ) -> AttentionCase:
    x = randn(BATCH, SEQ, E, seed=seed + 10, dtype=dtype)
    attn_mask = None
    if mask == "bool":
        attn_mask = bool_mask(SEQ, SEQ, seed=seed + 11)
    elif mask == "float":
        blocked = bool_mask(SEQ, SEQ, seed=seed + 12)
        attn_mask = randn(SEQ, SEQ, seed=seed + 13, dtype=dtype).masked_fill(blocked,
                                                                              float("-inf"))
    on = describe_inputs(x=x, attn_mask=attn_mask)
    if mask == "causal":
        on += ", is_causal=True"
    if not bias:
        on += ", bias=False"
    return AttentionCase(on, dtype, bias, state_dict(seed, dtype, bias), x, attn_mask,
                         mask == "causal", randn(BATCH, SEQ, E, seed=seed + 14, dtype=dtype))


def attention_cases(ws: int) -> list[AttentionCase]:
    if ws == 1:
        return [attention_case(100, torch.float64, "bool"),
                attention_case(110, torch.float64, "causal")]
    return [attention_case(200 + ws, torch.float64),
            attention_case(210 + ws, torch.float64, "bool"),
            attention_case(220 + ws, torch.float32, "float"),
            attention_case(230 + ws, torch.float64, "causal")]


@dataclass
class LinearCase:
    kind: str  # "column" or "row"
    on: str
    in_features: int
    out_features: int
    bias: bool
    weight: Tensor  # the full weight (out, in) and bias (out,)
    full_bias: Tensor | None
    x: Tensor  # the full input (b, n, in); a row-parallel rank gets its columns
    w: Tensor  # the full output's loss weights (b, n, out)

    @property
    def name(self) -> str:
        return COLUMN[0] if self.kind == "column" else ROW[0]

    def expected(self, ws: int, rank: int) -> dict:
        """nn.Linear's numbers, as rank ``rank`` holds them."""
        x = self.x.clone().requires_grad_()
        weight = self.weight.clone().requires_grad_()
        bias = self.full_bias.clone().requires_grad_() if self.bias else None
        out = F.linear(x, weight, bias)
        (out * self.w).sum().backward()
        if self.kind == "column":
            rows = twin.rows_of(rank, ws, self.out_features)
            grads = {"weight": weight.grad[rows]}
            if bias is not None:
                grads["bias"] = bias.grad[rows]
            return {"out": out.detach()[..., rows], "grads": grads, "x": x.grad}
        cols = twin.rows_of(rank, ws, self.in_features)
        grads = {"weight": weight.grad[:, cols]}
        if bias is not None:
            grads["bias"] = bias.grad
        return {"out": out.detach(), "grads": grads, "x": x.grad[..., cols]}

    def shapes(self, ws: int) -> dict:
        """The parameters' shapes on a rank, and the other axis's (sharded-wrong-axis)."""
        o, i = self.out_features, self.in_features
        right = ({"weight": (o // ws, i), "bias": (o // ws,)} if self.kind == "column"
                 else {"weight": (o, i // ws), "bias": (o,)})
        wrong = {"weight": (o, i // ws)} if self.kind == "column" else {"weight": (o // ws, i)}
        if not self.bias:
            del right["bias"]
        return {"right": right, "wrong": wrong}

    def twin(self, ws: int, mode: str) -> list[dict]:
        simulate = twin.column_ranks if self.kind == "column" else twin.row_ranks
        return simulate(self.weight, self.full_bias if self.bias else None, ws, self.x, self.w,
                        mode)


def linear_case(kind: str, seed: int, bias: bool = True) -> LinearCase:
    _name, in_f, out_f = COLUMN if kind == "column" else ROW
    x = randn(BATCH, 3, in_f, seed=seed, dtype=torch.float64)
    return LinearCase(kind, describe_inputs(x=x) + ("" if bias else ", bias=False"), in_f, out_f,
                      bias, randn(out_f, in_f, seed=seed + 1, dtype=torch.float64) / in_f ** 0.5,
                      randn(out_f, seed=seed + 2, dtype=torch.float64) * 0.5, x,
                      randn(BATCH, 3, out_f, seed=seed + 3, dtype=torch.float64))


# ------------------------------------------------------------------------------ in each rank

def rank_words(rank: int, ws: int) -> str:
    return _(", world size {ws}, rank {rank}", ws=ws, rank=rank)


def grade_case(impl: Implementation, case: Any, rank: int, ws: int) -> dict:
    """Run one case in this rank: build, load, forward, backward; report what happened."""
    RECORDER.start()
    on = case.on + rank_words(rank, ws)
    if isinstance(case, AttentionCase):
        kwargs = {} if case.bias else {"bias": False}
        layer = learner_call(impl, impl.attr("TensorParallelAttention"), E, H,
                             what=f"TensorParallelAttention({E}, {H})", on=on, **kwargs)
        expect_module(layer, "TensorParallelAttention", on)
        layer = learner_call(impl, layer.to, case.dtype, what=".to", on=on)
        RECORDER.phase = "load"
        load = getattr(layer, "load_full_state_dict", None)
        if not callable(load):
            raise RankFailed(verdict(_("load_full_state_dict"), on, [
                _("TensorParallelAttention has no method load_full_state_dict(state_dict)")]))
        learner_call(impl, load, {k: v.clone() for k, v in case.sd.items()},
                     what="load_full_state_dict", on=on)
        params = {n: p.detach().clone() for n, p in layer.named_parameters()}
        x = case.x.clone().requires_grad_()
        w = case.w
        kwargs = {}
        if case.mask is not None:
            kwargs["attn_mask"] = case.mask.clone()
        if case.is_causal:
            kwargs["is_causal"] = True
        watched = [x, kwargs["attn_mask"]] if case.mask is not None else [x]
    else:
        kwargs = {} if case.bias else {"bias": False}
        layer = learner_call(impl, impl.attr(case.name), case.in_features, case.out_features,
                             what=f"{case.name}({case.in_features}, {case.out_features})", on=on,
                             **kwargs)
        expect_module(layer, case.name, on)
        layer = learner_call(impl, layer.to, torch.float64, what=".to", on=on)
        shapes = {n: tuple(p.shape) for n, p in layer.named_parameters()}
        if shapes != case.shapes(ws)["right"]:
            return {"shapes": shapes, "calls": RECORDER.calls}
        full = case.weight, case.full_bias
        with torch.no_grad():
            if case.kind == "column":
                rows = twin.rows_of(rank, ws, case.out_features)
                layer.weight.copy_(full[0][rows])
                if case.bias:
                    layer.bias.copy_(full[1][rows])
            else:
                layer.weight.copy_(full[0][:, twin.rows_of(rank, ws, case.in_features)])
                if case.bias:
                    layer.bias.copy_(full[1])
        params = {}
        if case.kind == "column":
            x, w = case.x.clone().requires_grad_(), case.w[..., rows]
        else:
            cols = twin.rows_of(rank, ws, case.in_features)
            x, w = case.x[..., cols].clone().requires_grad_(), case.w
        kwargs, watched = {}, [x]
    before = [(t, t._version, t.detach().clone()) for t in watched]
    RECORDER.watch(watched)
    RECORDER.phase = "forward"
    what = "forward" if isinstance(case, AttentionCase) else f"{case.name}.forward"
    out = learner_call(impl, lambda: layer(x, **kwargs), what=what, on=on)
    for (tensor, version, copy), name in zip(before, ("`x`", "`attn_mask`")):
        changed = tensor._version != version or not torch.equal(
            torch.nan_to_num(tensor.detach()), torch.nan_to_num(copy))
        if changed or RECORDER.in_place:
            detail = (_("it modified {which} in place; leave inputs untouched (work on new "
                        "tensors, avoid in-place ops like masked_fill_ or +=)", which=name)
                      if changed else
                      _("it handed the caller's {which} to {collective}, which writes into "
                        "it: all-reduce a new tensor", which=name,
                        collective=f"dist.{RECORDER.in_place}"))
            raise RankFailed(verdict(what, on, [detail], "input-modified-in-place"))
    ran_backward = (isinstance(out, Tensor) and out.shape == x.shape[:-1] + w.shape[-1:]
                    and out.dtype == x.dtype and out.device == x.device and out.requires_grad)
    if ran_backward:
        RECORDER.phase = "backward"
        learner_call(impl, lambda: (out * w).sum().backward(), what=_("backward"), on=on)
    RECORDER.phase = "done"
    grads = {n: (p.grad.detach().clone() if p.grad is not None else None)
             for n, p in layer.named_parameters()}
    return {"params": params, "out": sendable(out),
            "tracks": isinstance(out, Tensor) and out.requires_grad,
            "backward": ran_backward, "grads": grads,
            "x": None if x.grad is None else x.grad.detach().clone(), "calls": RECORDER.calls}


def expect_module(layer: Any, name: str, on: str) -> None:
    if not isinstance(layer, nn.Module):
        raise RankFailed(verdict(name, on, [_("expected an nn.Module, got {value}",
                                              value=describe_value(layer))]))


# ------------------------------------------------------------------------------ in the grader

def run_of(impl: Implementation, key: str, ws: int, cases: list) -> ranks.Run:
    """The run of ``cases`` on ``ws`` ranks, once per implementation and key."""
    for name in ("ColumnParallelLinear", "RowParallelLinear", "TensorParallelAttention"):
        impl.attr(name)  # a missing name or a file that does not import: said here, once
    runs = impl.__dict__.setdefault("_tp_runs", {})
    if (key, ws) not in runs:
        runs[key, ws] = (cases, ranks.run(impl, ws, cases, grade_case))
    cases, run = runs[key, ws]
    return run


def reports(impl: Implementation, key: str, ws: int, cases: list,
            indices: tuple[int, ...] | None = None):
    """(index, case, rank, report) for the cases ``indices`` (default: all) on every rank; the
    run's failure when one of them did not complete on every rank."""
    run = run_of(impl, key, ws, cases)
    cases = impl.__dict__["_tp_runs"][key, ws][0]
    indices = tuple(range(len(cases))) if indices is None else indices
    complete = all(i in run.reports[rank] for i in indices for rank in range(ws))
    if run.failure is not None and not complete:
        raise run.waited_out(impl)
    for index in indices:
        for rank in range(ws):
            yield index, cases[index], rank, run.reports[rank][index]


def on_rank(case: Any, rank: int, ws: int) -> str:
    return case.on + rank_words(rank, ws)


def expect_only_all_reduces(report: dict, check: str, on: str,
                            phases: tuple[str, ...] = ranks.PHASES) -> None:
    """Fail on any collective but all_reduce (all_gather: all-gather-instead-of-reduce)."""
    for phase in phases:
        calls = report["calls"][phase]
        for name, _op in calls:
            if name != "all_reduce":
                slug = "all-gather-instead-of-reduce" if name in GATHERS else None
                raise verdict(check, on, [_(
                    "your layer called dist.{name} (in {phase}); tensor parallelism here needs "
                    "only two all-reduces: one in the forward, one in the backward",
                    name=name, phase=phase)], slug)


def check_output(case: Any, rank: int, ws: int, report: dict, check: str) -> None:
    on = on_rank(case, rank, ws)
    expect_only_all_reduces(report, check, on)
    if "shapes" in report:
        expect_shapes(case, ws, report, on)
    if isinstance(case, AttentionCase):
        expected = case.expected()["out"]
        suspects = [Suspect(slug, lambda m=m: case.twin(ws, mode=m)[rank]["out"])
                    for m, slug in twin.MODES.items()]
        suspects += [Suspect(slug, lambda lay=lay: case.twin(ws, layout=lay)[rank]["out"])
                     for lay, slug in twin.LAYOUTS.items()]
    else:
        expected = case.expected(ws, rank)["out"]
        suspects = [Suspect(slug, lambda m=m: case.twin(ws, m)[rank]["out"])
                    for m, slug in twin.MODES.items() if not m.startswith("heads")]
    expect_close(report["out"], expected, check, on, suspects)


def check_gradients(case: Any, rank: int, ws: int, report: dict, check: str) -> None:
    check_output(case, rank, ws, report, _("the output"))
    on = on_rank(case, rank, ws)
    if not report["tracks"]:
        raise verdict(check, on, [_(
            "the output does not track gradients: is it detached, computed under "
            "torch.no_grad(), or rebuilt with torch.tensor / .data / .item()?")])
    if isinstance(case, AttentionCase):
        expected = dict(case.expected_grads(ws, rank), x=case.expected()["x"])

        def predicted(switch: str, kind: str, name: str) -> Tensor:
            ranks_ = case.twin(ws, **{kind: switch})
            return ranks_[rank]["x"] if name == "x" else ranks_[rank]["grads"][name]

        switches = [(m, "mode", s) for m, s in twin.MODES.items()]
        switches += [(lay, "layout", s) for lay, s in twin.LAYOUTS.items()]
    else:
        expected = dict(case.expected(ws, rank)["grads"], x=case.expected(ws, rank)["x"])

        def predicted(switch: str, kind: str, name: str) -> Tensor:
            ranks_ = case.twin(ws, switch)
            return ranks_[rank]["x"] if name == "x" else ranks_[rank]["grads"][name]

        switches = [(m, "mode", s) for m, s in twin.MODES.items() if not m.startswith("heads")]
    got = dict(report["grads"], x=report["x"])
    for name, exp in expected.items():
        what = _("{check}: gradient of {name}", check=check, name=name)
        grad = got.get(name)
        if grad is None:
            raise verdict(what, on, [
                _("expected a gradient {value}, got None", value=describe_value(exp)),
                _("is part of the computation detached, done under torch.no_grad(), or done "
                  "with .data / .item()?")])
        suspects = [Suspect(slug, lambda s=s, k=k, n=name: predicted(s, k, n))
                    for s, k, slug in switches]
        expect_close(grad, exp, what, on, suspects, slack=10.0)


def expect_shapes(case: Any, ws: int, report: dict, on: str) -> None:
    """A linear layer whose parameters have the wrong shapes (the other axis: named)."""
    shapes = case.shapes(ws)
    got = report["shapes"]
    wrong = all(got.get(n) == s for n, s in shapes["wrong"].items())
    raise verdict(_("the parameters of {name}({i}, {o}) at world size {ws}", name=case.name,
                    i=case.in_features, o=case.out_features, ws=ws), on,
                  shape_mismatches(got, shapes["right"]),
                  "sharded-wrong-axis" if wrong else None)


def check_collectives(case: Any, rank: int, ws: int, report: dict, check: str,
                      forward: int, backward: int) -> None:
    """``forward`` and ``backward`` all-reduces expected (at world size 1: at most that)."""
    on = on_rank(case, rank, ws)
    expect_only_all_reduces(report, check, on)
    calls = report["calls"]
    for phase in ("construct", "load"):
        if calls[phase]:
            raise verdict(check, on, [_("your layer called dist.{name} in {phase}; building "
                                        "and loading need no collective",
                                        name=calls[phase][0][0], phase=phase)])
    for phase, wanted, slug in (("forward", forward, "output-not-reduced"),
                                ("backward", backward, "missing-backward-all-reduce")):
        count = len(calls[phase])
        if count == wanted or (ws == 1 and count < wanted):
            bad_op = next((op for _name, op in calls[phase] if op not in ("", "SUM")), None)
            if bad_op:
                raise verdict(check, on, [_("an all_reduce in {phase} used op {op}; sum the "
                                            "partial results (ReduceOp.SUM)", phase=phase,
                                            op=bad_op)])
            continue
        details = [_("expected {wanted} all_reduce call(s) in {phase} on this rank, got {count}",
                     wanted=wanted, phase=phase, count=count)]
        if phase == "backward" and count > wanted:
            details.append(_("apply f once to x, shared by q_proj, k_proj and v_proj, and "
                             "give g an identity backward"))
        raise verdict(check, on, details, slug if count == 0 and ws > 1 else None)


# ------------------------------------------------------------------------------ the checks

def shards(impl: Implementation, ws: int) -> None:
    check = _("the shards after load_full_state_dict")
    seen = set()
    for index, case, rank, report in reports(impl, "attention", ws, attention_cases(ws)):
        if rank in seen:
            continue
        seen.add(rank)
        on = on_rank(case, rank, ws)
        expect_only_all_reduces(report, check, on, phases=("construct", "load"))
        expected = twin.attention_shards(case.sd, E, H, ws, rank)
        got = report["params"]
        shapes = {n: tuple(t.shape) for n, t in got.items()}
        right = {n: tuple(t.shape) for n, t in expected.items()}
        if shapes != right:
            transposed = any(shapes.get(n) == s[::-1] != s for n, s in right.items())
            raise verdict(check, on, shape_mismatches(shapes, right),
                          "sharded-wrong-axis" if transposed else None)
        for name, exp in expected.items():
            suspects = [Suspect(slug, lambda lay=lay, n=name: twin.attention_shards(
                case.sd, E, H, ws, rank, lay)[n]) for lay, slug in twin.LAYOUTS.items()]
            expect_close(got[name], exp, _("{check}: {name}", check=check, name=name), on,
                         suspects)


def forward(impl: Implementation, ws: int) -> None:
    for index, case, rank, report in reports(impl, "attention", ws, attention_cases(ws)):
        check_output(case, rank, ws, report, _("the output on every rank"))


def gradients(impl: Implementation, ws: int) -> None:
    for index, case, rank, report in reports(impl, "attention", ws, attention_cases(ws)):
        check_gradients(case, rank, ws, report, _("the gradients on every rank"))


def collectives(impl: Implementation, ws: int) -> None:
    for index, case, rank, report in reports(impl, "attention", ws, attention_cases(ws)):
        check_collectives(case, rank, ws, report, _("the collectives each rank called"), 1, 1)


def linear_run(ws: int) -> list:
    """The linears' run on ``ws`` ranks: both layers, and at world size 2 the follow-ups
    without bias (the core checks read only the first two cases)."""
    cases = [linear_case("column", 300 + ws), linear_case("row", 301 + ws)]
    if ws == 2:
        cases += [linear_case("column", 310, bias=False), linear_case("row", 311, bias=False),
                  attention_case(400, torch.float64, "bool", bias=False)]
    return cases


def linear(impl: Implementation, index: int, ws: int) -> None:
    for _index, case, rank, report in reports(impl, "linears", ws, linear_run(ws), (index,)):
        counts = (0, 1) if case.kind == "column" else (1, 0)
        check = _("{name}({i}, {o})", name=case.name, i=case.in_features, o=case.out_features)
        check_gradients(case, rank, ws, report, check)
        check_collectives(case, rank, ws, report, check, *counts)


@pytest.mark.core
@title(N_("ColumnParallelLinear on 2 ranks: this rank's rows, f before the local linear"))
def test_column_parallel_linear(impl: Implementation) -> None:
    linear(impl, 0, 2)


@pytest.mark.core
@title(N_("RowParallelLinear on 2 ranks: this rank's columns, g after the matmul, the bias once"))
def test_row_parallel_linear(impl: Implementation) -> None:
    linear(impl, 1, 2)


@pytest.mark.core
@title(N_("TensorParallelAttention on 1 rank equals nn.MultiheadAttention"))
def test_attention_world_size_1(impl: Implementation) -> None:
    for index, case, rank, report in reports(impl, "attention", 1, attention_cases(1)):
        check_gradients(case, rank, 1, report, _("the gradients"))
        check_collectives(case, rank, 1, report, _("the collectives"), 1, 1)


@pytest.mark.core
@title(N_("load_full_state_dict on 2 ranks keeps each rank's heads"))
def test_shards_world_size_2(impl: Implementation) -> None:
    shards(impl, 2)


@pytest.mark.core
@title(N_("the output on 2 ranks equals nn.MultiheadAttention's, masks and is_causal"))
def test_forward_world_size_2(impl: Implementation) -> None:
    forward(impl, 2)


@pytest.mark.core
@title(N_("every shard's gradient and x.grad on 2 ranks"))
def test_gradients_world_size_2(impl: Implementation) -> None:
    gradients(impl, 2)


@pytest.mark.core
@title(N_("one all-reduce forward and one backward on each of 2 ranks, nothing else"))
def test_collectives_world_size_2(impl: Implementation) -> None:
    collectives(impl, 2)


@pytest.mark.core
@title(N_("load_full_state_dict on 4 ranks keeps each rank's heads"))
def test_shards_world_size_4(impl: Implementation) -> None:
    shards(impl, 4)


@pytest.mark.core
@title(N_("the output on 4 ranks equals nn.MultiheadAttention's, masks and is_causal"))
def test_forward_world_size_4(impl: Implementation) -> None:
    forward(impl, 4)


@pytest.mark.core
@title(N_("every shard's gradient and x.grad on 4 ranks"))
def test_gradients_world_size_4(impl: Implementation) -> None:
    gradients(impl, 4)


@pytest.mark.core
@title(N_("one all-reduce forward and one backward on each of 4 ranks, nothing else"))
def test_collectives_world_size_4(impl: Implementation) -> None:
    collectives(impl, 4)


@pytest.mark.followup
@title(N_("bias=False: the two linears and the attention on 2 ranks"))
def test_without_bias(impl: Implementation) -> None:
    linear(impl, 2, 2)
    linear(impl, 3, 2)
    for _index, case, rank, report in reports(impl, "linears", 2, linear_run(2), (4,)):
        check_gradients(case, rank, 2, report, _("the gradients"))
        check_collectives(case, rank, 2, report, _("the collectives"), 1, 1)


@pytest.mark.followup
@title(N_("ColumnParallelLinear and RowParallelLinear on 4 ranks"))
def test_linears_world_size_4(impl: Implementation) -> None:
    linear(impl, 0, 4)
    linear(impl, 1, 4)
