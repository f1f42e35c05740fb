"""Kata 25 beyond its mutants: the quiz and the README's follow-ups checked by running the
reference with the grader's model, and independently written files graded end to end —
correct scheduling policies pass, other mistakes are named as the contract says."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from graders.batching import twin
from graders.batching.checks import EOS_ZERO, EXAMPLE
from graders.batching.model import ServingModel, decode_alone
from graders.core import registry
from graders.frontends import quiz as quizzes
from graders.core.memory import CreatedTensors
from tests.grading_session import run_session

KATA = registry.get("25")


def solution():
    spec = importlib.util.spec_from_file_location("_k25_reference", KATA.solution_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def answer(words: str):
    return next(q.answer for q in quizzes.questions("25") if words in q.prompt)


def static_generate(model_step, requests, S, C):
    """Static batching: the next S requests only when the batch has drained."""
    known = [list(p) for p, _ in requests]
    seen, out, active = [0] * len(requests), [[] for _ in requests], []
    while any(len(o) < n for o, (_, n) in zip(out, requests)):
        active = [i for i in active if len(out[i]) < requests[i][1]] or [
            i for i in range(len(requests)) if len(out[i]) < requests[i][1]][:S]
        ids, pos, cu, budget = [], [], [0], C
        for i in active:
            take = min(len(known[i]) - seen[i], budget)
            if take == 0:
                break
            ids += known[i][seen[i]:seen[i] + take]
            pos += range(seen[i], seen[i] + take)
            cu.append(cu[-1] + take)
            budget -= take
        rows = active[:len(cu) - 1]
        logits = model_step(torch.tensor(ids), torch.tensor(pos),
                            torch.tensor(cu, dtype=torch.int32), rows)
        for row, i in enumerate(rows):
            seen[i] += cu[row + 1] - cu[row]
            if seen[i] == len(known[i]):
                known[i].append(int(logits[row].argmax()))
                out[i].append(known[i][-1])
    return out


def test_quiz_and_follow_ups_by_running_the_reference():
    model = ServingModel(EXAMPLE, 2, 16)
    outputs = solution().generate_all(model, [(list(p), n) for p, n in EXAMPLE], 2, 16)
    assert model.violation is None and model.calls == answer("how many model calls") == 10
    assert [[(i, t) for i, t in call] for call in model.schedule] == [
        [(0, 3), (1, 3)], [(0, 1), (1, 1)], [(1, 1), (2, 15)], [(1, 1), (2, 5)], [(1, 1), (2, 1)],
        [(1, 1), (3, 2)], [(1, 1), (3, 1)], [(1, 1), (3, 1)], [(3, 1)], [(3, 1)]]
    assert model.call_bound() == answer("The bound on the number of calls") == 28
    # static batching: the same tokens in 14 calls, 6 of them not maximal (R1 decoding alone)
    lenient = ServingModel(EXAMPLE, 2, 16, lenient=True)
    lenient.check_maximal = lambda *args: None  # count the calls without refusing any
    assert static_generate(lenient, EXAMPLE, 2, 16) == outputs and lenient.calls == 14
    alone = [call for call in lenient.schedule if len(call) == 1 and call[0][1] < 16]
    assert sum(call[0][0] == 1 for call in alone) == 6
    # padding: the skewed batch's limit, a loop's peak, padded scores; 74% waste
    q, k, v, cu_q, cu_k = twin.skewed_batch()
    assert twin.memory_limit(q.shape[0], k.shape[0], 2, 16) == 122_952
    recorder = CreatedTensors()
    with recorder:
        solution().varlen_attention(q, k, v, cu_q, cu_k, causal=True)
    assert recorder.largest[0] == 18_432
    assert answer("how many elements has the (B, h, 96, 96)") == len(twin.SKEWED) * 2 * 96 * 96
    assert answer("what percentage") == round(100 * (1 - 1030 / 4000)) == 74
    # decode is memory-bound: 4.8 ms to read Llama-3-8B's weights, ridge ~295, 128 KiB/token
    assert round(16.06e9 / 3.35e12 * 1e3, 1) == 4.8 and round(989 / 3.35) == 295
    assert 2 * 32 * 8 * 128 * 2 == 128 * 1024


def test_decode_batching_shares_the_weight_reads_not_the_kv_reads():
    """The README's and lesson's follow-up: step time = (weights + B · 2,048 · 128 KiB) / BW
    for Llama-3-8B at 3.35 TB/s, attention's 4 FLOPs per KV byte, and the cost of chunking an
    8,192-token prompt in chunks of 512."""
    weights, bandwidth, kv_per_token = 16.06e9, 3.35e12, 2 * 32 * 8 * 128 * 2
    rows = {}
    for batch in (1, 32, 64, 160):
        kv = batch * 2048 * kv_per_token
        step = (weights + kv) / bandwidth
        rows[batch] = (round(kv / 1e9, 2), round(step * 1e3, 2), round(100 * kv / (weights + kv)),
                       round(batch / step))
    assert rows == {1: (0.27, 4.87, 2, 205), 32: (8.59, 7.36, 35, 4349),
                    64: (17.18, 9.92, 52, 6450), 160: (42.95, 17.61, 73, 9083)}
    assert 160 * 2048 * kv_per_token == 40 * 2**30  # what 40 GiB holds (kata 22)
    assert 2 * 2 * 32 * 128 / (kv_per_token / 32) == 4  # FLOPs per KV byte, whatever B
    reread = sum(j * 512 for j in range(8192 // 512))
    assert (8192 // 512, reread, 8192**2 // (2 * 512)) == (16, 61_440, 65_536)
    assert (round(reread * kv_per_token / 1e9, 2), round(reread * kv_per_token / bandwidth * 1e3, 1)) \
        == (8.05, 2.4)
    readme = (KATA.folder / "README.md").read_text()
    for shown in ("4.87 ms", "7.36 ms", "9.92 ms", "52%", "17.61 ms", "73%", "205 to 9,083",
                  "4 FLOPs per KV byte"):
        assert shown in " ".join(readme.split()), shown


def test_the_eos_zero_case_stops_requests_early():
    """eos_id = 0 ends three requests before their max_new_tokens, and no prompt holds 0: a
    scheduler that tests the token for truthiness keeps them going."""
    early = [i for i, (p, n) in enumerate(EOS_ZERO)
             if 0 not in p and len(decode_alone(tuple(p), n, 0)) < n]
    assert early == [1, 2, 4] and all(0 not in p for p, _ in EOS_ZERO)


def test_causal_mask_offset_is_worded_in_this_katas_terms(tmp_path):
    """The shared slug speaks of m_j − n_j here (kata 25's WORDINGS), not of kata 11's cache
    length s, in the verdict and in `kata check`'s hint column."""
    from graders.core import catalogue
    from graders.core.session import grade
    from graders.frontends.rendering import render
    from rich.console import Console

    path = tmp_path / "top_left.py"
    path.write_text(SOURCE.replace("tril(m - n)", "tril(0)"))
    session = run_session(KATA, "--impl", str(path))
    assert session.slugs == {"causal-mask-offset"}
    assert "m_j − n_j + a" in session.output and "cache length s" not in session.output
    console = Console(width=200, record=True)
    render(grade("25", path), console, plain=True)
    hint = catalogue.mistake("causal-mask-offset", "25").hint
    assert hint in console.export_text() and "s + t" not in console.export_text()


def test_q_modified_in_place_is_called_q_in_every_check(tmp_path):
    """The no-padding check records the call through a wrapper: the guard still says `q`."""
    path = tmp_path / "in_place.py"
    path.write_text(SOURCE.replace("    out = torch.empty_like(q)\n",
                                   "    q.mul_(1.0)\n    out = torch.empty_like(q)\n"))
    session = run_session(KATA, "--impl", str(path))
    verdicts = "\n".join("\n".join(report) for report in session.failure_reports())
    assert verdicts.count("it modified `q` in place") == 4  # the gradients' q is a leaf
    assert "`args`" not in session.output


SOURCE = KATA.solution_path.read_text()
OTHERS = {
    # correct: any maximal policy passes
    "decodes_first": (None, [("        for i in range(len(requests)):\n",
                              "        for i in sorted(range(len(requests)), key=lambda i: "
                              "(len(known[i]) - seen[i] > 1, i)):\n")]),
    "int64_and_tensor_ids": (None, [("torch.tensor(cu, dtype=torch.int32), seq_ids)",
                                     "torch.tensor(cu), torch.tensor(seq_ids))")]),
    # mistaken, written apart from the mutants
    "pack_positions": ("position-ids-wrong", [("torch.tensor(pos, dtype=torch.int64),",
                                               "torch.arange(len(ids)),")]),
    "rows_in_request_order": ("logits-row-mismatch", [
        ("        for i in range(len(requests)):\n",
         "        for i in sorted(range(len(requests)), key=lambda i: (len(known[i]) - seen[i], -i)):\n"),
        ("            token = int(logits[row].argmax())\n",
         "            token = int(logits[sorted(seq_ids).index(i)].argmax())\n")]),
    "keys_from_the_pack_start": ("cross-sequence-attention", [
        ("k[cu_k[j]:cu_k[j + 1]], v[cu_k[j]:cu_k[j + 1]]", "k[:cu_k[j + 1]], v[:cu_k[j + 1]]")]),
    "chunk_rows_counted": ("sampled-mid-prompt", [
        ("                continue  # a prompt chunk that does not finish the prompt\n",
         "                out[i].append(int(logits[row].argmax()))\n                continue\n")]),
}


@pytest.mark.parametrize("name", OTHERS)
def test_independent_files_are_graded_as_the_contract_says(tmp_path, name):
    slug, edits = OTHERS[name]
    text = SOURCE
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    session = run_session(KATA, "--impl", str(path))
    if slug is None:
        assert session.exit_code == 0 and session.slugs == set(), session.output
    else:
        assert session.exit_code == 1 and session.slugs == {slug}, session.output
