"""A verdict in Chinese is Chinese: no English prose reaches a zh-CN learner.

For every kata, a failing implementation (its first mutant) and the untouched skeleton are
graded under ``KATA_LANG=zh-CN`` through the three front ends a learner uses — ``pytest
katas/NN --impl FILE``, ``kata check``'s report (:func:`graders.core.session.render`) and a
notebook's ``check()`` — and the output must hold no run of three English words outside
code, slugs, identifiers, shapes and pytest's own frame (see :func:`english_runs`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re

import pytest

from graders.core import registry
from tests.grading_session import run_session
from tests.mutation import mutants

ENGLISH_WORDS_IN_A_ROW = 3

# pytest's own lines: its section rules, test headers, progress and summary lines.
_PYTEST_FRAME = re.compile(
    r"^(=+ (test session starts|FAILURES|ERRORS|short test summary info|warnings summary"
    r"|PASSES)\b.*"
    r"|(platform|rootdir|configfile|cachedir|plugins|timeout|collected|collecting) .*"
    r"|\S+\.py [.FEsxX]+\s*(\[\s*\d+%\])?"
    r"|=+ [\d, a-z]+ in [\d.]+s.*=+"  # "== 13 failed, 1 skipped in 0.52s =="
    r"|\d+ (failed|passed|skipped|error|errors|deselected)\b.*"
    r"|_+ \w+ _+"  # "____ test_attention_without_mask ____"
    r"|(FAILED|ERROR|PASSED|SKIPPED)\b.*"
    r"|[.FEsxX]+\s*(\[\s*\d+%\])?)$")
# Not words of prose: `code`, [slugs], and any token with a character prose words lack
# (identifiers, dotted names, calls, paths, shapes, numbers, k=v, a/b).
_CODE_SPAN = re.compile(r"`[^`]*`|\[[a-z0-9]+(?:-[a-z0-9]+)+\]")
# A shape or an argument list: (b, h, n, d), (B, N, D), (b, h, s + t, head_dim), (n, m).
_ELEMENT = r"[\w.*/+\-]+(?:\s*[*+\-/]\s*[\w.*/+\-]+)*"
_SHAPE = re.compile(rf"\(\s*{_ELEMENT}(?:\s*,\s*{_ELEMENT})*\s*,?\s*\)")
# What Python or PyTorch said, quoted in a verdict: "RuntimeError：The size of tensor a ...".
_EXCEPTION_MESSAGE = re.compile(r"\b[A-Z]\w*(?:Error|Exception|Warning)\s*[:：].*$")
_WORD = re.compile(r"[A-Za-z][a-z]*(?:'[a-z]+)?")
_TRAILING = ",.;:!?"


def english_runs(text: str, length: int = ENGLISH_WORDS_IN_A_ROW) -> list[str]:
    """Every run of ``length`` or more English prose words in ``text``, outside pytest's
    frame lines.

    A line is split at white space; a token counts as an English word when, without one
    trailing punctuation mark (``,.;:!?``) and an opening ``(``, it is letters only (an
    apostrophe inside allowed: ``PyTorch's``); anything else (``q_proj``,
    ``nn.Linear(8,``, ``(2,``, ``1e-6``, ``x=3``, a Chinese word) ends the run, and so
    does a word ending a sentence or clause (``.;:!?``; a comma does not). Code in
    backticks, ``[slugs]``, shapes and argument lists (``(b, h, s + t, head_dim)``) and
    an exception's own message (``RuntimeError: The size of tensor a ...``, what Python or
    PyTorch said) are removed first; box-drawing borders are ignored.
    """
    found = []
    for line in text.splitlines():
        line = line.strip().strip("┃│┏┓┗┛━─┡┩┠┨╇╈┯┷┿╋ ")
        if not line or _PYTEST_FRAME.match(line):
            continue
        run: list[str] = []
        prose = _SHAPE.sub(" ", _CODE_SPAN.sub(" ", _EXCEPTION_MESSAGE.sub("", line)))
        for token in prose.split():
            bare = token.lstrip("(")
            bare = bare[:-1] if bare[-1:] in _TRAILING else bare
            is_word = bool(_WORD.fullmatch(bare))
            if is_word:
                run.append(bare)
            if not is_word or token[-1] in ".;:!?":  # a sentence or clause ends the run
                if len(run) >= length:
                    found.append(" ".join(run))
                run = []
        if len(run) >= length:
            found.append(" ".join(run))
    return found


@pytest.mark.parametrize("line, runs", [
    ("checked the output on query (2, 5, 8)", ["checked the output on query"]),
    ("  expected 31,248", []),
    ("  got - expected = -15,624 (got = expected * 1/2)", []),
    ("检查项：输出；输入：query (2, 5, 8), key (2, 7, 8), value (2, 7, 6)", []),
    ("提示：对 (b, num_kv_heads, n, d) 用 `k.repeat_interleave(num_heads // num_kv_heads, "
     "dim=1)`，而不是 k.repeat(1, group, 1, 1)。", []),
    ("[kv-heads-tiled] 键/值头是整体平铺复制的", []),
    ("x (2, 1, 8)，位于位置 5，缓存长度 5；CausalSelfAttention(8, 2)", []),
    ("nn.Transformer 在编码器和解码器的层堆叠末尾各加了一个最终的 LayerNorm", []),
    ("尚未实现：scaled_dot_product_attention 抛出 NotImplementedError", []),
    ("see katas/01_attention/README.md for the names", ["for the names"]),
    ("the output, the weights", ["the output the weights"]),
    ("the output. 输出", []),
    ("FAILED katas/01_attention/test_attention.py::test_x - the output is wrong", []),
    ("==== 13 failed, 1 skipped in 0.52s ====", []),
    ("__________ test_attention_without_mask __________", []),
    ("============ test session starts ============", []),
    ("katas/01_attention/test_attention.py FFFF.s   [100%]", []),
    ("01_attention  核心检查：0/5 通过，追问检查：0/8 通过", []),
    ("返回的缓存 (k, v)，各为 (b, h, s + t, head_dim)", []),
    ("patch token (B, N, D)，N 按行优先顺序排列", []),
    ("你的代码抛出了 RuntimeError：The size of tensor a (5) must match the size", []),
    ("the returned cache (k, v), each (b, h, s + t, head_dim)", ["the returned cache"]),
])
def test_english_runs(line, runs):
    assert english_runs(line) == runs


def first_mutant(kata):
    """The kata's first mutant stated as an edit (a whole-file mutant may be anything)."""
    return next(m for m in mutants(kata) if not m.file)


def load_objects(kata, path) -> dict:
    """The public functions and classes of the file at ``path``, as a notebook holds them."""
    spec = importlib.util.spec_from_file_location(f"_zh_verdicts_{kata.id}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {name: getattr(module, name) for name in kata.public_names if hasattr(module, name)}


def rendered(result) -> str:
    """``kata check``'s report of ``result``, as printed to a file (not a terminal)."""
    from rich.console import Console

    from graders.core import session

    out = io.StringIO()
    session.render(result, Console(file=out, width=100, force_terminal=False, no_color=True),
                   plain=True)
    return out.getvalue()


@pytest.mark.selftest_slow
@pytest.mark.parametrize("kata", registry.KATAS, ids=[k.name for k in registry.KATAS])
def test_zh_verdicts_have_no_english_prose(kata, tmp_path, monkeypatch):
    from graders.core import session
    from graders.frontends import notebook

    monkeypatch.setenv("KATA_LANG", "zh-CN")
    mutant = first_mutant(kata)
    failing = mutant.materialise(kata, tmp_path)
    skeleton = kata.pristine_skeleton_path
    outputs = {
        f"pytest --impl {mutant.id}": run_session(kata, "--impl", str(failing)).output,
        "pytest on the skeleton": run_session(kata, "--impl", str(skeleton)).output,
        "kata check on the skeleton": rendered(session.grade(kata.name, skeleton)),
    }
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        notebook.check(kata.name, **load_objects(kata, failing))
    outputs[f"notebook check() of {mutant.id}"] = printed.getvalue()

    english = {where: runs for where, text in outputs.items() if (runs := english_runs(text))}
    assert not english, "\n".join(f"{where}: {runs}" for where, runs in english.items())
    assert "README.zh-CN.md" in outputs["pytest on the skeleton"]
