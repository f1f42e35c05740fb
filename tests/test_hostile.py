"""Hostile learner code, for every kata, through every way of grading it.

Each case is the kata's reference solution with one piece of sabotage: its main callable
raises, loops, returns the wrong kind of thing, edits its inputs, prints megabytes, calls
sys.exit or a forbidden built-in; or the file sleeps at import, has a syntax error,
misnames its public name or imports a module that does not exist. Every case must end in
a failing check whose first report says what went wrong in the learner's terms, within a
bounded time, with the learner's file left exactly as it was — except printing, which is no
mistake: a correct file that prints megabytes passes, with one note saying how much it
printed and none of the printout. Every case goes through ``pytest katas/NN --impl FILE``;
a staggered third of them (SAMPLED_PAIRS) also through ``kata check NN --impl FILE`` and
the notebooks' grading cell (``graders.frontends.notebook.check`` on the file's objects;
cases that break a file at import cannot reach that cell: Jupyter itself reports them when
the cell runs).
"""

from __future__ import annotations

import textwrap
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

from graders.frontends import cli, notebook
from graders.core import guard, registry
from graders.core.learner_clock import CallClock
from graders.core.registry import Kata
from tests.grading_session import run_session

TIME_LIMIT_S = 0.5  # the guard's per-call limit where a case waits it out (10 s for learners)
# The limit for every other case: a finite call must not read as endless because a busy CI
# worker (a full garbage collection, a page-in) held it for half a second (it did once, on
# kata 09's construction).
UNWAITED_TIME_LIMIT_S = 5.0
WAITED_OUT = {"loops-forever", "sleeps-at-import"}
SESSION_BOUND_S = 20.0  # a whole grading run of one hostile file must end within this (own time)


@dataclass(frozen=True)
class Target:
    """What the sabotage replaces in a kata's reference solution."""

    owner: str | None  # the class whose method is replaced, or None for a function
    name: str  # the function, or the method
    returns_int: bool = False  # kata 07: plain ints, not tensors
    returns_hypotheses: bool = False  # kata 17: a list of (tokens, score), Python values
    returns_tokens: bool = False  # kata 21: (tokens int64, num_accepted int)


TARGETS = {
    "01_attention": Target(None, "scaled_dot_product_attention"),
    "02_heads": Target(None, "split_heads"),
    "03_mha": Target("MultiheadAttention", "forward"),
    "04_masks": Target(None, "merge_masks"),
    "05_positional_encoding": Target("PositionalEncoding", "forward"),
    "06_encoder_layer": Target("TransformerEncoderLayer", "forward"),
    "07_flops": Target(None, "mha_flops", returns_int=True),
    "08_decoder_layer": Target("TransformerDecoderLayer", "forward"),
    "09_transformer": Target("Seq2SeqTransformer", "forward"),
    "10_vit": Target("Block", "forward"),
    "11_kv_cache": Target("CausalSelfAttention", "forward"),
    "12_rope": Target(None, "apply_rope"),
    "13_gqa": Target("GroupedQueryAttention", "forward"),
    "14_flash_attention": Target(None, "flash_attention"),
    "15_llama_block": Target("LlamaBlock", "forward"),
    "16_sampling": Target(None, "apply_temperature"),
    "17_beam_search": Target(None, "beam_search", returns_hypotheses=True),
    "18_sliding_window": Target(None, "sliding_window_attention"),
    "19_attention_backward": Target(None, "attention_forward"),
    "20_moe": Target("SparseMoeBlock", "forward"),
    "21_speculative_decoding": Target(None, "speculative_step", returns_tokens=True),
    "23_mla": Target("MultiHeadLatentAttention", "forward"),
    "24_kv_quant": Target("QuantizedKVCache", "attention"),
    "22_paged_kv_cache": Target(None, "paged_attention"),
    "25_continuous_batching": Target(None, "varlen_attention"),
    "26_cross_entropy": Target(None, "next_token_loss"),
    "27_adamw": Target(None, "clip_grad_norm_"),
    "28_lora": Target("LoRALinear", "forward"),
    "29_dpo": Target(None, "sequence_logprobs"),
    "30_grpo": Target(None, "grpo_loss"),
    "31_tensor_parallel": Target("TensorParallelAttention", "forward"),
}

# Call-time sabotage: the body of a wrapper around the original callable. ``_each(value,
# fn)`` applies fn to every floating tensor in a result; ``_first_tensor(args)`` is the
# first tensor argument.
TENSOR_BODIES = {
    "raises": "raise RuntimeError('boom from the learner')",
    "loops-forever": "while True:\n    pass",
    "returns-none": "_original(*args, **kwargs)\nreturn None",
    "returns-list": "return _each(_original(*args, **kwargs), lambda t: t.tolist())",
    "returns-numpy": "return _each(_original(*args, **kwargs), lambda t: t.detach().numpy())",
    "wrong-length-tuple": "out = _original(*args, **kwargs)\n"
                          "return (out[0],) if isinstance(out, tuple) else (out, out)",
    "wrong-dtype": "return _each(_original(*args, **kwargs), lambda t: t.to(torch.float64 "
                   "if t.dtype != torch.float64 else torch.float32))",
    "wrong-device": "return _each(_original(*args, **kwargs), lambda t: t.to('meta'))",
    "returns-nan": "return _each(_original(*args, **kwargs), lambda t: t * float('nan'))",
    "returns-inf": "return _each(_original(*args, **kwargs), lambda t: t + float('inf'))",
    "modifies-input": "with torch.no_grad():\n    _scramble_(_first_tensor(args))\n"
                      "return _original(*args, **kwargs)",
    "detaches-output": "return _each(_original(*args, **kwargs), lambda t: t.detach())",
    "prints-megabytes": "print('x' * 3_000_000)\nreturn _original(*args, **kwargs)",
    "calls-sys-exit": "import sys\nsys.exit(3)",
    "forbidden-builtin": "{forbidden}(4, 1)\nreturn _original(*args, **kwargs)",
}
# Kata 07 returns ints: the same mistakes in int form.
INT_BODIES = {
    **TENSOR_BODIES,
    "returns-list": "return [_original(*args, **kwargs)]",
    "returns-numpy": "import numpy\nreturn numpy.array(_original(*args, **kwargs))",
    "wrong-length-tuple": "return (_original(*args, **kwargs),) * 2",
    "wrong-dtype": "return float(_original(*args, **kwargs))",
    "wrong-device": "return torch.tensor(_original(*args, **kwargs))",
    "returns-nan": "return float('nan')",
    "returns-inf": "return float('inf')",
}
# Kata 17 returns [(tokens, score), ...]: a list of Python ints and a float per hypothesis.
HYPOTHESES_BODIES = {
    **TENSOR_BODIES,
    "returns-numpy": "import numpy\nreturn [(numpy.array(t), s) for t, s in _original(*args, **kwargs)]",
    "wrong-length-tuple": "return [(t,) for t, s in _original(*args, **kwargs)]",
    "wrong-dtype": "return [(t, torch.tensor(s, dtype=torch.float32)) for t, s in "
                   "_original(*args, **kwargs)]",
    "wrong-device": "return [(torch.tensor(t, device='meta'), s) for t, s in "
                    "_original(*args, **kwargs)]",
    "returns-nan": "return [(t, float('nan')) for t, s in _original(*args, **kwargs)]",
    "returns-inf": "return [(t, s - float('inf')) for t, s in _original(*args, **kwargs)]",
}
# Kata 21 returns (tokens, num_accepted): an int64 tensor and a Python int.
TOKENS_BODIES = {
    **TENSOR_BODIES,
    "returns-list": "out = _original(*args, **kwargs)\nreturn (out[0].tolist(), out[1])",
    "returns-numpy": "out = _original(*args, **kwargs)\nreturn (out[0].numpy(), out[1])",
    "wrong-dtype": "out = _original(*args, **kwargs)\nreturn (out[0].to(torch.int32), out[1])",
    "wrong-device": "out = _original(*args, **kwargs)\nreturn (out[0].to('meta'), out[1])",
    "returns-nan": "out = _original(*args, **kwargs)\nreturn (out[0], float('nan'))",
    "returns-inf": "out = _original(*args, **kwargs)\nreturn (out[0], float('inf'))",
}
# Whole-file sabotage: {source} is the reference solution, {name} its main public name.
FILE_TEMPLATES = {
    "sleeps-at-import": "{source}\nimport time\ntime.sleep(600)\n",
    "syntax-error": "{source}\ndef broken(:\n    pass\n",
    "misnames-public-name": "{source}\n{name}_v2 = {name}\ndel {name}\n",
    "imports-missing-module": "{source}\nimport attention_helpers_that_do_not_exist\n",
}
# What the first failure must say, in the learner's terms.
EXPECTED = {
    "raises": "your code raised RuntimeError: boom from the learner",
    "loops-forever": "did not finish within",
    "returns-none": "did you forget `return`?",
    "returns-list": "list",
    "returns-numpy": "numpy",
    "wrong-length-tuple": "tuple of",
    "wrong-dtype": "dtype",
    "wrong-device": "device",
    "returns-nan": "NaN",
    "returns-inf": "inf",
    "modifies-input": "in place",
    "detaches-output": "detached",
    "prints-megabytes": "characters while it was graded (not shown; its first line: 'xxxx",
    "calls-sys-exit": "sys.exit(3)",
    "forbidden-builtin": "[forbidden-builtin]",
    "sleeps-at-import": "did not finish within",
    "syntax-error": "syntax error on line",
    "misnames-public-name": "does not define",
    "imports-missing-module": "No module named 'attention_helpers_that_do_not_exist'",
}
EXPECTED_INT = {
    **EXPECTED,
    "returns-none": "did you forget `return`?",
    "wrong-dtype": "right value, wrong type: expected the int",  # 31248.0, not 3.125e+04
    "wrong-device": "not a tensor",
}
# Where a kata's first failing check sees the sabotage differently.
EXPECTED_BY_KATA = {
    # An all-inf mask turns every attention weight into NaN: the first check compares those.
    ("04_masks", "returns-inf"): "NaN",
    ("04_masks", "wrong-length-tuple"): "tuple of 2",
    ("17_beam_search", "wrong-length-tuple"): "expected each item to be a pair (tokens, score)",
    ("17_beam_search", "wrong-dtype"): "the score must be a Python float, got a tensor float32",
    ("17_beam_search", "wrong-device"): "on meta",
    # A 0-d tensor's .tolist() is a Python float, not a list.
    ("26_cross_entropy", "returns-list"): "got a Python float",
    ("30_grpo", "returns-list"): "got a python float",  # a 0-dim loss .tolist() is a float
    # A 0-d tensor's tolist() is a Python float.
    ("27_adamw", "returns-list"): "expected a 0-d tensor, got a Python float",
}
# Cases that cannot apply, and why (the suite checks every other pair).
NOT_APPLICABLE = {
    ("07_flops", "modifies-input"): "its inputs are ints",
    ("07_flops", "detaches-output"): "it returns ints",
    ("04_masks", "detaches-output"): "a mask is not differentiated",
    ("05_positional_encoding", "forbidden-builtin"): "the kata forbids nothing",
    ("07_flops", "forbidden-builtin"): "the kata forbids nothing",
    ("12_rope", "forbidden-builtin"): "the kata forbids nothing",
    ("23_mla", "forbidden-builtin"): "the kata forbids nothing",
    ("16_sampling", "forbidden-builtin"): "the kata forbids nothing",
    ("16_sampling", "detaches-output"): "gradients are not graded",
    ("17_beam_search", "forbidden-builtin"): "the kata forbids nothing",
    ("17_beam_search", "returns-list"): "it returns a list of Python values already",
    ("17_beam_search", "modifies-input"): "its inputs are a function and ints",
    ("17_beam_search", "detaches-output"): "it returns Python values, not tensors",
    ("20_moe", "forbidden-builtin"): "the kata forbids nothing",
    ("21_speculative_decoding", "forbidden-builtin"): "the kata forbids nothing",
    ("21_speculative_decoding", "detaches-output"): "it returns token ids and an int",
    ("19_attention_backward", "detaches-output"): "the forward is never differentiated: "
                                                  "gradients come from the learner's backward",
    ("24_kv_quant", "forbidden-builtin"): "the kata forbids nothing",
    ("24_kv_quant", "detaches-output"): "gradients are not graded (rounding has none)",
    ("22_paged_kv_cache", "detaches-output"): "gradients are not graded (an inference cache)",
    ("29_dpo", "forbidden-builtin"): "the kata forbids nothing",
    ("28_lora", "forbidden-builtin"): "the kata forbids nothing",
    ("30_grpo", "forbidden-builtin"): "the kata forbids nothing",
    ("31_tensor_parallel", "forbidden-builtin"): "the kata forbids nothing",
    ("27_adamw", "modifies-input"): "its first argument is a list of parameters, whose "
                                    "gradients it scales in place by design",
    ("27_adamw", "detaches-output"): "the total norm is returned without grad, as PyTorch's",
}

HELPERS = '''
import torch


def _each(value, fn):
    if isinstance(value, torch.Tensor):
        return fn(value) if value.is_floating_point() else value
    if isinstance(value, (tuple, list)):
        return type(value)(_each(v, fn) for v in value)
    return value


def _first_tensor(args):
    return next((a for a in args if isinstance(a, torch.Tensor)), None)


def _scramble_(t):
    if t is None:
        return
    if t.dtype == torch.bool:
        t.logical_not_()
    elif not t.is_floating_point():  # token ids: permute them, so they stay valid ids
        t.copy_(t.roll(1, dims=-1))
    else:
        t.add_(1.0)
'''

# Cases that are no mistake: the checks pass, and the report carries the EXPECTED note.
PASSING_CASES = {"prints-megabytes"}
ALL_CASES = list(TENSOR_BODIES) + list(FILE_TEMPLATES)
IMPORT_TIME = set(FILE_TEMPLATES)


def applicable(kata: Kata, case: str) -> bool:
    return (kata.name, case) not in NOT_APPLICABLE


def hostile_source(kata: Kata, case: str) -> str:
    source = kata.solution_path.read_text()
    if case in FILE_TEMPLATES:
        return FILE_TEMPLATES[case].format(source=source, name=kata.public_names[0])
    target = TARGETS[kata.name]
    bodies = (INT_BODIES if target.returns_int
              else HYPOTHESES_BODIES if target.returns_hypotheses
              else TOKENS_BODIES if target.returns_tokens else TENSOR_BODIES)
    forbidden = next((f for f in kata.forbidden if not f.startswith("torch.nn.functional")), "")
    body = bodies[case].format(forbidden=forbidden)
    original = f"{target.owner}.{target.name}" if target.owner else target.name
    wrapper = (f"\n\n_original = {original}\n\n\ndef _sabotaged(*args, **kwargs):\n"
               + textwrap.indent(body, "    ") + "\n\n\n"
               + f"{original} = _sabotaged\n")
    return source + HELPERS + wrapper


@pytest.fixture(autouse=True)
def short_time_limit(request, monkeypatch):
    callspec = getattr(request.node, "callspec", None)
    case = callspec.params.get("case") if callspec else None
    limit = TIME_LIMIT_S if case is None or case in WAITED_OUT else UNWAITED_TIME_LIMIT_S
    monkeypatch.setattr(guard, "CALL_TIME_LIMIT_S", limit)


def write_hostile(tmp_path: Path, kata: Kata, case: str) -> Path:
    path = tmp_path / "learner" / f"my_{kata.file}"
    path.parent.mkdir()
    path.write_text(hostile_source(kata, case))
    return path


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under the learner's folder, with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def expected_phrase(kata: Kata, case: str) -> str:
    """Compared case-insensitively, whitespace normalised (rich wraps long lines)."""
    if (kata.name, case) in EXPECTED_BY_KATA:
        return EXPECTED_BY_KATA[kata.name, case].lower()
    return (EXPECTED_INT if TARGETS[kata.name].returns_int else EXPECTED)[case].lower()


def normalised(text: str) -> str:
    return " ".join(text.split()).lower()


# What a hostile case tests is the engine (guard, loader, report), one for every kata; what
# varies by kata is the kind of thing its target returns (see Target). So every case runs on
# one kata of each kind, and on the other katas a staggered fifth of the cases (together they
# still meet every case), plus every case a kata reports in its own words (EXPECTED_BY_KATA).
# The rest of the matrix is the slow tier (selftest_slow): it runs when the engine changes
# (tests/slow_tier.py), and whenever asked for with --selftest-slow.
FULL_MATRIX_KATAS = {"01_attention", "03_mha", "07_flops", "17_beam_search",
                     "21_speculative_decoding", "24_kv_quant"}
THIN_SHARE = 5


def staggered(kata: Kata, case: str, share: int) -> bool:
    """One pair in ``share``: each case on every share-th kata, staggered so that together
    the pairs meet every kata and every case."""
    return (registry.KATAS.index(kata) + ALL_CASES.index(case)) % share == 0


def in_fast_tier(kata: Kata, case: str) -> bool:
    return (kata.name in FULL_MATRIX_KATAS or (kata.name, case) in EXPECTED_BY_KATA
            or staggered(kata, case, THIN_SHARE))


def pair(kata: Kata, case: str):
    marks = () if in_fast_tier(kata, case) else (pytest.mark.selftest_slow,)
    return pytest.param(kata, case, id=f"{kata.name}-{case}", marks=marks)


PAIRS = [pair(k, c) for k in registry.KATAS for c in ALL_CASES if applicable(k, c)]
# `kata check` and the notebooks' cell share pytest's grading engine: what is theirs is how
# they report a case, not which kata it sabotages. So every pair goes through pytest, and a
# third of them (each case on every third kata, each kata on every third case, staggered so
# that together they cover every kata and every case) through the other two front ends.
FRONT_END_SHARE = 3
SAMPLED_PAIRS = [p for p in PAIRS if staggered(*p.values, FRONT_END_SHARE)]


@pytest.mark.parametrize("kata, case", PAIRS)
def test_hostile_file_through_pytest(tmp_path, kata, case):
    path = write_hostile(tmp_path, kata, case)
    before = snapshot(path.parent)
    clock = CallClock()  # this thread's own time: a busy machine's waits do not count
    session = run_session(kata, "--impl", str(path))
    elapsed = clock.elapsed()

    if case in PASSING_CASES:
        assert session.exit_code == 0 and session.failed == 0, session.output[-3000:]
        assert expected_phrase(kata, case) in normalised(session.output), session.output[-3000:]
    else:
        assert session.exit_code == 1, session.output[-3000:]
        first = "\n".join(session.failure_reports()[0])
        assert expected_phrase(kata, case) in normalised(first), first
    # The verdicts themselves: pytest's closing summary repeats their first lines, and in
    # full, not cut to the terminal's width, when it runs on CI (the CI variable is set).
    verdicts = "\n".join("\n".join(report) for report in session.failure_reports())
    if case == "loops-forever":  # the limit is waited out once; later checks fail at once
        text = normalised(verdicts)
        waited = text.count(expected_phrase(kata, case)) - text.count("in an earlier check")
        assert waited == 1, verdicts[-3000:]
    assert "Traceback" not in session.output
    assert len(session.output.split("short test summary info")[0]) < 20_000  # not a flood
    assert elapsed < SESSION_BOUND_S
    assert snapshot(path.parent) == before


@pytest.mark.parametrize("kata, case", SAMPLED_PAIRS)
def test_hostile_file_through_kata_check(tmp_path, capsys, kata, case):
    path = write_hostile(tmp_path, kata, case)
    before = snapshot(path.parent)
    clock = CallClock()
    status = cli.main(["check", kata.id, "--impl", str(path)])
    elapsed = clock.elapsed()
    output = capsys.readouterr().out

    assert status == (0 if case in PASSING_CASES else 1), output[-3000:]
    assert expected_phrase(kata, case) in normalised(output), output[-3000:]
    assert len(output) < 20_000  # a report, not a flood
    assert elapsed < SESSION_BOUND_S
    assert snapshot(path.parent) == before


NOTEBOOK_PAIRS = [p for p in SAMPLED_PAIRS if p.values[1] not in IMPORT_TIME]


@pytest.mark.parametrize("kata, case", NOTEBOOK_PAIRS)
def test_hostile_objects_through_notebook_check(capsys, kata, case):
    """The notebook's grading cell on objects defined by the hostile code (as a cell would)."""
    module = types.ModuleType(f"hostile_cell_{kata.id}")
    exec(compile(hostile_source(kata, case), "<notebook cell>", "exec"), module.__dict__)
    objects = {name: getattr(module, name) for name in kata.public_names}
    clock = CallClock()
    result = notebook.check(kata.name, **objects)
    elapsed = clock.elapsed()
    output = capsys.readouterr().out

    assert result.passed == (case in PASSING_CASES)
    assert expected_phrase(kata, case) in normalised(output), output[-3000:]
    assert len(output) < 20_000  # a report, not a flood
    assert elapsed < SESSION_BOUND_S


def test_every_case_is_covered_for_every_kata():
    """Only the documented not-applicable pairs are left out; the front ends besides pytest
    see every kata and every case."""
    covered = {(p.values[0].name, p.values[1]) for p in PAIRS}
    for kata in registry.KATAS:
        for case in ALL_CASES:
            assert (kata.name, case) in covered or (kata.name, case) in NOT_APPLICABLE
    assert {p.values[0].name for p in SAMPLED_PAIRS} == {k.name for k in registry.KATAS}
    assert {p.values[1] for p in SAMPLED_PAIRS} == set(ALL_CASES)
    assert {p.values[1] for p in NOTEBOOK_PAIRS} == set(ALL_CASES) - IMPORT_TIME


def test_the_fast_tier_still_meets_every_kata_and_every_case():
    """Without the slow tier, every kata still meets some hostile case, every case some
    kata, and every target kind the whole matrix."""
    fast = [p for p in PAIRS if not p.marks]
    assert {p.values[0].name for p in fast} == {k.name for k in registry.KATAS}
    assert {p.values[1] for p in fast} == set(ALL_CASES)
    kinds = {(t.owner is None, t.returns_int, t.returns_hypotheses, t.returns_tokens)
             for t in TARGETS.values()}
    full = {(TARGETS[k].owner is None, TARGETS[k].returns_int, TARGETS[k].returns_hypotheses,
             TARGETS[k].returns_tokens) for k in FULL_MATRIX_KATAS}
    assert full == kinds
    for front_end in (SAMPLED_PAIRS, NOTEBOOK_PAIRS):
        assert {p.values[0].name for p in front_end if not p.marks} >= FULL_MATRIX_KATAS
