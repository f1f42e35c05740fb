"""Grader for kata 23: multi-head latent attention (DeepSeek-V2's MLA), naive and absorbed.

Expected numbers come from :mod:`graders.mla.twin` (float64, the contract's formulas with
random weights of scale 0.3), which also reproduces each catalogued mistake to name it.
The learner's module loads the twin's state dict with strict=True (Hugging Face's names);
a sequence is fed in one call and in splits (a prefill, then chunks; the two paths mixed),
each output compared with the one-call output and each returned cache (c_kv, k_rope) with
the normalised latent and the rotated key of every position so far. The absorbed path's
memory rule is recorded at the ATen level (graders.core.memory.CreatedTensors, the scores
aside), per batch element, on decode steps, a long chunk and prefills on an empty cache.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import pytest
import torch
from torch import Tensor, nn
from torch.utils._pytree import tree_leaves

from graders.core.compare import (expect_close, expect_grads_close, expect_tracks_grad,
                                  expect_tuple, shape_mismatches)
from graders.core.i18n import N_, _
from graders.core.implementation import Implementation
from graders.core.inputs import grads_of, leaf_copies, randn, weighted_sum
from graders.core.memory import CreatedTensors
from graders.core.mistakes import Suspect
from graders.core.report import GradingFailure, describe_value, title, verdict
from graders.core.untouched import call_leaving_untouched, snapshot
from graders.mla.twin import CACHE_ONLY, MISTAKE_OF, Config, forward, random_state, shapes

__all__ = [
    "test_state_dict",
    "test_one_call",
    "test_every_split",
    "test_low_rank_query",
    "test_square_absorption",
    "test_float32",
    "test_other_eps",
    "test_absorbed_memory",
    "test_gradients_through_the_cache",
]

# RMSNorm, softmax and RoPE angles may be computed in float32 (as Hugging Face does): the
# float64 checks allow for that (kata 15's allowances), the float32 checks use float32's.
FLOAT64_SLACK = 3000.0
FLOAT32_SLACK = 30.0

SMALL = Config(24, 3, 16, 8, 6, 10)
LOW_RANK = Config(32, 4, 12, 6, 4, 8, q_lora_rank=10, rope_base=500.0)
SQUARE = Config(20, 2, 8, 8, 4, 8)


def build(impl: Implementation, cfg: Config, state: dict[str, Tensor],
          dtype=torch.float64) -> tuple[nn.Module, str]:
    what = cfg.name()
    cls = impl.attr("MultiHeadLatentAttention")
    module = impl.call(cls, *cfg.args, **{k: v for k, v in cfg.kwargs.items()},
                       what=what, on=_("construction"))
    if not isinstance(module, nn.Module):
        raise verdict(what, _("construction"),
                      [_("expected an nn.Module, got {value}", value=describe_value(module))])
    got = {name: tuple(p.shape) for name, p in impl.call(
        module.state_dict, what=f"{what}.state_dict", on=_("construction")).items()}
    expected = shapes(cfg)
    if got != expected:
        details = shape_mismatches(got, expected)
        details.append(_("expected exactly the state dict of Hugging Face's DeepseekV3Attention "
                         "(no biases)"))
        raise verdict(_("the state dict of {module}", module=what), _("construction"), details)
    module = impl.call(module.to, dtype=dtype, what=f"{what}.to", on=_("construction"))
    impl.call(module.load_state_dict, {k: v.to(dtype) for k, v in state.items()}, strict=True,
              what=f"{what}.load_state_dict", on=_("the weights"))
    return module, what


def cache_tensors(cache: Any) -> list[Tensor]:
    return [t for t in cache if isinstance(t, Tensor)] if isinstance(cache, (tuple, list)) else []


def run_forward(impl, module, x, cache, what, on, absorbed=False):
    """forward(x, cache, absorbed) -> (output, cache), the cache passed in checked untouched."""
    before = snapshot(cache_tensors(cache))

    def modified() -> GradingFailure:
        return verdict(f"{what}.forward", on, [
            _("the cache passed in was modified in place; it must stay as it was"),
            _("(another call may branch from the same cache, as beam search does)")],
            "cache-modified-in-place")

    result = call_leaving_untouched(impl, module, x, cache, absorbed=absorbed, before=before,
                                    modified=modified, what=f"{what}.forward", on=on)
    return expect_tuple(result, 2, f"{what}.forward", on, "output, cache")


def _suspects(state, cfg, x, s, absorbed) -> list[Suspect]:
    return [Suspect(slug, predict=lambda sw=sw: forward(state, cfg, x, s, absorbed, sw)[0])
            for sw, slug in MISTAKE_OF.items()]


def _cache_suspects(state, cfg, x, s, absorbed, which: int) -> list[Suspect]:
    out = [Suspect(slug, predict=lambda sw=sw: forward(state, cfg, x, s, absorbed, sw)[which])
           for sw, slug in {**MISTAKE_OF, **CACHE_ONLY}.items()]
    b, n = x.shape[:2]
    h, d_n, d_r, d_v = (cfg.num_heads, cfg.qk_nope_head_dim, cfg.qk_rope_head_dim,
                        cfg.v_head_dim)
    want = (b, n, cfg.kv_lora_rank if which == 1 else d_r)
    widths = (h * d_n, h * d_v, h * (d_n + d_v), h * (d_n + d_r))

    def up_projected(_got: Any) -> bool:
        """A head axis: (b, s, h, d) or (b, h, s, d), or heads flattened into the last axis
        (never the right shape: an unrotated k_rope is (b, s, d_r) too, and s may equal h)."""
        if not isinstance(_got, Tensor) or h == 1 or tuple(_got.shape) == want:
            return False
        return (_got.dim() == 4 and h in tuple(_got.shape[1:3])) or (
            _got.dim() == 3 and _got.shape[-1] in widths)
    out.append(Suspect("cache-holds-up-projected-kv", matches=up_projected))
    return out


def check_call(impl, module, what, state, cfg, x, s, t, cache, absorbed, on):
    """Feed positions s ... s+t-1 of x with ``cache`` holding 0 ... s-1; returns the cache."""
    prefix = x[:, :s + t]
    output, new_cache = run_forward(impl, module, x[:, s:s + t].contiguous(), cache, what, on,
                                    absorbed)
    with torch.no_grad():
        want_out, want_c, want_k = forward(state, cfg, prefix, s, absorbed)
    slack = FLOAT64_SLACK if x.dtype == torch.float64 else FLOAT32_SLACK
    path = "absorbed=True" if absorbed else "absorbed=False"
    expect_close(output, want_out.to(x.dtype),
                 _("the output (b, t, hidden_size) with {path}", path=path), on,
                 _suspects(state, cfg, prefix, s, absorbed), slack=slack)
    check = _("the returned cache (c_kv (b, s + t, r), k_rope (b, s + t, d_r))")
    got = expect_tuple(new_cache, 2, check, on, "c_kv, k_rope")
    for i, (name, want) in enumerate((("c_kv", want_c), ("k_rope", want_k))):
        expect_close(got[i], want.to(x.dtype), f"{check}: {name}", on,
                     _cache_suspects(state, cfg, prefix, s, absorbed, i + 1), slack=slack)
    return got


def _on(x: Tensor, s: int, t: int, absorbed: bool) -> str:
    return _("x {shape} {dtype}, positions {start} ... {end}, absorbed={absorbed}",
             shape=tuple(x[:, s:s + t].shape), dtype=str(x.dtype)[6:], start=s,
             end=s + t - 1, absorbed=absorbed)


def run_splits(impl, cfg, splits, seed, dtype=torch.float64, b=2, empty_cache=False):
    state = random_state(cfg, seed)
    module, what = build(impl, cfg, state, dtype)
    n = sum(size for size, _ in splits)
    x = randn(b, n, cfg.hidden_size, seed=seed + 1, dtype=dtype)
    cache, s = None, 0
    if empty_cache:  # a cache of 0 positions is the same as None
        cache = (x.new_zeros(b, 0, cfg.kv_lora_rank), x.new_zeros(b, 0, cfg.qk_rope_head_dim))
    for t, absorbed in splits:
        cache = check_call(impl, module, what, state, cfg, x, s, t, cache, absorbed,
                           _on(x, s, t, absorbed))
        s += t


@pytest.mark.core
@title(N_("the state dict is DeepseekV3Attention's, both query layouts"))
def test_state_dict(impl: Implementation) -> None:
    for cfg in (SMALL, LOW_RANK):
        build(impl, cfg, random_state(cfg, 1))


@pytest.mark.core
@title(N_("one call on a whole sequence, both paths"))
def test_one_call(impl: Implementation) -> None:
    for absorbed in (False, True):
        run_splits(impl, SMALL, [(5, absorbed)], seed=10)
        run_splits(impl, SMALL, [(4, absorbed)], seed=11, empty_cache=True)


@pytest.mark.core
@title(N_("a prefill then chunks, the paths mixed, give the one-call outputs and cache"))
def test_every_split(impl: Implementation) -> None:
    run_splits(impl, SMALL, [(3, False), (1, True), (2, True), (1, False)], seed=20)
    run_splits(impl, SMALL, [(2, True), (3, False), (1, True)], seed=30, b=3)


@pytest.mark.core
@title(N_("the low-rank query (q_a_proj, q_a_layernorm, q_b_proj)"))
def test_low_rank_query(impl: Implementation) -> None:
    run_splits(impl, LOW_RANK, [(4, False), (2, True), (1, True)], seed=40)


@pytest.mark.core
@title(N_("absorption with r = d_n = d_v, where shapes cannot catch a transpose"))
def test_square_absorption(impl: Implementation) -> None:
    run_splits(impl, SQUARE, [(3, True), (2, True)], seed=50)


@pytest.mark.followup
@title(N_("float32"))
def test_float32(impl: Implementation) -> None:
    run_splits(impl, LOW_RANK, [(3, True), (2, False), (1, True)], seed=60, dtype=torch.float32)


@pytest.mark.followup
@title(N_("an eps other than 1e-6"))
def test_other_eps(impl: Implementation) -> None:
    cfg = Config(16, 2, 8, 4, 4, 6, q_lora_rank=6, eps=0.5)
    run_splits(impl, cfg, [(3, False), (2, True)], seed=70)


MEMORY = Config(64, 8, 96, 32, 8, 32)  # r apart from d_n, d_v, d_n + d_v, d_n + d_r
# (s cached positions, t new tokens): decode steps, a long chunk after a long cache, and
# prefills on an empty cache (None, and a cache of 0 positions), short and long.
MEMORY_CALLS = ((2048, 1), (2048, 3), (512, 100), (0, 4), (0, 100))


def memory_limit(cfg: Config, s: int, t: int) -> int:
    """The absorbed path's limit per batch element: h · (t · (r + d_r) + s · min(d_n, d_v) / 2)
    (the new tokens' queries in latent space, and half of one per-head key or value of the
    cached positions)."""
    h = cfg.num_heads
    return h * (t * (cfg.kv_lora_rank + cfg.qk_rope_head_dim)
                + s * min(cfg.qk_nope_head_dim, cfg.v_head_dim) // 2)


class CreatedBeyondScores(CreatedTensors):
    """CreatedTensors, the tensors of the scores' size aside: ``b · h · t · (s + t)`` elements
    (the scores, probabilities or mask, whatever their layout) or one batch element's
    ``h · t · (s + t)`` (a mask repeated over the heads folded into the query rows)."""

    def __init__(self, b: int, h: int, t: int, n: int) -> None:
        super().__init__()
        self.scores = (h * t * n, b * h * t * n)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if not getattr(func, "is_view", False):
            for out in tree_leaves(result):
                if (isinstance(out, Tensor) and out.numel() not in self.scores
                        and (self.largest is None or out.numel() > self.largest[0])):
                    self.largest = (out.numel(), tuple(out.shape), str(func.overloadpacket))
        return result


@cache
def _memory_inputs(s: int, t: int):
    state = random_state(MEMORY, 80, torch.float32)
    cache_ = (randn(2, s, 96, seed=81), randn(2, s, 8, seed=82)) if s else None
    if not s and t > 8:  # an empty cache rather than None
        cache_ = (torch.zeros(2, 0, 96), torch.zeros(2, 0, 8))
    return state, cache_, randn(2, t, 64, seed=83 + t)


def _memory_slug(numel: int, b: int, s: int, t: int) -> str | None:
    """What the created tensor is, by its exact size: the latent of the cached (or all)
    positions once per head, or per-head keys or values of them; None when neither (MEMORY's
    r differs from every per-head width, so the sizes cannot coincide)."""
    cfg = MEMORY
    h, d_n, d_v = cfg.num_heads, cfg.qk_nope_head_dim, cfg.v_head_dim
    positions = (s, s + t)
    if any(numel == b * h * m * cfg.kv_lora_rank for m in positions):
        return "latent-copied-per-head"
    widths = (d_n, d_v, d_n + d_v, d_n + cfg.qk_rope_head_dim)
    if any(numel == b * h * m * w for m in positions for w in widths):
        return "absorbed-path-up-projects"
    return None


@pytest.mark.core
@title(N_("absorbed=True builds no per-head keys or values of the cached positions"))
def test_absorbed_memory(impl: Implementation) -> None:
    b = 2
    weights = sum(math.prod(shape) for shape in shapes(MEMORY).values())
    for s, t in MEMORY_CALLS:
        state, cache_, x = _memory_inputs(s, t)
        module, what = build(impl, MEMORY, state, torch.float32)
        limit = memory_limit(MEMORY, s, t)
        if cache_ is None:
            on = _("x (2, {t}, 64) float32 with no cache (None), absorbed=True", t=t)
        else:
            on = _("x (2, {t}, 64) float32 with a cache of s = {s} positions, absorbed=True",
                   t=t, s=s)
        with CreatedBeyondScores(b, MEMORY.num_heads, t, s + t) as created:
            impl.call(module, x, cache_, absorbed=True, what=f"{what}.forward", on=on)
        if created.largest is None:
            continue
        numel, shape, op = created.largest
        if numel / b <= limit or numel <= weights:  # merged W_UK / W_UV: weight-sized
            continue
        raise verdict(_("the memory of absorbed=True"), on, [
            _("an operation ({op}) created a tensor {shape}: {per} elements per batch "
              "element, the limit is {limit} (h · (t · (r + d_r) + s · min(d_n, d_v) / 2), "
              "the (b, h, t, s + t) scores aside)", op=op, shape=shape,
              per=int(numel / b), limit=limit),
            _("attend in latent space: fold W_UK into the query and W_UV into the output, "
              "and never copy the latent once per head")], _memory_slug(numel, b, s, t))


@pytest.mark.core
@title(N_("gradients through the cache, both paths (float64)"))
def test_gradients_through_the_cache(impl: Implementation) -> None:
    cfg = LOW_RANK
    state = random_state(cfg, 90)
    module, what = build(impl, cfg, state)
    x = randn(2, 5, cfg.hidden_size, seed=91, dtype=torch.float64)
    (xl,) = leaf_copies(x)
    on = _("x {shape} float64: a prefill of 3 (naive), then 2 (absorbed)", shape=tuple(x.shape))
    out1, c1 = run_forward(impl, module, xl[:, :3], None, what, on)
    out2, _c2 = run_forward(impl, module, xl[:, 3:], c1, what, on, True)
    expect_tracks_grad({"output": out2}, _("the gradients"), on)
    named = {"x": xl, **dict(module.named_parameters())}
    got = grads_of(weighted_sum([out2], seed=92), named, on)

    params = {k: v.detach().clone().requires_grad_(True) for k, v in state.items()}
    (xr,) = leaf_copies(x)
    want_out = forward(params, cfg, xr, 3, True)[0]
    want = dict(zip(["x", *params], torch.autograd.grad(
        weighted_sum([want_out], seed=92), [xr, *params.values()])))
    expect_grads_close(got, want, _("the gradients of the second call's output"), on,
                       slack=FLOAT64_SLACK)
