"""The words inside a lesson's code cells, in the notebook's language.

A lesson's code is the same in every language, but what its cells print and plot is read
by the learner: print labels (``print("interleaved equals PyTorch:", ...)``), plot titles
and legends, docstrings and comments. Those pieces are catalog entries (the kata's catalog,
gathered by graders.tools.texts) and the notebook builder (graders.tools.notebooks) swaps each for its
translation when it builds a notebook in another language; the English notebooks keep the
lesson's code byte for byte. The exercise cell (the kata's skeleton) is translated the same
way, its docstrings, ``NotImplementedError`` messages and ``# noqa`` asides only
(:func:`skeleton_pieces`).

Which strings: a string literal (plain or f-string) holding a word of two or more letters,
written where it is shown — an argument of ``print`` or of a plotting call's text
(``set_title``, ``set(title=..., xlabel=...)``), a text keyword of any call (a legend's
``label=`` in ``plot``, ``bar``, ``axvline``, ...), or not inside any call at all
(a label in a tuple, a docstring, a name compared with such a label). A string handed to
any other call (``device="meta"``, ``cmap="viridis"``, ``float("-inf")``, state-dict keys)
is code and never translated. Every comment with a word in it is translated too.

A catalog entry is the literal's text between its quotes exactly as written in the source
(escapes included, ``{fields}`` of an f-string included) or the comment's text after
``# ``. A translation must keep it a valid literal of the same kind with the same fields:
see :func:`problems`.
"""

from __future__ import annotations

import ast
import collections
import io
import re
import tokenize
from dataclasses import dataclass
from typing import Callable

# Calls whose string arguments are read by the learner, and the keywords that are text in
# any call (a legend's label=, a title=).
SHOWN_CALLS = {"print", "display", "set", "set_title", "set_xlabel", "set_ylabel", "suptitle",
               "title", "xlabel", "ylabel", "text", "annotate", "legend"}
TEXT_KEYWORDS = {"label", "title", "xlabel", "ylabel"}
_WORD = re.compile(r"[A-Za-z]{2,}")
_FIELD = re.compile(r"\{[^{}]*\}")
_PREFIX = re.compile(r"^([A-Za-z]*)('''|\"\"\"|'|\")")
_COMMENT = re.compile(r"#+\s*")
_IDENTIFIER = re.compile(r"\w+(?:[._]\w+)+")  # in_proj_weight, out_proj.bias
_TOOL_COMMENT = re.compile(r"#\s*(noqa|type:|pragma|fmt:|kata:)")  # kata: the build's markers
_TOOL_ASIDE = re.compile(r"#\s*noqa\b[^(]*(\(.+\))\s*$")  # "# noqa: F401  (math.log may help)"


@dataclass(frozen=True)
class Piece:
    """One translatable piece of a code cell: ``english`` at ``source[start:end]``."""
    kind: str  # "string" (a literal's text between its quotes) or "comment"
    english: str
    start: int
    end: int
    prefix: str = ""  # a string's prefix and quote, e.g. 'f"': what its translation must keep


def _call_name(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)


def _shown_string_spans(tree: ast.AST) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """(line, byte column) ranges of the string literals the learner reads (see module doc)."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    spans = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.JoinedStr)
                or (isinstance(node, ast.Constant) and isinstance(node.value, str))):
            continue
        shown, child, parent = True, node, parents.get(node)
        while parent is not None:
            if isinstance(parent, (ast.JoinedStr, ast.FormattedValue)):
                shown = False  # a piece of an f-string: the whole literal is the entry
                break
            if isinstance(parent, ast.keyword):
                keyword = parent.arg
            if isinstance(parent, ast.Call):
                if parent.func is child:
                    shown = False  # ", ".join(...): the receiver of a method is code
                elif isinstance(child, ast.keyword):  # label="draws" in any plotting call
                    shown = keyword in TEXT_KEYWORDS
                else:
                    shown = _call_name(parent) in SHOWN_CALLS
                break
            child, parent = parent, parents.get(parent)
        if shown:
            spans.append(((node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)))
    return spans


def pieces(source: str) -> list[Piece]:
    """The translatable pieces of a code cell's ``source``, in order."""
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def byte_position(row: int, column: int) -> tuple[int, int]:
        return row, len(lines[row - 1][:column].encode()) if row <= len(lines) else column

    spans = _shown_string_spans(ast.parse(source))
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        (row, column), (end_row, end_column) = token.start, token.end
        start, end = starts[row - 1] + column, starts[end_row - 1] + end_column
        if token.type == tokenize.COMMENT:
            marker = _COMMENT.match(token.string).group()
            text = token.string[len(marker):]
            if _WORD.search(text) and not _TOOL_COMMENT.match(token.string):
                found.append(Piece("comment", text, start + len(marker), end))
        elif token.type == tokenize.STRING:
            position = byte_position(row, column)
            if not any(first <= position < last for first, last in spans):
                continue
            prefix = _PREFIX.match(token.string).group()
            quote = prefix.lstrip("rRbBuUfF")
            text = token.string[len(prefix):len(token.string) - len(quote)]
            if "b" in prefix.lower() or not _WORD.search(_FIELD.sub("", text)):
                continue
            found.append(Piece("string", text, start + len(prefix), end - len(quote), prefix))
    return found


def _docstring_or_message(tree: ast.AST) -> set[tuple[int, int]]:
    """(line, byte column) of the docstrings of a module, its classes and functions, and of
    the string arguments of ``raise NotImplementedError(...)``."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                found.add((first.value.lineno, first.value.col_offset))
        if (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)
                and _call_name(node.exc) == "NotImplementedError"):
            found |= {(arg.lineno, arg.col_offset) for arg in node.exc.args
                      if isinstance(arg, ast.Constant) and isinstance(arg.value, str)}
    return found


def skeleton_pieces(source: str) -> list[Piece]:
    """The words of a kata's skeleton a notebook in another language shows translated: its
    docstrings (the module's, each class's and function's), its ``NotImplementedError``
    messages and the asides of its ``# noqa`` comments. Its code, and so every name,
    signature and shape, stays as it is."""
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    wanted = _docstring_or_message(ast.parse(source))
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        (row, column), (end_row, end_column) = token.start, token.end
        aside = _TOOL_ASIDE.match(token.string) if token.type == tokenize.COMMENT else None
        if aside and _WORD.search(aside.group(1)):  # import math  # noqa: F401  (you will want ...)
            start = starts[row - 1] + column + aside.start(1)
            found.append(Piece("comment", aside.group(1), start, start + len(aside.group(1))))
        if token.type != tokenize.STRING:
            continue
        if (row, len(lines[row - 1][:column].encode())) not in wanted:
            continue
        prefix = _PREFIX.match(token.string).group()
        quote = prefix.lstrip("rRbBuUfF")
        text = token.string[len(prefix):len(token.string) - len(quote)]
        if _WORD.search(text):
            found.append(Piece("string", text, starts[row - 1] + column + len(prefix),
                               starts[end_row - 1] + end_column - len(quote), prefix))
    return found


def translate(source: str, lookup: Callable[[str], str],
              find: Callable[[str], list[Piece]] = pieces) -> str:
    """``source`` with every piece (of a lesson's code cell, or ``find``'s: e.g.
    :func:`skeleton_pieces`) replaced by ``lookup(piece)`` (English when it has none)."""
    out, cursor = [], 0
    for piece in find(source):
        out += [source[cursor:piece.start], lookup(piece.english)]
        cursor = piece.end
    return "".join(out) + source[cursor:]


def _fields(literal: str) -> collections.Counter:
    """The replacement fields of an f-string literal, as code (or none for a plain one)."""
    node = ast.parse(literal, mode="eval").body
    values = [ast.dump(v) for v in getattr(node, "values", []) if isinstance(v, ast.FormattedValue)]
    return collections.Counter(values)


def problems(piece: Piece, translated: str) -> list[str]:
    """How ``translated`` would break the cell: a comment that spans lines, a literal that
    no longer parses, or an f-string whose fields (expressions and formats) changed."""
    if piece.kind == "comment":
        return ["a comment's translation must stay on one line"] if "\n" in translated else []
    if _IDENTIFIER.fullmatch(piece.english) and translated != piece.english:
        return [f"{piece.english!r} names code (a parameter, a module): keep it as it is"]
    quote = piece.prefix.lstrip("rRbBuUfF")
    try:
        want = _fields(piece.prefix + piece.english + quote)
        got = _fields(piece.prefix + translated + quote)
    except SyntaxError as error:
        return [f"the translated literal {piece.prefix}{translated}{quote} does not parse: {error.msg}"]
    if want != got:
        return ["the f-string's {fields} differ from the English (keep every expression and format)"]
    return []
