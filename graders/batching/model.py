"""The grader's model for generate_all: a tiny float64 decoder that keeps every request's keys
and values itself and checks every call against the scheduling rules of kata 25.

Each segment is computed on its own (one attention layer over its request's cache), so a row
depends only on its request's tokens and positions: greedy decoding is batch-invariant and
must equal each request decoded alone. :class:`ServingModel` knows the true state of every
request (tokens known, tokens seen, finished or not), so it judges each call by behaviour:
the first rule a call breaks is kept as a :class:`Violation` (what went wrong, and the
mistake it shows) and the call raises ValueError.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import torch
from torch import Tensor

from graders.core.i18n import _
from graders.twins.attention import dense

VOCAB, WIDTH, MAX_POSITIONS = 24, 16, 96


@functools.cache
def weights() -> dict[str, Tensor]:
    g = torch.Generator().manual_seed(2525)
    w = {name: torch.randn(*shape, generator=g, dtype=torch.float64) / math.sqrt(shape[0])
         for name, shape in (("wq", (WIDTH, WIDTH)), ("wk", (WIDTH, WIDTH)),
                             ("wv", (WIDTH, WIDTH)), ("out", (WIDTH, VOCAB)))}
    w["emb"] = torch.randn(VOCAB, WIDTH, generator=g, dtype=torch.float64)
    w["pos"] = torch.randn(MAX_POSITIONS, WIDTH, generator=g, dtype=torch.float64)
    w["out"] = w["out"] * 4.0
    return w


def segment_row(cache: list[Tensor], ids: list[int], positions: list[int]) -> Tensor:
    """Appends the segment's keys and values to ``cache`` ([K, V] or []) and returns the
    logits (V,) after its last token."""
    w = weights()
    x = (w["emb"][[t % VOCAB for t in ids]]
         + w["pos"][[min(max(p, 0), MAX_POSITIONS - 1) for p in positions]])
    keys, values = x @ w["wk"], x @ w["wv"]
    if cache:
        cache[0], cache[1] = torch.cat([cache[0], keys]), torch.cat([cache[1], values])
    else:
        cache[:] = [keys, values]
    q = x[-1:] @ w["wq"]  # the last token's query only: (1, WIDTH)
    attended = dense(q, cache[0], cache[1])[0]
    return torch.tanh(x[-1] + attended) @ w["out"]


@functools.cache
def decode_alone(prompt: tuple[int, ...], max_new_tokens: int, eos_id: int | None) -> tuple[int, ...]:
    """The request decoded greedily on its own: the prompt in one call, then a token a call."""
    cache: list[Tensor] = []
    row = segment_row(cache, list(prompt), list(range(len(prompt))))
    out: list[int] = []
    while True:
        out.append(int(row.argmax()))
        if out[-1] == eos_id or len(out) == max_new_tokens:
            return tuple(out)
        row = segment_row(cache, [out[-1]], [len(prompt) + len(out) - 1])


@dataclass
class Violation:
    call: int  # 1-based
    message: str
    slug: str | None


class Broken(Exception):
    def __init__(self, message: str, slug: str | None = None):
        super().__init__(message)
        self.slug = slug


@dataclass
class ServingModel:
    """model_step for ``requests`` under max_batch_size ``S`` and max_batch_tokens ``C``.
    ``lenient``: a request scheduled after its last token is computed, not refused (to tell
    one extra token from a request kept for ever)."""

    requests: list[tuple[list[int], int]]
    S: int
    C: int
    eos_id: int | None = None
    lenient: bool = False
    calls: int = 0
    violation: Violation | None = None
    schedule: list[list[tuple[int, int]]] = field(default_factory=list)  # per call: (i, tokens)

    def __post_init__(self) -> None:
        n = len(self.requests)
        self.known = [list(p) for p, _ in self.requests]
        self.seen = [0] * n
        self.generated: list[list[int]] = [[] for _ in range(n)]
        self.finished: list[str | None] = [None] * n  # "eos", "max" or None
        self.finish_call = [0] * n
        self.caches: list[list[Tensor]] = [[] for _ in range(n)]
        self.mid_prompt: list[set[int]] = [set() for _ in range(n)]  # rows of unfinished prompts
        self.other_rows: list[list[set[int]]] = [[] for _ in range(n)]  # per generated token

    # -------------------------------------------------------------------------------- call
    def __call__(self, input_ids, positions, cu_seqlens, seq_ids) -> Tensor:
        self.calls += 1
        if self.violation is not None:
            raise ValueError(_("call {call}: no call may follow a refused one",
                               call=self.calls))
        try:
            if self.lenient and self.calls > 2 * self.call_bound():
                raise Broken(_("{calls} calls, twice the bound on the number of calls",
                               calls=self.calls))
            return self.step(input_ids, positions, cu_seqlens, seq_ids)
        except Broken as broken:
            self.violation = Violation(self.calls, str(broken), broken.slug)
            raise ValueError(_("call {call}: {problem}", call=self.calls,
                               problem=str(broken))) from None

    def step(self, input_ids, positions, cu_seqlens, seq_ids) -> Tensor:
        ids, pos, cu, rows_of = self.parse(input_ids, positions, cu_seqlens, seq_ids)
        segments = []
        for j, i in enumerate(rows_of):
            a, b = cu[j], cu[j + 1]
            if self.finished[i] == "eos":
                raise Broken(_("request {i} is in the call after it generated eos_id", i=i),
                             "continues-after-eos")
            if self.finished[i] == "max" and not self.lenient:
                # A request whose prompt was chunked may have been kept because tokens taken
                # from its chunks' rows were counted: the two cannot be told apart here.
                raise Broken(_("request {i} is in the call after its max_new_tokens-th token",
                               i=i), None if self.mid_prompt[i] else "finished-request-kept")
            if self.finished[i] is None:
                self.check_segment(i, ids[a:b], pos[a:b])
            segments.append((i, ids[a:b], pos[a:b]))
        total = len(ids)
        if len(rows_of) > self.S or total > self.C:
            raise Broken(_("the call holds {segments} segments and {tokens} tokens; "
                           "max_batch_size={S}, max_batch_tokens={C}", segments=len(rows_of),
                           tokens=total, S=self.S, C=self.C), "budget-exceeded")
        self.check_maximal(rows_of, cu, total)
        return self.compute(segments)

    def parse(self, input_ids, positions, cu_seqlens, seq_ids):
        def is_index(t, dtypes) -> bool:
            return isinstance(t, Tensor) and t.dim() == 1 and t.dtype in dtypes
        if not is_index(input_ids, (torch.int64,)) or not is_index(positions, (torch.int64,)):
            raise Broken(_("input_ids and positions must be 1-D int64 tensors"))
        if not is_index(cu_seqlens, (torch.int32, torch.int64)):
            raise Broken(_("cu_seqlens must be a 1-D int32 (or int64) tensor"))
        ids, pos, cu = input_ids.tolist(), positions.tolist(), cu_seqlens.tolist()
        try:
            rows_of = [int(s) for s in seq_ids]
        except (TypeError, ValueError):
            raise Broken(_("seq_ids must be a list of ints")) from None
        if len(pos) != len(ids) or len(cu) != len(rows_of) + 1 or not cu or cu[0] != 0 \
                or cu[-1] != len(ids) or any(b <= a for a, b in zip(cu, cu[1:])):
            raise Broken(_("cu_seqlens {cu} does not cut {tokens} tokens into {segments} "
                           "non-empty segments", cu=cu, tokens=len(ids), segments=len(rows_of)))
        if len(set(rows_of)) != len(rows_of) or any(not 0 <= i < len(self.requests)
                                                     for i in rows_of):
            raise Broken(_("seq_ids {ids} are not distinct request indices", ids=rows_of))
        return ids, pos, cu, rows_of

    def check_segment(self, i: int, ids: list[int], pos: list[int]) -> None:
        known, c = self.known[i], self.seen[i]
        length = len(ids)
        want = list(range(c, c + length))
        if pos != want:
            if ids == known[c:c + length]:
                raise Broken(_("request {i}'s tokens sit at positions {got}; the model has seen "
                               "{seen} of its tokens, so they are at {want}", i=i, got=pos,
                               seen=c, want=want), "position-ids-wrong")
            start = pos[0]
            if 0 <= start < c and pos == list(range(start, start + length)) \
                    and ids == known[start:start + length]:
                raise Broken(_("request {i}'s tokens from position {start} are sent again; the "
                               "model has seen {seen} of them and keeps their keys and values",
                               i=i, start=start, seen=c), "tokens-refed")
            raise Broken(_("request {i}'s tokens sit at positions {got}, not {want}", i=i,
                           got=pos, want=want), "position-ids-wrong")
        ready = len(known) - c
        if length > ready:
            slug = "sampled-mid-prompt" if ids[ready] in self.mid_prompt[i] else None
            raise Broken(_("request {i}'s segment holds {length} tokens but only {ready} are "
                           "ready (a prompt chunk that does not finish the prompt yields no "
                           "token)", i=i, length=length, ready=ready), slug)
        if ids != known[c:c + length]:
            at = next(a for a in range(length) if ids[a] != known[c + a])
            p = len(self.requests[i][0])
            slug = None
            if c + at >= p and ids[at] in self.other_rows[i][c + at - p]:
                slug = "logits-row-mismatch"
            raise Broken(_("request {i}'s token at position {position} is {got}, not {want}",
                           i=i, position=c + at, got=ids[at], want=known[c + at]), slug)

    def check_maximal(self, rows_of: list[int], cu: list[int], total: int) -> None:
        if total == self.C:
            return
        length = {i: cu[j + 1] - cu[j] for j, i in enumerate(rows_of)}
        waiting = [i for i in range(len(self.requests)) if self.finished[i] is None]
        short = [i for i in rows_of if self.finished[i] is None
                 and length[i] < len(self.known[i]) - self.seen[i]]
        left_out = [i for i in waiting if i not in length]
        if not short and (len(rows_of) == self.S or not left_out):
            if rows_of:
                return
            raise Broken(_("an empty call, after every request has finished"))
        spare = self.C - total
        if short:
            i = short[0]
            raise Broken(_("request {i} has only {length} of its ready tokens ({ready}) in the "
                           "call, which holds {total} of max_batch_tokens={C} tokens", i=i,
                           ready=len(self.known[i]) - self.seen[i], length=length[i],
                           total=total, C=self.C), "prefill-not-chunked")
        fits = [i for i in left_out if len(self.known[i]) - self.seen[i] <= spare]
        i = (fits or left_out)[0]
        slug = "static-batching" if fits else "prefill-not-chunked"
        if self.mid_prompt[i]:  # its prompt was chunked: left out mid-prompt (a pause), or
            # taken for finished because tokens from its chunks' rows were counted
            slug = None if self.seen[i] < len(self.requests[i][0]) else "sampled-mid-prompt"
        raise Broken(_("request {i} waits (ready tokens: {ready}) while the call holds "
                       "{segments} of max_batch_size={S} segments and {total} of "
                       "max_batch_tokens={C} tokens", i=i,
                       ready=len(self.known[i]) - self.seen[i], segments=len(rows_of), S=self.S,
                       total=total, C=self.C), slug)

    def compute(self, segments: list[tuple[int, list[int], list[int]]]) -> Tensor:
        rows = [segment_row(self.caches[i], ids, pos) for i, ids, pos in segments]
        tops = [int(r.argmax()) for r in rows]
        self.schedule.append([(i, len(ids)) for i, ids, _ in segments])
        for j, (i, ids, _) in enumerate(segments):
            if self.finished[i] is not None:
                continue
            self.seen[i] += len(ids)
            if self.seen[i] < len(self.known[i]):
                self.mid_prompt[i].add(tops[j])
                continue
            self.known[i].append(tops[j])
            self.generated[i].append(tops[j])
            self.other_rows[i].append({t for r, t in enumerate(tops) if r != j})
            if tops[j] == self.eos_id:
                self.finished[i], self.finish_call[i] = "eos", self.calls
            elif len(self.generated[i]) == self.requests[i][1]:
                self.finished[i], self.finish_call[i] = "max", self.calls
        return torch.stack(rows)

    # ------------------------------------------------------------------------------ after
    def call_bound(self) -> int:
        """⌊W / min(S, C)⌋ + max n_i, W = Σ (p_i + n_i − 1)."""
        n = [len(decode_alone(tuple(p), m, self.eos_id)) for p, m in self.requests]
        work = sum(len(p) + k - 1 for (p, _), k in zip(self.requests, n))
        return work // min(self.S, self.C) + max(n)
