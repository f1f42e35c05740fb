"""Grader for kata 11: ``CausalSelfAttention`` with a key/value cache.

Expected numbers come from ``nn.MultiheadAttention(E, h, batch_first=True)`` with random
weights and nonzero biases, run once on the whole sequence with a causal mask; the
learner's module loads the same weights under its names (``q_proj``, ``k_proj``,
``v_proj``: the thirds of ``in_proj_weight``; ``out_proj``). The sequence is then fed to
the learner's module in every split - a prefill of each length (none at all, cache None,
up to the whole sequence), then chunks of 1, 2 or 3 tokens - passing back the cache it
returned, and each call's output must equal the matching positions of the one-call
output, each returned cache the keys and values of every position so far.

:func:`chunk_reference` is one call of the module as a function of its weights, with a
switch for the causal mask (shifted by the cache length, aligned top-left, none); the
returned cache is compared with what each cache mistake would return (the old cache, the
new positions alone, a concatenation along another axis). A cache modified in place is
caught by comparing the caller's tensors - their values, version counters and every byte
of the storage behind them, beyond their visible extent too - before and after each call.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import torch
from torch import Tensor, nn

from graders.core.i18n import N_, _
from graders.core.compare import (
    expect_close,
    expect_grads_close,
    expect_tracks_grad,
    expect_tuple,
    shape_mismatches,
    tolerance,
)
from graders.core.implementation import Implementation
from graders.core.inputs import drawn_cases, grads_of, leaf_copies, randn, weighted_sum
from graders.core.mistakes import Suspect
from graders.core.report import GradingFailure, describe_value, verdict, title
from graders.core.untouched import call_leaving_untouched, snapshot, visibly_changed
from graders.kv_cache.twin import (
    chunk_reference,
    keys_values,
    learner_state,
    pytorch_full,
    pytorch_twin,
)

__all__ = [
    "test_one_call_matches_pytorch",
    "test_every_split_matches_one_call",
    "test_empty_cache",
    "test_random_shapes",
    "test_cache_passed_in_is_untouched",
    "test_gradients_through_the_cache",
    "test_float64",
    "test_without_bias",
    "test_half_precision_on_cuda",
]

CHUNK_SIZES = (1, 2, 3)
_CAT_SIZES = re.compile(r"Sizes of tensors must match except in dimension (\d+)")


def slug_for_exception(exc: BaseException) -> str | None:
    """torch.cat of the cache and the new keys along heads, batch or features (rather than
    positions, dim 2) raises this as soon as the cache length differs from the chunk's."""
    match = _CAT_SIZES.search(str(exc)) if isinstance(exc, RuntimeError) else None
    if match and int(match.group(1)) != 2:
        return "cache-wrong-dim"
    return None


def module_name(embed_dim: int, num_heads: int, bias: bool) -> str:
    return f"CausalSelfAttention({embed_dim}, {num_heads}{'' if bias else ', bias=False'})"


def build_module(impl: Implementation, twin: nn.MultiheadAttention, dtype=None,
                 device=None) -> tuple[nn.Module, dict[str, Tensor], str]:
    """The learner's module with the twin's weights loaded; also the weights under the
    kata's names, and the module's name for verdicts."""
    bias = twin.in_proj_bias is not None
    what = module_name(twin.embed_dim, twin.num_heads, bias)
    cls = impl.attr("CausalSelfAttention")
    module = impl.call(cls, twin.embed_dim, twin.num_heads, bias=bias, what=what,
                       on=_("construction"))
    if not isinstance(module, nn.Module):
        raise verdict(what, _("construction"),
                      [_("expected an nn.Module, got {value}", value=describe_value(module))])
    state = learner_state(twin)
    expected = {name: tuple(t.shape) for name, t in state.items()}
    got = {name: tuple(t.shape) for name, t in
           impl.call(module.named_parameters, what=f"{what}.named_parameters",
                     on=_("construction"))}
    if got != expected:
        details = shape_mismatches(got, expected)
        details.append(_("expected the parameters of q_proj, k_proj, v_proj and out_proj, each "
                         "nn.Linear(E, E, bias=bias), and no others"))
        raise verdict(_("the parameters of {module}", module=what), _("construction"), details)
    module = impl.call(module.to, device=device or twin.in_proj_weight.device,
                       dtype=dtype or twin.in_proj_weight.dtype, what=f"{what}.to",
                       on=_("construction"))
    # strict=False: a buffer of the learner's own (a precomputed mask) may stay as it is.
    impl.call(module.load_state_dict, state, strict=False, what=f"{what}.load_state_dict",
              on=_("the weights of nn.MultiheadAttention"))
    return module, state, what


def cache_tensors(cache: Any) -> list[Tensor]:
    return [t for t in cache if isinstance(t, Tensor)] if isinstance(cache, (tuple, list)) else []


def run_forward(impl: Implementation, module: nn.Module, x: Tensor, cache: Any, what: str,
                on: str, buffers: tuple[Tensor, ...] = ()) -> tuple[Any, Any]:
    """The learner's forward(x, cache) -> (output, cache), with the cache passed in (and
    ``buffers``, the storage behind it) checked to be untouched afterwards."""
    before = snapshot([*cache_tensors(cache), *buffers])

    def modified() -> GradingFailure:
        beyond = buffers or not visibly_changed(before)
        where = _(" (the storage behind it, beyond the s visible positions)") if beyond else ""
        return verdict(f"{what}.forward", on, [
            _("the cache passed in was modified in place{where}; it must stay as it was",
              where=where),
            _("(another call may branch from the same cache, as beam search does)")],
            "cache-modified-in-place")

    result = call_leaving_untouched(impl, module, x, cache, before=before, modified=modified,
                                    what=f"{what}.forward", on=on)
    return expect_tuple(result, 2, f"{what}.forward", on, "output, cache")


def check_cache(got: Any, passed: Any, full_kv: tuple[Tensor, Tensor], s: int, t: int,
                on: str) -> tuple[Tensor, Tensor]:
    """The returned cache must be the keys and values of positions 0 ... s+t-1."""
    check = _("the returned cache (k, v), each (b, h, s + t, head_dim)")
    if got is passed:
        raise verdict(check, on, [_("got back the cache passed in ({value}), not one extended "
                                    "with the new positions", value=describe_value(passed))],
                      "cache-not-updated")
    got = expect_tuple(got, 2, check, on, "k, v")
    for name, returned, full, old in zip("kv", got, full_kv, cache_tensors(passed) or (None, None)):
        past, new = full[:, :, :s], full[:, :, s:s + t]
        suspects = [Suspect("cache-not-updated", predict=lambda p=past: p),
                    Suspect("cache-not-updated", predict=lambda n=new: n)]
        if old is not None:
            suspects += [Suspect("cache-wrong-dim",
                                 predict=lambda d=dim, o=old, n=new: torch.cat([o, n], dim=d))
                         for dim in (0, 1, 3)]
        expect_close(returned, full[:, :, :s + t], f"{check}: {name}", on, suspects)
    return got


def missing_mask_suspect(impl: Implementation, module: nn.Module, what: str,
                         state: dict[str, Tensor], x: Tensor, s: int, t: int, cache: Any,
                         num_heads: int, on: str, buffers: tuple[Tensor, ...]) -> Suspect:
    """causal-mask-missing for the call that fed positions s ... s+t-1 of x (b, n, E).

    With t <= 2 new queries, no mask and a mask one position too lenient (each query also
    sees the next one, e.g. tril(diagonal=s + 1)) give the same output, so there the
    mistake is named only when the module, fed 3 new positions from the same cache (a
    branch, which the contract allows), returns the unmasked output too."""
    def predict() -> Tensor | None:
        unmasked = chunk_reference(state, x[:, :s + t], s, num_heads, "none")
        if t >= 3:
            return unmasked
        probe = torch.cat([x[:, :s], randn(x.size(0), 3, x.size(2), seed=9_000 + s,
                                           dtype=x.dtype, device=x.device)], dim=1)
        try:
            output, _ = run_forward(impl, module, probe[:, s:], cache, what, on, buffers)
        except GradingFailure:
            return None
        want = chunk_reference(state, probe, s, num_heads, "none")
        rtol, atol = tolerance(x.dtype, FLOAT64_SLACK if x.dtype == torch.float64 else 1.0)
        if not (isinstance(output, Tensor) and output.shape == want.shape and torch.allclose(
                output.detach().to("cpu", torch.float64), want.detach().to("cpu", torch.float64),
                rtol=rtol, atol=atol)):
            return None
        return unmasked
    return Suspect("causal-mask-missing", predict=predict)


# Hugging Face's eager attention (GPT-2, Llama) takes the softmax in float32 and casts back:
# `softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)`. Correct, and in float64 precise
# to float32's digits only, so the float64 checks of the output and the gradients allow for
# that (as kata 13's do): they grade the dtype and the behaviour in float64, not its last
# digits. The cache holds projections only and is still graded at float64 precision.
FLOAT64_SLACK = 100.0


def check_call(impl: Implementation, module: nn.Module, what: str, state: dict[str, Tensor],
               x: Tensor, full_out: Tensor, full_kv: tuple[Tensor, Tensor], s: int, t: int,
               cache: Any, num_heads: int, on: str,
               buffers: tuple[Tensor, ...] = ()) -> tuple[Tensor, Tensor]:
    """Feed positions s ... s+t-1 of x (b, n, E) with ``cache`` (positions 0 ... s-1);
    check the output against the one-call output and the returned cache. Returns it."""
    chunk = x[:, s:s + t].contiguous()
    output, new_cache = run_forward(impl, module, chunk, cache, what, on, buffers)
    prefix = x[:, :s + t]
    slack = FLOAT64_SLACK if x.dtype == torch.float64 else 1.0
    suspects = [Suspect("causal-mask-offset",
                        predict=lambda: chunk_reference(state, prefix, s, num_heads, "top-left")),
                missing_mask_suspect(impl, module, what, state, x, s, t, cache, num_heads, on,
                                     buffers),
                *(Suspect("reshape-without-transpose",
                          predict=lambda h=heads: chunk_reference(state, prefix, s, num_heads,
                                                                  heads=h))
                  for heads in ("split", "merge", "both"))]
    expect_close(output, full_out[:, s:s + t],
                 _("the output (b, t, E) against nn.MultiheadAttention with a causal mask on "
                   "the whole sequence"), on, suspects, slack=slack)
    return check_cache(new_cache, cache, full_kv, s, t, on)


def splits(length: int) -> list[tuple[int, ...]]:
    """Every way to feed ``length`` tokens: a prefill of each length (0: no prefill), then
    chunks of 1, 2 or 3 tokens (the last one shorter when they do not divide the rest).

    Longest prefill first: a cache longer than the chunk makes torch.cat along a wrong axis
    raise its characteristic error (see :func:`slug_for_exception`) before an equal-length
    one lets it through to a less telling failure."""
    found: list[tuple[int, ...]] = []
    for prefill in range(length, -1, -1):
        for size in CHUNK_SIZES:
            rest = length - prefill
            pieces = ((prefill,) if prefill else ()) + tuple(
                min(size, rest - i) for i in range(0, rest, size))
            if pieces not in found:
                found.append(pieces)
    return found


def describe_split(pieces: tuple[int, ...], index: int, b: int, embed: int, what: str,
                   dtype: torch.dtype = torch.float32, cache_note: str = "") -> str:
    s = sum(pieces[:index])
    t = pieces[index]
    dtype_note = "" if dtype == torch.float32 else f" {str(dtype)[6:]}"
    where = (_("positions {first}..{last}", first=s, last=s + t - 1) if t > 1
             else _("position {position}", position=s))
    cache = (_("a cache of {length}", length=s) if index
             else (_("cache None") if not cache_note else cache_note))
    return _("{x} at {where} with {cache}, call {call} of the split {split} of a sequence of "
             "{n}, {module}", x=f"x{dtype_note} ({b}, {t}, {embed})", where=where, cache=cache,
             call=index + 1, split="+".join(map(str, pieces)), n=sum(pieces), module=what)


def check_sequence(impl: Implementation, *, embed_dim: int, num_heads: int, b: int, n: int,
                   seed: int, bias: bool = True, dtype=torch.float32, device="cpu",
                   split_list: list[tuple[int, ...]] | None = None,
                   empty_cache: bool = False) -> None:
    """The sequence fed in each split of ``split_list`` (default: the whole sequence in one
    call), each call given the cache the previous one returned. ``empty_cache``: the first
    call gets a cache of 0 positions instead of None."""
    twin = pytorch_twin(embed_dim, num_heads, bias=bias, seed=seed, dtype=dtype, device=device)
    module, state, what = build_module(impl, twin)
    x = randn(b, n, embed_dim, seed=seed + 1, dtype=dtype, device=device)
    with torch.no_grad():
        full_out = pytorch_full(twin, x)
        full_kv = keys_values(state, x, num_heads)
    for pieces in split_list or [(n,)]:
        cache: Any = None
        if empty_cache:
            cache = tuple(kv[:, :, :0].clone() for kv in full_kv)
        s = 0
        for index, t in enumerate(pieces):
            note = _("a cache of 0 positions") if empty_cache else ""
            on = describe_split(pieces, index, b, embed_dim, what, dtype, note)
            cache = check_call(impl, module, what, state, x, full_out, full_kv, s, t, cache,
                               num_heads, on)
            s += t


# ------------------------------------------------------------------------------ core


@title(N_("one call against nn.MultiheadAttention"))
@pytest.mark.core
def test_one_call_matches_pytorch(impl):
    """The whole sequence in one call, cache None: the output equals nn.MultiheadAttention
    with a causal mask; the returned cache holds every position's keys and values."""
    check_sequence(impl, embed_dim=8, num_heads=2, b=2, n=5, seed=100)
    check_sequence(impl, embed_dim=12, num_heads=3, b=3, n=4, seed=110)
    check_sequence(impl, embed_dim=6, num_heads=1, b=1, n=3, seed=120)


@title(N_("every split matches one call"))
@pytest.mark.core
def test_every_split_matches_one_call(impl):
    """Every split of the sequence - a prefill of each length (none: the first chunk gets
    cache None), then chunks of 1, 2 or 3 tokens - gives the one-call outputs, and each
    returned cache holds every position so far."""
    check_sequence(impl, embed_dim=8, num_heads=2, b=2, n=6, seed=200, split_list=splits(6))
    check_sequence(impl, embed_dim=12, num_heads=3, b=3, n=5, seed=210,
                   split_list=[(4, 1), (2, 3), (1, 2, 2), (1, 1, 1, 1, 1)])


@title(N_("an empty cache"))
@pytest.mark.core
def test_empty_cache(impl):
    """A cache of 0 positions ((b, h, 0, head_dim) tensors) acts like no cache at all."""
    check_sequence(impl, embed_dim=8, num_heads=2, b=2, n=5, seed=300, empty_cache=True,
                   split_list=[(5,), (2, 3), (1, 1, 1, 1, 1)])


def split_case(rng):
    num_heads, head_dim = rng.randint(1, 3), rng.randint(1, 4)
    n = rng.randint(1, 6)
    pieces, rest = [], n
    while rest:
        pieces.append(rng.randint(1, rest))
        rest -= pieces[-1]
    return num_heads * head_dim, num_heads, rng.randint(1, 3), n, tuple(pieces), rng.randint(0, 9999)


@title(N_("random shapes and splits"))
@pytest.mark.core
def test_random_shapes(impl):
    """Random widths, head counts, batch sizes, lengths and splits, from a fixed seed."""
    for embed_dim, num_heads, b, n, pieces, seed in drawn_cases(split_case, count=8, seed=11):
        check_sequence(impl, embed_dim=embed_dim, num_heads=num_heads, b=b, n=n, seed=seed,
                       split_list=[pieces])


def branch_results(output: Any, cache: tuple[Tensor, Tensor]) -> dict[str, Any]:
    """What one branch returned, by name: the output, then the cache's k and v."""
    return {_("the output"): output, _("the returned {name}", name="k"): cache[0],
            _("the returned {name}", name="v"): cache[1]}


def expect_unchanged_by_second_branch(on: str, values: dict[str, Any],
                                      copies: dict[str, Tensor]) -> None:
    """The first branch's output and cache (``values``, copied right after its call into
    ``copies``) must be as they were after the second branch ran from the same cache."""
    for name, value in values.items():
        if not isinstance(value, Tensor) or name not in copies:
            continue
        if not torch.equal(torch.nan_to_num(value.detach()), torch.nan_to_num(copies[name])):
            # The returned cache overwritten is a cache modified in place; an output held
            # in a reused buffer is another mistake, failed without a slug.
            cache = name != _("the output")
            raise verdict(_("{name} of branch 1, after branch 2 ran from the same cache",
                            name=name), on, [
                _("it changed when the second branch ran: the two continuations share "
                  "storage, and the second wrote over the first"),
                _("(another call may branch from the same cache, as beam search does)")],
                "cache-modified-in-place" if cache else None)


def copies_of(values: dict[str, Any]) -> dict[str, Tensor]:
    return {name: v.detach().clone() for name, v in values.items() if isinstance(v, Tensor)}


def check_preallocated_branches(impl: Implementation, module: nn.Module, what: str,
                                 twin: nn.MultiheadAttention, state: dict[str, Tensor],
                                 grad_mode: bool) -> None:
    """Two continuations from one cache that is a narrow view of a larger buffer (the
    grader's, filled with noise beyond the view, as in a preallocated static cache): each
    gives its own right answer and neither writes into the cache or the buffer behind it."""
    embed_dim, num_heads, b, s = twin.embed_dim, twin.num_heads, 2, 3
    prefix = randn(b, s, embed_dim, seed=401)
    continuations = [randn(b, t, embed_dim, seed=402 + t) for t in (2, 1)]
    d = embed_dim // num_heads
    with torch.no_grad():
        prefix_kv = keys_values(state, prefix, num_heads)
    # The prefix's keys and values sit in the first s slots of buffers with room for 4 more
    # (filled with noise): the cache is the narrow view, as in a preallocated static cache.
    buffers = tuple(torch.cat([kv, randn(b, num_heads, 4, d, seed=410 + i)], dim=2)
                    for i, kv in enumerate(prefix_kv))
    cache = tuple(buf[:, :, :s] for buf in buffers)
    mode = "" if grad_mode else _(", under torch.no_grad()")
    results = []
    for branch, extra in enumerate(continuations):
        x = torch.cat([prefix, extra], dim=1)
        t = extra.size(1)
        with torch.no_grad():
            full_out = pytorch_full(twin, x)
            full_kv = keys_values(state, x, num_heads)
        on = _("{x} at positions {s}.. with a cache of {s} positions (a narrow view of a "
               "{buffer} buffer), branch {branch} of 2 from that same cache, {module}",
               x=f"x ({b}, {t}, {embed_dim})", s=s, buffer=(b, num_heads, s + 4, d),
               branch=branch + 1, module=what) + mode
        with torch.set_grad_enabled(grad_mode):
            returned = check_call(impl, module, what, state, x, full_out, full_kv, s, t, cache,
                                  num_heads, on, buffers=buffers)
        results.append((returned, full_kv, on))
        if branch == 0:
            first = branch_results(None, returned)
            first_copies = copies_of(first)
    expect_unchanged_by_second_branch(results[0][2], first, first_copies)
    # The first branch's cache must still hold its own positions after the second call.
    for returned, full_kv, on in results:
        for name, got, expected in zip("kv", returned, full_kv):
            expect_close(got, expected,
                         _("the returned cache's {name}, after both branches ran", name=name), on)


def check_own_cache_branches(impl: Implementation, module: nn.Module, what: str,
                             twin: nn.MultiheadAttention, state: dict[str, Tensor]) -> None:
    """Beam search's use of the cache, as generation runs it (under torch.no_grad()): a
    prefill, cache None, gives the module's own cache; two different continuations from
    that one cache each equal attention on their whole sequence, and the first one's output
    and returned cache are the same after the second ran (a cache that grows by writing
    into room behind a view - of the caller's storage or of the module's own buffer - lets
    the second continuation overwrite the first)."""
    embed_dim, num_heads, b, s = twin.embed_dim, twin.num_heads, 2, 3
    prefix = randn(b, s, embed_dim, seed=420)
    continuations = [randn(b, t, embed_dim, seed=421 + t) for t in (2, 3)]
    with torch.no_grad():
        full_prefix = pytorch_full(twin, prefix)
        prefix_kv = keys_values(state, prefix, num_heads)
    on = _("{x} at positions 0..{last}, cache None, under torch.no_grad() (the prefill that "
           "two branches then continue from), {module}", x=f"x ({b}, {s}, {embed_dim})",
           last=s - 1, module=what)
    with torch.no_grad():
        cache = check_call(impl, module, what, state, prefix, full_prefix, prefix_kv, 0, s,
                           None, num_heads, on)
    ran = []
    for branch, extra in enumerate(continuations):
        x = torch.cat([prefix, extra], dim=1)
        t = extra.size(1)
        with torch.no_grad():
            full_out = pytorch_full(twin, x)
            full_kv = keys_values(state, x, num_heads)
        on = _("{x} at positions {s}.. with the cache your module returned for positions "
               "0..{last}, under torch.no_grad(), branch {branch} of 2 from that same cache, "
               "{module}", x=f"x ({b}, {t}, {embed_dim})", s=s, last=s - 1,
               branch=branch + 1, module=what)
        with torch.no_grad():
            output, _k = run_forward(impl, module, x[:, s:].contiguous(), cache, what, on)
            expect_close(output, full_out[:, s:],
                         _("the output (b, t, E) against nn.MultiheadAttention with a causal "
                           "mask on the whole sequence"), on)
            returned = check_cache(_k, cache, full_kv, s, t, on)
        values = branch_results(output, returned)
        ran.append((on, values, copies_of(values)))
    expect_unchanged_by_second_branch(*ran[0])


@title(N_("the cache passed in is left untouched"))
@pytest.mark.core
def test_cache_passed_in_is_untouched(impl):
    """Branching: two different continuations from one cache each give their own right
    answer, and neither changes the cache (values, shape, nor - when the cache is a narrow
    view of a larger preallocated buffer - the buffer behind it); with grad mode on and
    under torch.no_grad(), as generation runs, where an implementation may take another
    path. Also from the module's own cache under torch.no_grad(): the first branch's output
    and cache must survive the second branch."""
    twin = pytorch_twin(8, 2, seed=400)
    module, state, what = build_module(impl, twin)
    for grad_mode in (True, False):
        check_preallocated_branches(impl, module, what, twin, state, grad_mode)
    check_own_cache_branches(impl, module, what, twin, state)


# ------------------------------------------------------------------------- follow-ups


def check_gradients(impl: Implementation, *, embed_dim: int, num_heads: int, b: int,
                    pieces: tuple[int, ...], seed: int, bias: bool = True,
                    dtype=torch.float32) -> None:
    """Backward through the last call's output and returned cache only: the gradients of
    every chunk's input (earlier ones reach it only through the cache) and of every
    parameter equal PyTorch's on the whole sequence."""
    twin = pytorch_twin(embed_dim, num_heads, bias=bias, seed=seed, dtype=dtype)
    module, state, what = build_module(impl, twin)
    base = [randn(b, t, embed_dim, seed=seed + 1 + i, dtype=dtype) for i, t in enumerate(pieces)]
    chunks = leaf_copies(*base)
    on = _("{x} fed in the split {split} (b={b}), loss on the last call's output and cache, "
           "{module}", x=f"x{'' if dtype == torch.float32 else ' ' + str(dtype)[6:]}",
           split="+".join(map(str, pieces)), b=b, module=what)
    cache: Any = None
    for chunk in chunks:
        output, cache = run_forward(impl, module, chunk, cache, what, on)
    cache = expect_tuple(cache, 2, f"{what}.forward", on, "k, v")
    later = {_("the last output"): output, _("the returned {name}", name="k"): cache[0],
             _("the returned {name}", name="v"): cache[1]}
    for name, value in later.items():
        if not isinstance(value, Tensor):
            raise verdict(_("backward through {module}", module=name), on,
                          [_("expected a tensor, got {value}", value=describe_value(value))])
    expect_tracks_grad(later, _("backward through the last call"), on)
    names = [_("x of call {call}", call=i + 1) for i in range(len(pieces))]
    got = grads_of(weighted_sum(later.values(), seed=seed + 50),
                   {**dict(zip(names, chunks)), **dict(module.named_parameters())})

    ref_chunks = leaf_copies(*base)
    ref_state = {name: t.detach().clone().requires_grad_(True) for name, t in state.items()}
    x = torch.cat(ref_chunks, dim=1)
    last = pieces[-1]
    ref_out = pytorch_full(twin, x, ref_state)[:, -last:]
    ref_k, ref_v = keys_values(ref_state, x, num_heads)
    expected = grads_of(weighted_sum([ref_out, ref_k, ref_v], seed=seed + 50),
                        {**dict(zip(names, ref_chunks)), **ref_state})
    expect_grads_close(got, expected, _("backward through the last call"), on,
                       slack=FLOAT64_SLACK if dtype == torch.float64 else 1.0)


@title(N_("gradients through the cache"))
@pytest.mark.followup
def test_gradients_through_the_cache(impl):
    """The returned cache carries gradients: backward through a later call's output reaches
    the earlier calls' inputs and the parameters, equal to PyTorch's on the whole sequence."""
    check_gradients(impl, embed_dim=8, num_heads=2, b=2, pieces=(3, 2, 1), seed=500)
    check_gradients(impl, embed_dim=6, num_heads=3, b=3, pieces=(1, 1, 2), seed=510,
                    dtype=torch.float64, bias=False)


@title(N_("the cache in float64"))
@pytest.mark.followup
def test_float64(impl):
    """float64 weights and inputs give float64 outputs and caches (see FLOAT64_SLACK)."""
    check_sequence(impl, embed_dim=8, num_heads=2, b=2, n=5, seed=600, dtype=torch.float64,
                   split_list=[(5,), (2, 1, 2), (1, 1, 1, 1, 1)])


@title(N_("without bias"))
@pytest.mark.followup
def test_without_bias(impl):
    """bias=False: the four projections have no bias."""
    check_sequence(impl, embed_dim=12, num_heads=2, b=2, n=5, seed=700, bias=False,
                   split_list=[(5,), (3, 2), (1, 2, 2)])


def check_half_precision(impl: Implementation, device: str) -> None:
    """float16 and bfloat16 keep their dtype and device; compared with PyTorch in float32
    on the same (rounded) weights and inputs, so only the learner's rounding counts."""
    for dtype in (torch.float16, torch.bfloat16):
        twin = pytorch_twin(16, 4, seed=800, device=device)
        with torch.no_grad():
            for param in twin.parameters():
                param.copy_(param.to(dtype))
        module, state, what = build_module(impl, twin, dtype=dtype)
        x = randn(2, 6, 16, seed=801, dtype=dtype, device=device)
        with torch.no_grad():
            full_out = pytorch_full(twin, x.float()).to(dtype)
            full_kv = tuple(kv.to(dtype) for kv in keys_values(state, x.float(), 4))
        for pieces in [(6,), (3, 1, 2)]:
            cache, s = None, 0
            for index, t in enumerate(pieces):
                on = (describe_split(pieces, index, 2, 16, what, dtype)
                      + _(" on {device}", device=device))
                cache = check_call(impl, module, what, state, x, full_out, full_kv, s, t,
                                   cache, 4, on)
                s += t


@title(N_("half precision on a CUDA GPU"))
@pytest.mark.followup
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_half_precision_on_cuda(impl):
    """float16 and bfloat16 on the GPU keep their dtype and device."""
    check_half_precision(impl, "cuda")
