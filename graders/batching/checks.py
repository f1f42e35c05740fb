"""Grader for kata 25: iteration-level scheduling over a packed, ragged batch.

varlen_attention is compared with :mod:`graders.batching.twin`'s reference (mistakes named
by reproducing them; a query that sees another segment's keys is also found by changing the
other segments' keys), its gradients in float64, and the no-padding rule recorded at ATen
level on the contract's skewed batch. generate_all drives :class:`ServingModel`, which checks
every call (positions, chunk boundaries, budget, maximality) and names the first rule broken;
then the outputs are compared with each request decoded alone, and the calls counted.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
import torch
from torch import Tensor

from graders.batching import twin
from graders.batching.model import ServingModel, decode_alone
from graders.core.compare import GRAD_SLACK, expect_close
from graders.core.i18n import N_, _, listing
from graders.core.implementation import Implementation
from graders.core.inputs import grads_of, leaf_copies, weighted_sum
from graders.core.memory import CreatedTensors
from graders.core.mistakes import Suspect
from graders.core.report import GradingFailure, describe_inputs, describe_value, title, verdict

__all__ = [
    "test_varlen_attention",
    "test_varlen_attention_causal",
    "test_varlen_attention_float64_int64",
    "test_varlen_attention_gradients",
    "test_varlen_attention_creates_no_padding",
    "test_varlen_attention_half_on_cuda",
    "test_generate_all_example",
    "test_generate_all_schedules",
    "test_generate_all_eos",
]

# (n_j, m_j) per segment, heads, head width; causal cases need m_j >= n_j.
CAUSAL_CASES = (
    ([(4, 4), (1, 6), (3, 9), (2, 2)], 2, 8),  # a prefill, a decode, a chunk after a cache
    ([(5, 5)], 1, 4),  # one segment
    ([(1, 3), (1, 1), (1, 7)], 3, 8),  # decode only
    ([(6, 6), (2, 11), (1, 5)], 2, 16),
)
FREE_CASES = CAUSAL_CASES + (([(5, 3), (2, 6), (3, 1)], 2, 8),)  # m_j < n_j: no mask


def describe_call(q, k, v, cu_q, cu_k, causal: bool, segments: bool = True) -> str:
    """The inputs, causal, and (``segments``) each segment's (n, m), in the learner's language."""
    inputs = describe_inputs(q=q, k=k, v=v, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k)
    if not segments:
        return _("{inputs}, causal={causal}", inputs=inputs, causal=causal)
    pairs = listing(f"({int(a1) - int(a0)}, {int(b1) - int(b0)})" for a0, a1, b0, b1
                    in zip(cu_q.tolist(), cu_q.tolist()[1:], cu_k.tolist(), cu_k.tolist()[1:]))
    return _("{inputs}, causal={causal}; (n, m) per segment: {pairs}", inputs=inputs,
             causal=causal, pairs=pairs)


def run_varlen(impl: Implementation, q, k, v, cu_q, cu_k, causal: bool, on: str,
               recorder: CreatedTensors | None = None) -> Any:
    fn = impl.attr("varlen_attention")
    if recorder is not None:
        inner = fn

        @functools.wraps(inner)  # the guard names the learner's parameters (`q`), not `args`
        def fn(*args, **kwargs):  # noqa: F811 (the same call, recorded)
            with recorder:
                return inner(*args, **kwargs)
    return impl.call(fn, q, k, v, cu_q.clone(), cu_k.clone(), causal=causal,
                     what="varlen_attention", on=on)


def leak_suspect(impl: Implementation, q, k, v, cu_q, cu_k, causal: bool, on: str) -> Suspect:
    """cross-sequence-attention by behaviour: changing only segment 0's keys and values changes
    another segment's output, or changing only the others' changes segment 0's."""
    def matches(got: Any) -> bool:
        cq, ck = twin.bounds(cu_q), twin.bounds(cu_k)
        if len(cq) < 3 or not isinstance(got, Tensor) or got.shape != q.shape:
            return False
        for keys, rows in ((slice(0, ck[1]), slice(cq[1], None)),
                           (slice(ck[1], None), slice(0, cq[1]))):
            k2, v2 = k.clone(), v.clone()
            k2[keys], v2[keys] = k[keys].flip(0) * 2 + 1, v[keys].flip(0) * 3 - 1
            again = run_varlen(impl, q.clone(), k2, v2, cu_q, cu_k, causal, on)
            if isinstance(again, Tensor) and again.shape == got.shape and not torch.allclose(
                    again[rows].double(), got[rows].detach().double(), rtol=1e-4, atol=1e-5,
                    equal_nan=True):  # NaN rows that stay NaN do not leak
                return True
        return False
    return Suspect("cross-sequence-attention", matches=matches)


def check_varlen(impl: Implementation, case, causal: bool, dtype: torch.dtype, seed: int,
                 index_dtype: torch.dtype = torch.int32) -> None:
    segments, h, d = case
    q, k, v, cu_q, cu_k = twin.batch(segments, h, d, seed, dtype, index_dtype)
    on = describe_call(q, k, v, cu_q, cu_k, causal)
    got = run_varlen(impl, q.clone(), k.clone(), v.clone(), cu_q, cu_k, causal, on)
    expect_close(got, twin.varlen(q, k, v, cu_q, cu_k, causal), _("the output (T_q, h, d)"), on,
                 twin.attention_suspects(q, k, v, cu_q, cu_k, causal)
                 + [leak_suspect(impl, q, k, v, cu_q, cu_k, causal, on)])


@pytest.mark.core
@title(N_("varlen_attention: each query against its own segment's keys"))
def test_varlen_attention(impl: Implementation) -> None:
    for seed, case in enumerate(FREE_CASES):
        check_varlen(impl, case, False, torch.float32, 10 * seed)


@pytest.mark.core
@title(N_("varlen_attention with causal=True: masks aligned bottom-right per segment"))
def test_varlen_attention_causal(impl: Implementation) -> None:
    for seed, case in enumerate(CAUSAL_CASES):
        check_varlen(impl, case, True, torch.float32, 100 + 10 * seed)


@pytest.mark.followup
@title(N_("varlen_attention in float64 with int64 cu_seqlens"))
def test_varlen_attention_float64_int64(impl: Implementation) -> None:
    for seed, case in enumerate(CAUSAL_CASES[:2]):
        for causal in (False, True):
            check_varlen(impl, case, causal, torch.float64, 200 + 10 * seed, torch.int64)


@functools.cache
def expected_grads(segments: tuple, h: int, d: int, seed: int, causal: bool,
                   switch: str | None) -> dict[str, Tensor]:
    q, k, v, cu_q, cu_k = twin.batch(list(segments), h, d, seed, torch.float64)
    q, k, v = leaf_copies(q, k, v)
    out = twin.varlen(q, k, v, cu_q, cu_k, causal, switch)
    return dict(zip("qkv", torch.autograd.grad(weighted_sum([out], 7), (q, k, v))))


@pytest.mark.followup
@title(N_("varlen_attention's gradients with respect to q, k and v (float64)"))
def test_varlen_attention_gradients(impl: Implementation) -> None:
    segments, h, d = CAUSAL_CASES[0]
    for causal in (False, True):
        q, k, v, cu_q, cu_k = twin.batch(segments, h, d, 300, torch.float64)
        on = describe_call(q, k, v, cu_q, cu_k, causal)
        leaves = leaf_copies(q, k, v)
        got = run_varlen(impl, *leaves, cu_q, cu_k, causal, on)
        expect_close(got, twin.varlen(q, k, v, cu_q, cu_k, causal), _("the output (T_q, h, d)"),
                     on, twin.attention_suspects(q, k, v, cu_q, cu_k, causal)
                     + [leak_suspect(impl, q, k, v, cu_q, cu_k, causal, on)])
        if not got.requires_grad:
            raise verdict(_("the gradients of varlen_attention"), on, [
                _("the output does not track gradients: is part of it detached, computed under "
                  "torch.no_grad(), or copied with .item() / .tolist()?")])
        grads = grads_of(weighted_sum([got], 7), dict(zip("qkv", leaves)), on)
        key = (tuple(segments), h, d, 300, causal)
        expected = expected_grads(*key, None)
        switches = [s for s in twin.ATTENTION_MISTAKES if causal or s in ("no-scale", "pack-full")]
        for name in "qkv":
            suspects = [Suspect(twin.ATTENTION_MISTAKES[s],
                                lambda s=s, name=name: expected_grads(*key, s)[name])
                        for s in switches]
            expect_close(grads[name], expected[name],
                         _("the gradient of {name}", name=name), on, suspects, slack=GRAD_SLACK)


@pytest.mark.core
@title(N_("varlen_attention creates no padded tensor (a 96-token prefill beside 41 short "
          "segments)"))
def test_varlen_attention_creates_no_padding(impl: Implementation) -> None:
    q, k, v, cu_q, cu_k = twin.skewed_batch()
    on = describe_call(q, k, v, cu_q, cu_k, True, segments=False) + _(
        "; a 96-token prefill, 40 decode segments (n = 1, m = 8), a 5-token chunk after 15 "
        "cached tokens")
    recorder = CreatedTensors()
    got = run_varlen(impl, q.clone(), k.clone(), v.clone(), cu_q, cu_k, True, on, recorder)
    limit = twin.memory_limit(q.shape[0], k.shape[0], q.shape[1], q.shape[2])
    numel, shape, op = recorder.largest or (0, (), "")
    if numel > limit:
        longest = max(n for n, _ in twin.SKEWED)  # a padded tensor has an axis this long
        raise verdict(_("the size of every tensor varlen_attention creates"), on, [
            _("your code created a tensor of shape {shape} ({count} elements, by {op})",
              shape=shape, count=f"{numel:,}", op=op),
            _("the limit is h · max(T_q · T_k, (T_q + T_k) · d) = {limit} elements: a loop over "
              "segments peaks at 18,432, one block-diagonal mask over the pack at 122,952; "
              "padding every segment to the longest makes (B, h, 96, 96) scores",
              limit=f"{limit:,}"),
        ], "padded-to-longest" if longest in shape[:-1] else None)
    expect_close(got, twin.varlen(q, k, v, cu_q, cu_k, True), _("the output (T_q, h, d)"), on,
                 twin.attention_suspects(q, k, v, cu_q, cu_k, True)
                 + [leak_suspect(impl, q, k, v, cu_q, cu_k, True, on)])


@pytest.mark.followup
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@title(N_("varlen_attention in half precision on a CUDA GPU"))
def test_varlen_attention_half_on_cuda(impl: Implementation) -> None:
    segments, h, d = CAUSAL_CASES[0]
    for i, dtype in enumerate((torch.float16, torch.bfloat16)):
        for causal in (False, True):
            q, k, v, cu_q, cu_k = twin.batch(segments, h, d, 400 + i, torch.float32)
            q, k, v = (t.to("cuda", dtype) for t in (q, k, v))
            on = describe_call(q, k, v, cu_q, cu_k, causal) + ", cuda"
            got = run_varlen(impl, q.clone(), k.clone(), v.clone(), cu_q.cuda(), cu_k.cuda(),
                             causal, on)
            expected = twin.varlen(q.cpu(), k.cpu(), v.cpu(), cu_q, cu_k, causal).to("cuda")
            expect_close(got, expected, _("the output (T_q, h, d)"), on)


# ---------------------------------------------------------------------------- generate_all

def describe_requests(requests, S: int, C: int, eos_id: int | None) -> str:
    parts = []
    for prompt, n in requests:
        shown = repr(prompt) if len(prompt) <= 6 else f"[{prompt[0]}] · {len(prompt)}" \
            if len(set(prompt)) == 1 else f"[{len(prompt)} tokens]"
        parts.append(f"({shown}, {n})")
    eos = "" if eos_id is None else f", eos_id={eos_id}"
    return f"requests=[{', '.join(parts)}], max_batch_size={S}, max_batch_tokens={C}{eos}"


def schedule_line(model: ServingModel, last: int = 6) -> str:
    calls = ["(" + ", ".join(f"R{i} {t}" for i, t in call) + ")" for call in model.schedule]
    if not calls:
        return _("no call was accepted before this one")
    return _("the calls accepted before, as (request, tokens): {calls}",
             calls=("… " if len(calls) > last else "") + listing(calls[-last:]))


def call_generate(impl: Implementation, model: ServingModel, requests, S: int, C: int,
                  eos_id: int | None, on: str) -> Any:
    args = ([(list(p), n) for p, n in requests], S, C)
    kwargs = {} if eos_id is None else {"eos_id": eos_id}
    try:
        return impl.call(impl.attr("generate_all"), model, *args, what="generate_all", on=on,
                         **kwargs)
    except GradingFailure:
        if model.violation is None:
            raise
        return None


def one_token_too_many(impl: Implementation, requests, S: int, C: int, eos_id, on: str) -> bool:
    """Run again with a model that computes a request kept after its last token: one token
    too many for every request that ran to max_new_tokens is max-new-tokens-off-by-one."""
    model = ServingModel(requests, S, C, eos_id, lenient=True)
    got = call_generate(impl, model, requests, S, C, eos_id, on)
    if model.violation is not None or not isinstance(got, (list, tuple)) or len(got) != len(requests):
        return False
    extra = False
    for (prompt, n), out in zip(requests, got):
        want = list(decode_alone(tuple(prompt), n, eos_id))
        out = list(out) if isinstance(out, (list, tuple)) else None
        if out is None:
            return False
        if len(want) < n:  # finished by eos_id
            if out != want:
                return False
        elif out[:n] != want or len(out) != n + 1:
            return False
        else:
            extra = True
    return extra


def output_slug(model: ServingModel, got: list[list[int]], want: list[list[int]],
                eos_id) -> str | None:
    if sorted(map(tuple, got)) == sorted(map(tuple, want)):
        return "outputs-out-of-order"
    for i, (g, w) in enumerate(zip(got, want)):
        if g == w:
            continue
        if eos_id is not None and w[-1] == eos_id and g == w[:-1]:
            return "eos-dropped"
        if g and g[0] in model.mid_prompt[i] and g[0] != w[0]:
            return "sampled-mid-prompt"
        at = next((a for a in range(min(len(g), len(w))) if g[a] != w[a]), None)
        if at is not None and at < len(model.other_rows[i]) and g[at] in model.other_rows[i][at]:
            return "logits-row-mismatch"
        return None
    return None


def check_generate(impl: Implementation, requests, S: int, C: int, eos_id: int | None = None,
                   check: str | None = None) -> None:
    check = check or _("generate_all against each request decoded alone")
    on = describe_requests(requests, S, C, eos_id)
    model = ServingModel(requests, S, C, eos_id)
    got = call_generate(impl, model, requests, S, C, eos_id, on)
    if model.violation is not None:
        found = model.violation
        slug = found.slug
        if slug == "finished-request-kept" and one_token_too_many(impl, requests, S, C, eos_id, on):
            slug = "max-new-tokens-off-by-one"
        raise verdict(check, on, [
            _("call {call} breaks a rule: {problem}", call=found.call, problem=found.message),
            schedule_line(model)], slug)
    want = [list(decode_alone(tuple(p), n, eos_id)) for p, n in requests]
    if not (isinstance(got, (list, tuple)) and len(got) == len(requests)
            and all(isinstance(g, (list, tuple)) for g in got)):
        raise verdict(check, on, [_("expected a list of {count} lists of ints, got {value}",
                                    count=len(requests), value=describe_value(got))])
    if not all(isinstance(t, int) and not isinstance(t, bool) for g in got for t in g):
        raise verdict(check, on, [_("expected Python ints (int(logits[row].argmax())), got "
                                    "{value}", value=describe_value(got))])
    got = [list(g) for g in got]
    unfinished = [i for i in range(len(requests)) if model.finished[i] is None]
    if unfinished:
        i = unfinished[0]
        ready = len(model.known[i]) - model.seen[i]
        raise verdict(check, on, [
            _("request {i} never finished: the model saw {seen} of its tokens and it generated "
              "{count}", i=i, seen=model.seen[i], count=len(model.generated[i])),
            schedule_line(model)], "prefill-not-chunked" if ready > C else
            "sampled-mid-prompt" if got[i][:1] and got[i][0] in model.mid_prompt[i]
            and got[i][:1] != model.generated[i][:1] else None)
    if got != want:
        i = next(i for i in range(len(want)) if got[i] != want[i])
        raise verdict(check, on, [
            _("request {i}: expected {want}, got {got}", i=i, want=want[i], got=got[i]),
            _("expected, for every request: {want}", want=want)],
            output_slug(model, got, want, eos_id))
    bound = model.call_bound()
    if model.calls > bound:
        raise verdict(check, on, [
            _("{calls} calls; at most ⌊W / min(S, C)⌋ + max n_i = {bound} for a schedule "
              "whose every call is maximal", calls=model.calls, bound=bound)])


EXAMPLE = [([1, 2, 3], 2), ([4, 5, 6], 8), ([7] * 20, 2), ([8, 9], 5)]


@pytest.mark.core
@title(N_("generate_all on the README's example (S = 2, C = 16)"))
def test_generate_all_example(impl: Implementation) -> None:
    check_generate(impl, EXAMPLE, 2, 16)


SCHEDULES = (
    # many requests, prompts longer than the budget, one token for one of them
    ([([5, 1, 4, 9, 2], 4), ([3] * 12, 2), ([6], 6), ([2, 7, 1, 8, 2, 8, 1, 8, 2], 1),
      ([9, 4, 3], 3), ([1, 3] * 10, 2)], 3, 8),
    ([([3, 1, 4, 1, 5], 3), ([9, 2], 2), ([6] * 7, 2)], 1, 4),  # one request a call
    ([([2, 4, 6], 3), ([8, 10, 12, 14], 2), ([1], 4)], 4, 1),  # one token a call
    ([([11, 12], 5), ([13], 2), ([14, 15, 16, 17], 3), ([5, 6, 7], 1), ([8, 8], 4)], 8, 64),
    # prompts of exactly the budget, one token each
    ([([1, 2, 3, 4, 5, 6, 7, 8], 1), ([9] * 8, 1), ([3, 5, 7], 1)], 2, 8),
)


@pytest.mark.core
@title(N_("generate_all with other batch sizes, budgets and requests"))
def test_generate_all_schedules(impl: Implementation) -> None:
    for requests, S, C in SCHEDULES:
        check_generate(impl, requests, S, C)


@functools.cache
def eos_case() -> tuple[list, int]:
    """Requests and an eos_id that several of them generate before their last token."""
    requests = [([4, 2], 9), ([7, 7, 1, 3], 8), ([12, 5, 9, 10, 11, 2, 3], 9), ([6, 1], 3),
                ([15, 14, 13], 9), ([4, 5, 6, 15, 5, 0], 3)]  # the last one: eos at once
    counts: dict[int, int] = {}
    for prompt, n in requests:
        out = decode_alone(tuple(prompt), n, None)
        for t in set(out[:-1]):
            if all(t not in p for p, _ in requests):
                counts[t] = counts.get(t, 0) + 1
    eos = max(sorted(counts), key=lambda t: counts[t])
    return requests, eos


# eos_id = 0, a falsy id: `if token:` or `if eos_id and ...` never stops. Requests 1, 2 and 4
# generate 0 before their last token (tests/test_continuous_batching.py checks it).
EOS_ZERO = [([4, 2], 9), ([7, 17, 5, 10, 5], 6), ([15, 14, 13], 9), ([6, 1], 3), ([3, 21], 8)]


@pytest.mark.core
@title(N_("generate_all with eos_id (also eos_id = 0): eos kept, nothing after it"))
def test_generate_all_eos(impl: Implementation) -> None:
    requests, eos = eos_case()
    check_generate(impl, requests, 3, 6, eos)
    check_generate(impl, EOS_ZERO, 3, 6, 0)
