"""Laying out text for a terminal (the CLI, a notebook's printed output): where a line may break, and tables that fit or stack.

Every text a learner reads in the terminal (verdicts, hints, tables, the CLI's prose) is laid
out here, in one way:

- A line breaks only between *atoms*. An atom is a Latin word with everything glued to it, a
  slug ``[mask-inverted]``, a backticked span, a code-like group in brackets with its spaces
  (a shape ``(b, h, n, d)``, a call ``view(b, n, h, d)``, a formula ``(t, s + t)``), or one
  Chinese character with the punctuation that must stay beside it (``。``, ``）`` never start a
  line, ``（`` never ends one). So Chinese breaks between characters, by display width (a
  Chinese character takes two columns, :func:`rich.cells.cell_len`), and English at spaces.
- An atom wider than the whole line (only at very narrow widths) opens up: its outer group
  breaks at its spaces, inner groups stay whole; a single word wider than the line is cut.
- Markdown emphasis (``*blocked*``, ``**x**``, ``_x_``) never reaches the terminal
  (:func:`strip_markers`); backticked code is shown styled, without its backticks, where the
  terminal has colour, and with them where it has none.
- Output that is not a terminal (a pipe, a file) is never wrapped: a long line stays one line,
  and a table prints one line per row (:func:`print_table` with ``plain``).

:class:`Prose` is the rich renderable that does this; rich tables measure it (their columns'
minimum is the widest atom), so :func:`print_table` knows when a table cannot fit its columns'
atoms and prints it stacked instead: one block per row, a cell per line.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterable, Sequence

from graders.core.markup import BOLD as _BOLD, CODE as _CODE, ITALIC as _ITALIC  # noqa: F401
from graders.core.markup import UNDERSCORE as _UNDERSCORE, emphasis as _emphasis, strip_markers

if TYPE_CHECKING:  # rich is imported where text is laid out: grading alone needs only strip_markers
    from rich.console import Console, ConsoleOptions, RenderResult
    from rich.measure import Measurement
    from rich.text import Text

_CJK = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\u3000-\u303f\u2018-\u201d\u2026]")
# Kinsoku: these never start a line (they stay after the character before them) ...
_CLOSERS = set("，。、；：！？）」』》〉】〕”’…%") | set(",.;:!?)]}")
# ... and these never end one (they stay before the character after them).
_OPENERS = set("（「『《〈【〔“‘")
_BREAK_AFTER = set("，。、；：！？）」』》")  # Chinese may break after these, preferably
_PAIRS = {"(": ")", "[": "]", "{": "}"}
# Two alphabetic words of 3+ letters in a row read as prose, not as a shape or an argument list.
_PROSE_WORDS = re.compile(r"(?<![\w.])[^\W\d_]{3,}\s+[^\W\d_]{3,}(?![\w(])")

CODE_STYLE = "bold cyan"
SHORT_COLUMN = 12  # columns up to this wide are never wrapped in a table
TITLE_COLUMN = 24  # a table's first column (its rows' titles) is at least this wide, or stacked
PROSE_COLUMN = 30  # a table's other columns holding Chinese are at least this wide, or stacked


def cell_len(text: str) -> int:
    """Terminal columns ``text`` takes: a Chinese character takes two."""
    from rich.cells import cell_len as columns

    return columns(text)


display_width = cell_len


# --------------------------------------------------------------------------- atoms

def _is_cjk(char: str) -> bool:
    return bool(_CJK.match(char))


def _code_like(inner: str) -> bool:
    """Whether a bracketed group's inside reads as code (a shape, arguments, a formula) and
    so must stay on one line; prose in parentheses may break."""
    return not any(map(_is_cjk, inner)) and not _PROSE_WORDS.search(inner)


def _closing(line: str, start: int) -> int | None:
    """Index of the bracket closing the one at ``start`` (same line, nested), or None."""
    depth, opener = 0, line[start]
    for i in range(start, len(line)):
        if line[i] == opener:
            depth += 1
        elif line[i] == _PAIRS[opener]:
            depth -= 1
            if depth == 0:
                return i
    return None


def _word_end(line: str, i: int, code: set[int]) -> int:
    """End of the Latin atom read from ``i``: up to a space or a Chinese character, past
    any backticked span and any code-like bracketed group, spaces included."""
    while i < len(line):
        if i in code:  # a span that was backticked (its backticks already taken off)
            while i in code:
                i += 1
            continue
        if line[i].isspace() or _is_cjk(line[i]):
            break
        if line[i] == "`":
            close = line.find("`", i + 1)
            if close > i:
                i = close + 1
                continue
        elif line[i] in _PAIRS:
            close = _closing(line, i)
            if close is not None and _code_like(line[i + 1:close]):
                i = close + 1
                continue
        i += 1
    return i


def _depths(line: str, start: int, end: int, code: set[int]) -> list[int]:
    """Bracket depth of each character of ``line[start:end]`` (backticked code counts as one
    level deeper)."""
    depths, depth, quoted = [], 0, False
    for i in range(start, end):
        char = line[i]
        if char == "`":
            quoted = not quoted
        if char in _PAIRS.values():
            depth -= 1
        depths.append(depth + (quoted or i in code))
        if char in _PAIRS:
            depth += 1
    return depths


def _open(line: str, start: int, end: int, limit: int, code: set[int]) -> list[tuple[int, int]]:
    """An atom wider than ``limit``, opened up at its outermost level: before a chained call
    (``x.view(...)`` / ``.transpose(...)``), else after its commas, else at its spaces;
    each piece opened again while still too wide."""
    depths = _depths(line, start, end, code)
    chains = [(depths[i - start], 0, i) for i in range(start + 1, end)
              if line[i] == "." and line[i - 1] == ")"]
    spaces = [(depths[i - start], 1 if line[i - 1] == "," else 2, i)
              for i in range(start, end) if line[i] == " "]
    if not chains and not spaces:
        return [(start, end)]
    depth, kind, _ = min(chains + spaces)
    cuts = [i for d, k, i in chains + spaces if (d, k) == (depth, kind)]
    pieces, begin = [], start
    for cut in sorted(cuts) + [end]:
        piece = (begin, cut)
        begin = cut + (kind != 0)  # a space is dropped, a chained call's dot is kept
        piece = (piece[0] + len(line[piece[0]:piece[1]]) - len(line[piece[0]:piece[1]].lstrip(" ")),
                 piece[1])
        if piece[0] >= piece[1]:
            continue
        if cell_len(line[piece[0]:piece[1]]) > limit:
            pieces += _open(line, *piece, limit, code)
        else:
            pieces.append(piece)
    return pieces


_OPERATORS = {"+", "-", "*", "/", "//", "%", "@", "=", "==", "!=", "<", ">", "<=", ">=", "**",
              "×", "−", "·", "->", "→", "÷", "≈", "≤", "≥"}


def atoms(line: str, limit: int = 10**6, code: Iterable[int] = (),
          words: bool = False) -> list[tuple[int, int]]:
    """The atoms of one line of text, as ``(start, end)`` offsets; a line may break only
    between two of them. A formula's operator (``s + i``) holds its neighbours together.
    ``limit``: the widest an atom may be (wider ones open up, see the module docstring).
    ``code``: offsets of characters that were backticked code. ``words``: a run of Chinese
    characters is one atom, broken only after its punctuation (``，``, ``、``, ``：``) or at a
    space, never inside a word (a table's titles: "缓" / "存保留位置" is never shown)."""
    code = set(code)
    spans: list[list[int]] = []
    holds: list[bool] = []  # whether the span ends with an operator, holding on to the next
    i = 0
    while i < len(line):
        if line[i].isspace():
            i += 1
            continue
        start = i
        i = i + 1 if _is_cjk(line[i]) and i not in code else _word_end(line, i, code)
        while (words and i < len(line) and _is_cjk(line[i]) and i not in code
               and line[i - 1] not in _CLOSERS and line[i] not in _OPENERS):
            i += 1
        while i < len(line) and line[i] in _CLOSERS and i not in code:
            i += 1
        i = max(i, start + 1)
        glued = spans and spans[-1][1] == start and (
            line[start - 1] in _OPENERS or line[start] in _CLOSERS)
        operator = line[start:i] in _OPERATORS
        operand = spans and (holds[-1] or operator) and not (
            _is_cjk(line[start]) or _is_cjk(line[spans[-1][1] - 1]))
        if glued or operand:
            spans[-1][1] = i
            holds[-1] = operator
        else:
            spans.append([start, i])
            holds.append(operator)
    out: list[tuple[int, int]] = []
    for start, end in spans:
        if cell_len(line[start:end]) > limit:
            out += _open(line, start, end, limit, code)
        else:
            out.append((start, end))
    return out


def widest_atom(text: str, words: bool = False) -> int:
    """Columns of the widest atom in ``text`` (markers stripped): the narrowest it can be laid
    out without breaking one (``words``: see :func:`atoms`)."""
    return max((cell_len(line[s:e]) for line in strip_markers(text).splitlines()
                for s, e in atoms(line, words=words)), default=0)


def _cut(line: str, start: int, end: int, width: int) -> list[tuple[int, int]]:
    """A word wider than the line, cut into pieces of at most ``width`` columns."""
    pieces, begin, used = [], start, 0
    for i in range(start, end):
        w = cell_len(line[i])
        if used + w > width and i > begin:
            pieces.append((begin, i))
            begin, used = i, 0
        used += w
    pieces.append((begin, end))
    return pieces


def break_line(line: str, width: int, code: Iterable[int] = (),
               words: bool = False) -> tuple[str, list[tuple[int, int]]]:
    """Where one line of text breaks at ``width`` columns: its indent (leading spaces, kept on
    every piece, so that a verdict's indented detail stays indented) and the ``(start, end)``
    offsets of its pieces."""
    body = line.lstrip(" ")
    indent = line[:len(line) - len(body)]
    if cell_len(indent) > width // 2:
        indent = indent[:width // 2]
    room = max(1, width - cell_len(indent))
    pieces: list[list[tuple[int, int]]] = []  # each line's atoms
    for start, end in atoms(line, room, code, words):
        if cell_len(line[start:end]) > room:
            pieces.extend([piece] for piece in _cut(line, start, end, room))
        elif pieces and cell_len(line[pieces[-1][0][0]:end]) <= room:
            pieces[-1].append((start, end))
        else:
            moved = _after_punctuation(line, pieces[-1], end, room) if pieces else []
            pieces.append([*moved, (start, end)])
    return indent, [(p[0][0], p[-1][1]) for p in pieces] or [(len(line), len(line))]


def _after_punctuation(line: str, piece: list[tuple[int, int]], end: int,
                       room: int) -> list[tuple[int, int]]:
    """A full line's last atoms, moved to the next when it breaks inside Chinese ("从序列开"
    / "头数起") and a break after ，、： (or before （) lies at most a third of a line back."""
    last = line[piece[-1][1] - 1]
    if not _is_cjk(last) or last in _BREAK_AFTER or not _is_cjk(line[piece[-1][1]]):
        return []
    for k in range(len(piece) - 1, 0, -1):
        if cell_len(line[piece[k][0]:piece[-1][1]]) > room // 3 or cell_len(line[piece[k][0]:end]) > room:
            return []
        if line[piece[k - 1][1] - 1] in _BREAK_AFTER or line[piece[k][0]] in _OPENERS:
            moved = piece[k:]
            del piece[k:]
            return moved
    return []


def wrap(text: str, width: int) -> list[str]:
    """``text`` (markers stripped) as lines of at most ``width`` columns (see the module
    docstring for where they break)."""
    lines: list[str] = []
    for line in strip_markers(text).splitlines() or [""]:
        indent, pieces = break_line(line, width)
        lines += [(indent + line[s:e]).rstrip() for s, e in pieces]
    return lines


def fill(text: str, width: int, indent: str = "") -> str:
    """:func:`wrap`, joined, each line after ``indent``."""
    return "\n".join(indent + line for line in wrap(text, width - cell_len(indent)))


def fill_indented(text: str, width: int) -> str:
    """``text`` with each line wrapped to ``width`` columns, a line's continuation keeping its
    leading spaces (a quiz's verdict, then its indented reasoning)."""
    lines = []
    for line in text.splitlines():
        indent = line[:len(line) - len(line.lstrip(" "))]
        lines.append(fill(line[len(indent):], width, indent) if line.strip() else line)
    return "\n".join(lines)


# --------------------------------------------------------------------------- rich renderables

def _show_code(text: Text, with_colour: bool) -> tuple[Text, set[int]]:
    """``text`` with its backticked spans styled as code (backticks dropped) where there is
    colour; and the offsets of those spans' characters, which stay together."""
    from rich.text import Text

    plain, out, code, at = text.plain, Text(), set(), 0
    for match in _CODE.finditer(plain):
        out.append_text(text[at:match.start()])
        inner_start, inner_end = match.span(1)
        if with_colour:
            piece = text[inner_start:inner_end]
            piece.stylize(CODE_STYLE)
        else:
            piece = text[match.start():match.end()]
        begin = len(out.plain)
        out.append_text(piece)
        code.update(range(begin, len(out.plain)))
        at = match.end()
    out.append_text(text[at:])
    return out, code


_EMPHASIS = ((_BOLD, "bold"), (_ITALIC, "italic"), (_UNDERSCORE, "italic"))


def _show_emphasis(text: Text) -> Text:
    """``text`` with markdown emphasis shown as a style instead of its markers (code in
    backticks left alone)."""
    from rich.text import Text

    for pattern, style in _EMPHASIS:
        out, at = Text(style=text.style, end=""), 0
        for match in _emphasis(text.plain, pattern):
            out.append_text(text[at:match.start()])
            piece = text[match.start(1):match.end(1)]
            piece.stylize(style)
            out.append_text(piece)
            at = match.end()
        out.append_text(text[at:])
        text = out
    return text


class Prose:
    """A text laid out by this module's rules at whatever width rich gives it: in a table
    cell, the column's width; printed alone, the console's."""

    def __init__(self, text: str | Text, style: str = "", hang: int = 0, words: bool = False):
        """``hang``: how much further than the first line the following lines are indented
        (a list item's text under its text, not under its bullet). ``words``: Chinese breaks
        only at punctuation or spaces, never inside a word (see :func:`atoms`)."""
        from rich.text import Text

        text = _show_emphasis(text.copy() if isinstance(text, Text) else Text(text))
        if style:
            text.stylize(style)
        self.text, self.hang, self.words = text, hang, words

    def _lines(self, width: int, with_colour: bool) -> list[Text]:
        from rich.text import Text

        out: list[Text] = []
        for paragraph in self.text.split("\n", allow_blank=True) or [Text("")]:
            shown, code = _show_code(paragraph, with_colour)
            indent, pieces = break_line(shown.plain, max(1, width - self.hang), code, self.words)
            for number, (start, end) in enumerate(pieces):
                line = Text(indent + " " * (self.hang if number else 0)) + shown[start:end]
                line.rstrip()
                out.append(line)
        return out

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        from rich.measure import Measurement

        plain = self.text.plain.replace("`", "")
        widest = max((cell_len(line) for line in plain.splitlines()), default=0)
        return Measurement(min(widest_atom(plain, self.words), options.max_width),
                           min(widest, options.max_width))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.segment import Segment

        for line in self._lines(options.max_width, _has_colour(console)):
            yield from line.render(console)
            yield Segment.line()


def _has_colour(console: Console) -> bool:
    return console.color_system is not None and not console.no_color


def print_prose(console: Console, text: str | Text = "", *, style: str = "",
                markup: bool | None = None, plain: bool | None = None) -> None:
    """Print prose laid out to the console's width; where the output is not a terminal
    (``plain``; default: the console is not one), as it is, one line per line, unwrapped."""
    from rich.text import Text

    if isinstance(text, str):
        text = console.render_str(text, markup=markup, highlight=False)
    if plain if plain is not None else not console.is_terminal:
        console.print(Text(strip_markers(text.plain), style=text.style) if not text.spans
                      else text, style=style, soft_wrap=True, highlight=False)
    else:
        console.print(Prose(text, style))


# --------------------------------------------------------------------------- tables

def _as_text(cell) -> Text:
    from rich.text import Text

    return cell.copy() if isinstance(cell, Text) else Text(str(cell))


def _plain_rows(console: Console, header: Sequence[str], rows: Sequence[Sequence],
                measure_rows: Sequence[Sequence] | None = None) -> None:
    """One line per row, columns aligned by display width, the last column unpadded and
    nothing wrapped (a pipe, a file: the reader's viewer wraps, or a grep finds the row)."""
    from rich.text import Text

    cells = [[_as_text(c) for c in row] for row in [list(header), *rows]]
    for line in cells:
        for cell in line:
            cell.plain = strip_markers(cell.plain)
    measured = [[strip_markers(_as_text(c).plain) for c in row] for row in measure_rows or rows]
    widths = [max(cell_len(row[n].plain) for row in cells) for n in range(len(header))]
    widths = [max(width, *(cell_len(row[n]) for row in measured)) for n, width in enumerate(widths)]
    for number, row in enumerate(cells):
        line = Text()
        for n, cell in enumerate(row):
            last = n == len(row) - 1 or not any(c.plain for c in row[n + 1:])
            line.append_text(cell)
            if last:
                break
            line.append(" " * (widths[n] - cell_len(cell.plain) + 2))
        if number == 0:
            line.stylize("bold")
        console.print(line, soft_wrap=True, highlight=False)


def _stacked(console: Console, header: Sequence[str], rows: Sequence[Sequence]) -> None:
    """One block per row: its first cell, then each other non-empty cell on a line of its own
    after its column's name, laid out to the console's width."""
    from rich.markup import escape
    from rich.text import Text

    from graders.core.i18n import _

    for row in rows:
        console.print(Prose(_as_text(row[0]), "bold", words=True))
        for name, cell in zip(header[1:], row[1:]):
            cell = _as_text(cell)
            if cell.plain.strip():
                line = _("{column}: {value}", column=escape(name), value=cell.markup)
                console.print(Prose(Text("  ") + console.render_str(line, highlight=False)))
    console.print()


def print_table(console: Console, header: Sequence[str], rows: Sequence[Sequence], *,
                title: str | None = None, plain: bool | None = None, boxed: bool = True,
                measure_rows: Sequence[Sequence] | None = None) -> None:
    """A table of ``rows`` (cells: plain strings or styled :class:`Text`) under ``header``;
    its columns are measured over ``measure_rows`` (default ``rows``: several tables measured
    over all their rows line up).

    On a terminal (or a console of a fixed width, e.g. a notebook's): a rich table whose
    cells are :class:`Prose`, or, when its columns cannot hold their widest atoms side by side,
    the stacked layout. Not on a terminal (``plain``; default: the console is not one): one
    line per row, unwrapped.
    """
    from rich import box
    from rich.table import Table
    from rich.text import Text

    if title:
        print_prose(console, Text(title), plain=plain)
    if plain if plain is not None else not console.is_terminal:
        _plain_rows(console, header, rows, measure_rows)
        return
    texts = [[_as_text(cell) for cell in row] for row in rows]
    measured = [[_as_text(cell).plain for cell in row] for row in measure_rows or rows]
    lowest = [max(widest_atom(name), *(widest_atom(row[n], words=n == 0) for row in measured))
              for n, name in enumerate(header)]
    highest = [max(cell_len(name), *(_widest_line(row[n]) for row in measured))
               for n, name in enumerate(header)]
    # A short column (a status, a tier, "核心") is not wrapped at all: only long text may be.
    lowest = [max(low, min(high, SHORT_COLUMN)) for low, high in zip(lowest, highest)]
    # The first column names each row (a check's title): it breaks only between words, and
    # gets its longest name's width up to TITLE_COLUMN, or the table is stacked.
    lowest[0] = max(lowest[0], min(highest[0], TITLE_COLUMN))
    # Chinese prose (a hint) under PROSE_COLUMN wide breaks every few words: wider, or stacked.
    lowest[1:] = [max(low, min(high, PROSE_COLUMN)) if any(_CJK_EDGE.search(r[n]) for r in measured)
                  else low for n, (low, high) in enumerate(zip(lowest, highest)) if n]
    # Box drawing costs three columns a column: drop it before stacking.
    for frame in ([box.HEAVY_HEAD, None] if boxed else [None]):
        overhead = 3 * len(header) + 1 if frame else 2 * (len(header) - 1)
        widths = _column_widths(lowest, highest, console.width - overhead)
        if widths is None:
            continue
        table = Table(box=frame, padding=(0, 1) if frame else (0, 2, 0, 0), pad_edge=bool(frame))
        for name, width in zip(header, widths):
            table.add_column(name, width=width)
        for row in texts:
            table.add_row(Prose(row[0], words=True), *map(Prose, row[1:]))
        console.print(table)
        return
    _stacked(console, header, rows)


def _widest_line(text: str) -> int:
    return max((cell_len(line) for line in strip_markers(text).replace("`", "").splitlines()),
               default=0)


def _column_widths(lowest: list[int], highest: list[int], room: int) -> list[int] | None:
    """Each column's width: its widest line where all fit in ``room``; otherwise its widest
    atom plus a fair share of what is left (the columns that want least get all they want
    first). None when not even the widest atoms fit."""
    if sum(lowest) > room:
        return None
    if sum(highest) <= room:
        return list(highest)
    widths, spare = list(lowest), room - sum(lowest)
    hungry = sorted(range(len(widths)), key=lambda n: highest[n] - lowest[n])
    for place, n in enumerate(hungry):
        share = min(highest[n] - lowest[n], spare // (len(hungry) - place))
        widths[n] += share
        spare -= share
    return widths


# --------------------------------------------------------------------------- markdown

_TABLE_RULE = re.compile(r"^\|?\s*:?-{3,}")


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


_LIST_ITEM = re.compile(r"^(\s*)([-*+]|\d+[.)])\s+")
_CJK_EDGE = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f]")


def _join_lines(before: str, after: str) -> str:
    """Two lines of one markdown paragraph as one: a space between them, none where
    either side is Chinese."""
    tight = _CJK_EDGE.match(before[-1:] or " ") or _CJK_EDGE.match(after[:1] or " ")
    return before + ("" if tight else " ") + after


def print_markdown(console: Console, source: str) -> None:
    """A markdown document (``kata report``, a README's questions) shown in a terminal:
    headings in bold, tables as :func:`print_table`, each paragraph and list item as one
    prose block (its source lines joined), code blocks as they are; emphasis and code
    styled, their markers never printed."""
    from rich.text import Text

    lines = source.splitlines()
    block: list = []  # the paragraph or list item being read: [its text, its hang]

    def flush() -> None:
        if block:
            console.print(Prose(block[0], hang=block[1]))
            block.clear()

    i, fence = 0, None
    while i < len(lines):
        line = lines[i]
        i += 1
        opens = re.match(r"^\s*(```|~~~)", line)
        if fence or opens:
            flush()
            console.print(Text(line), soft_wrap=True, highlight=False)
            fence = None if fence and opens else (fence or opens.group(1))
            continue
        if line.startswith("|") and i < len(lines) and _TABLE_RULE.match(lines[i]):
            flush()
            header, rows = _cells(line), []
            i += 1
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            print_table(console, header, rows, plain=False)
            continue
        heading = re.match(r"^(#{1,6})\s+(.*)", line)
        item = _LIST_ITEM.match(line)
        if heading or item or not line.strip():
            flush()
        if heading:
            console.print(Prose(heading.group(2), "bold underline" if len(heading.group(1)) == 1
                                else "bold"))
        elif item:
            block[:] = [line.rstrip(), item.end() - len(item.group(1))]
        elif not line.strip():
            console.print()
        elif block:
            block[0] = _join_lines(block[0], line.strip())
        else:
            block[:] = [line.rstrip(), 0]
    flush()
