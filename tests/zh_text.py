"""What counts as English in a Chinese verdict: any ASCII word outside code.

A zh-CN learner's verdict holds Chinese prose and code. :func:`ascii_words` lists every
ASCII word of a text that is neither, so that one English word left in a verdict (``none``,
``ok``, ``wrong at 0``, ``appends of 1``) fails a self-test. Code is:

- whatever is removed first: `backticked spans`, ``[slugs]``, shapes and argument lists
  ``(b, h, s + t, head_dim)``, what Python or PyTorch said (``RuntimeError: The size ...``,
  with the lines it wraps onto until one holds Chinese),
  a learner's source line quoted after ``file.py:74:``, and pytest's own frame lines;
- any token holding a character prose words lack: ``q_proj``, ``nn.Linear(8,``, ``1e-6``,
  ``float32``, ``x=3``, ``sqrt(d_k)``, ``a/b``;
- a word beside a formula's operator (``position * base``, ``i = column // 2``,
  ``matmul / softmax``) or right before a shape (``query (2, 5, 8)``: a tensor's name);
- single letters (``x``, ``i``, ``j``: math), acronyms in capitals (``GPU``, ``SRAM``, ``AND``)
  and names in camel case (``PyTorch``, ``LlamaRMSNorm``, ``FlashAttention``, ``dV``);
- the names of the kata's own code (every identifier of its reference solution, its
  skeleton, its correct styles and its mutants: ``positions``, ``attn_mask``, ``forward``),
  Python's keywords and builtins (``if``, ``None``, ``list``), and ``torch.nn``'s classes;
- the English the glossary keeps (every ASCII word of the Chinese column of
  graders/locales/zh_CN/GLOSSARY.md: ``token``, ``logits``, ``kernel``, ``KV cache``,
  ``batch-major``), and the few names of :data:`NAMES` below.
"""

from __future__ import annotations

import builtins
import functools
import io
import keyword
import re
import tokenize

from graders.core.registry import REPO_ROOT, Kata

GLOSSARY = REPO_ROOT / "graders" / "locales" / "zh_CN" / "GLOSSARY.md"
# Names no identifier and no glossary row holds, each written so in Chinese interview texts:
# the tensor vocabulary of every comparison line (rtol 1e-04, bool (2, 4, 6), nan), tensor
# methods written bare as verbs (被 detach 了, narrow 视图), the special tokens, and proper
# nouns (projects, models, and the authors a mistake's text cites: Chen 等人).
NAMES = frozenset({"rtol", "atol", "bool", "float", "dtype", "nan", "inf", "detach", "narrow",
                   "bos", "eos", "Python", "Llama", "Mixtral", "Mistral", "timm", "Hugging", "Face",
                   "Chen", "Leviathan"})

# pytest's own lines: its section rules, test headers, progress and summary lines.
PYTEST_FRAME = re.compile(
    r"^(=+ (test session starts|FAILURES|ERRORS|short test summary info|warnings summary"
    r"|PASSES)\b.*"
    r"|(platform|rootdir|configfile|cachedir|plugins|timeout|timeout method|timeout func_only"
    r"|collected|collecting)[: ].*"
    r"|\S+\.py [.FEsxX]+\s*(\[\s*\d+%\])?"
    r"|=+ [\d, a-z]+ in [\d.]+s.*=+"  # "== 13 failed, 1 skipped in 0.52s =="
    r"|\d+ (failed|passed|skipped|error|errors|deselected)\b.*"
    r"|_+ \w+ _+"  # "____ test_attention_without_mask ____"
    r"|(FAILED|ERROR|PASSED|SKIPPED)\b.*"
    r"|[.FEsxX]+\s*(\[\s*\d+%\])?)$")
# Backticked code, [slugs], and the repr of a learner's object (<mod._Handle object at 0x7f...>).
CODE_SPAN = re.compile(r"`[^`]*`|\[[a-z0-9]+(?:-[a-z0-9]+)+\]|<[\w.]+ object at 0x[0-9a-f]*>?")
_ELEMENT = r"[\w.*/+\-]+(?:\s*[*+\-/]\s*[\w.*/+\-]+)*"
SHAPE = re.compile(rf"\(\s*{_ELEMENT}(?:\s*,\s*{_ELEMENT})*\s*,?\s*\)")
EXCEPTION_MESSAGE = re.compile(r"\b[A-Z]\w*(?:Error|Exception|Warning)\s*[:：].*$")
_SOURCE_ECHO = re.compile(r"\S+\.py:\d+[:：].*$")  # 位于 attention.py:74：<the learner's line>
_SHAPE_MARK = "⟨shape⟩"
_CHINESE = re.compile(r"[\u4e00-\u9fff]")
# Tokens are split at white space and at Chinese text and punctuation.
_SPLIT = re.compile(r"[\s\u3000-\u303f\uff00-\uffef\u4e00-\u9fff“”‘’…—·]+")
_WORD = re.compile(r"[A-Za-z]+(?:['-][A-Za-z]+)*")
_OPERATORS = {"=", "*", "+", "-", "/", "//", "%", "@", "**", "<", ">", "<=", ">=", "==", "!=",
              "->", "→", "×", "·", "÷", "≈", "−", "|", "&", "^", "~"}
_ACRONYM = re.compile(r"[A-Z]{2,}s?|[A-Za-z][a-z]*[A-Z]\w*")  # GPU, FLOPs; PyTorch, ViT, dV, LlamaRMSNorm


def _names(source: str) -> set[str]:
    found: set[str] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.NAME:
                found.add(token.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        found |= set(re.findall(r"[A-Za-z_]\w*", source))
    return found


@functools.lru_cache(maxsize=None)
def _shared_words() -> frozenset[str]:
    import torch.nn

    rows = [line.split("|")[2] for line in GLOSSARY.read_text(encoding="utf-8").splitlines()
            if line.startswith("| ") and line.count("|") >= 3]
    kept = {word for cell in rows for word in re.findall(r"[A-Za-z]+", cell)}
    return frozenset(kept | NAMES | set(keyword.kwlist) | set(dir(builtins))
                     | {name for name in dir(torch.nn) if name[:1].isupper()})


@functools.lru_cache(maxsize=None)
def allowed_words(kata: Kata) -> frozenset[str]:
    """The words a zh verdict of ``kata`` may hold outside code: see the module docstring."""
    from tests.mutation import mutants, styles

    sources = [kata.solution_path.read_text(), kata.pristine_skeleton_path.read_text()]
    sources += [path.read_text() for path in styles(kata)]
    edits = []  # a mutant is its base with edits: only what the edits write is new
    for mutant in mutants(kata):
        if mutant.file:
            sources.append(mutant.source(kata))
        edits += [new for _old, new in mutant.edits]
    code = "\n".join(re.sub(r"#.*", "", line) for text in edits for line in text.splitlines())
    return (_shared_words() | {name for source in sources for name in _names(source)}
            | set(re.findall(r"[A-Za-z_]\w*", re.sub(r"(['\"]).*?\1", "", code))))


def ascii_words(text: str, allowed: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """Every ASCII word of ``text`` that is not code (see the module docstring), each with
    its line: ``"none  <-  此前被接受的调用……：none"``."""
    found = []
    quoting = False  # inside what Python said, wrapped onto lines of its own (a notebook's)
    for raw in text.splitlines():
        line = raw.strip().strip("┃│┏┓┗┛━─┡┩┠┨╇╈┯┷┿╋ ")
        if not line or PYTEST_FRAME.match(line):
            continue
        quoting = bool(EXCEPTION_MESSAGE.search(line)) or (quoting and not _CHINESE.search(line))
        if quoting and not EXCEPTION_MESSAGE.search(line):
            continue
        prose = _SOURCE_ECHO.sub("", EXCEPTION_MESSAGE.sub("", line))
        prose = SHAPE.sub(f" {_SHAPE_MARK} ", CODE_SPAN.sub(" ", prose))
        tokens = [token for token in _SPLIT.split(prose) if token]
        for n, token in enumerate(tokens):
            bare = token.lstrip("(").rstrip(",.;:!?)")
            if not _WORD.fullmatch(bare) or len(bare) == 1 or _ACRONYM.fullmatch(bare):
                continue
            beside = {tokens[n - 1] if n else "", tokens[n + 1] if n + 1 < len(tokens) else ""}
            if beside & _OPERATORS or (n + 1 < len(tokens) and tokens[n + 1] == _SHAPE_MARK):
                continue
            if bare.replace("-", "_") in allowed or all(
                    part in allowed or len(part) == 1 or _ACRONYM.fullmatch(part)
                    for part in bare.split("-")):  # rotate-half: the layout of rotate_half
                continue
            found.append(f"{bare}  <-  {line[:160]}")
    return found


def english_in(kata: Kata, text: str) -> list[str]:
    """:func:`ascii_words` of a zh-CN verdict of ``kata``, with the kata's allowed words."""
    return ascii_words(text, allowed_words(kata))
