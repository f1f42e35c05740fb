"""A verdict in Chinese is Chinese: no English reaches a zh-CN learner.

Every kata's reference and every mutant are graded in zh-CN by tests/test_katas.py, whose
sessions also check that the output holds no ASCII word outside code
(:func:`tests.zh_text.english_in`; ``pytest tests/test_katas.py -k "22_paged and (mutant or
reference)"`` for one kata). Here, for every kata, the untouched skeleton and a failing
implementation (its first mutant) go through the other front ends a learner uses — ``pytest
katas/NN`` on the skeleton, ``kata check``'s report (:func:`graders.frontends.rendering.render`) and
a notebook's ``check()`` — under the same rule; :func:`english_runs` (three English words in
a row) is the looser rule, kept for its own cases below.
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
from tests.zh_text import PYTEST_FRAME, ascii_words, english_in

ENGLISH_WORDS_IN_A_ROW = 3

_PYTEST_FRAME = PYTEST_FRAME
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

    from graders.frontends import rendering

    out = io.StringIO()
    rendering.render(result, Console(file=out, width=100, force_terminal=False, no_color=True),
                     plain=True)
    return out.getvalue()


@pytest.mark.parametrize("kata", registry.KATAS, ids=[k.name for k in registry.KATAS])
def test_zh_verdicts_have_no_english_prose(kata, tmp_path, monkeypatch):
    from graders.core import session
    from graders.frontends import notebook

    monkeypatch.setenv("KATA_LANG", "zh-CN")
    mutant = first_mutant(kata)
    failing = mutant.materialise(kata, tmp_path)
    skeleton = kata.pristine_skeleton_path
    outputs = {  # pytest --impl MUTANT: tests/test_katas.py, every mutant
        "pytest on the skeleton": run_session(kata, "--impl", str(skeleton)).output,
        "kata check on the skeleton": rendered(session.grade(kata.name, skeleton)),
    }
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        notebook.check(kata.name, **load_objects(kata, failing))
    outputs[f"notebook check() of {mutant.id}"] = printed.getvalue()

    english = {where: words for where, text in outputs.items() if (words := english_in(kata, text))}
    assert not english, "\n".join(f"{where}: {words[:8]}" for where, words in english.items())
    assert "README.zh-CN.md" in outputs["pytest on the skeleton"]


@pytest.mark.parametrize("line, words", [
    ("检查项：输出；输入：query (2, 5, 8), key (2, 7, 8)", []),  # a tensor's name before its shape
    ("  期望 结果 ok，14 个空闲块", ["ok"]),  # one English word is one too many
    ("池 wrong at 0，keys_values values", ["wrong", "at", "values"]),
    ("此前被接受的调用，以（请求，token 数）表示：none", ["none"]),
    ("输入：k (2, 2, 8, 16), bits=8, appends of 1", ["appends", "of"]),
    ("提示：用 matmul / softmax / linear 自己写出这部分计算。", []),  # beside an operator: code
    ("提示：一对中的两列都使用列对索引 i = column // 2，指数中用 2i。", []),
    ("提示：x = x + sublayer(...)（Pre-LN），或 norm(x + sublayer(x))（Post-LN）。", []),
    ("[kv-heads-tiled] 查询头 j 拿到的是 kv 头（repeat），logits 与 token 照旧", ["repeat"]),  # glossary words pass
    ("位于 attention.py:74：attended = weights @ value if ready else none", []),  # the learner's line
    ("你的代码抛出了 RuntimeError：The size of tensor a (5) must match", []),
    ("抛出了 RuntimeError：The size of tensor a (5) must match at non-singleton\n  dimension 0\n"
     "  位于 x.py:83：x = y\n期望 wrong", ["wrong"]),  # what Python said, wrapped by a notebook
    ("FlashAttention 只在 SRAM 中保存一个分块；需要 CUDA GPU，PyTorch 的 LlamaRMSNorm", []),
    ("rootdir: /home/learner/attention-katas", []),
    ("把 `x.view(b, n, h, d)` 换成 [reshape-without-transpose] 以外的写法", []),
])
def test_ascii_words(line, words):
    """What :func:`tests.zh_text.ascii_words` counts as English (allowed here: glossary
    words, Python's names, torch.nn's classes; no kata's code)."""
    from tests.zh_text import _shared_words

    assert [hit.split("  <-  ")[0] for hit in ascii_words(line, _shared_words())] == words
