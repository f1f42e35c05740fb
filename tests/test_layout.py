"""Output never breaks a slug, a code span, a shape or an identifier (issue 17, part 2).

Real renderers at 40, 80 and 120 columns (a rich Console with ``force_terminal``), in a pipe
(not a terminal) and in a notebook's ``check()``: a failing kata's table and verdict in
English and Chinese, ``kata hint``'s rungs and ``kata list``. In a terminal no line is wider
than the terminal; nowhere is an atom that fits on a line split across two; no markdown
emphasis marker is printed; in a pipe every check is one line.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import shutil

import pytest
from rich.console import Console

from graders.core import i18n, registry, session
from graders.core.catalogue import MISTAKES
from graders.core.registry import REPO_ROOT
from graders.frontends import cli, layout, notebook, rendering
from tests.mutation import mutants

KV_CACHE = registry.get("11")  # a verdict full of shapes and formulas: (t, s + t), s + i
GQA = registry.get("13")  # [mask-inverted]: the catalogue's text has *blocked* in it
WIDTHS = (40, 80, 120)
LANGUAGES = ("en", "zh-CN")
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

# What must never be split: slugs, calls and code-like groups, shapes, dotted or
# underscored identifiers, backticked code (found in the text before it is laid out).
ATOMS = re.compile("|".join([
    r"\[[a-z0-9]+(?:-[a-z0-9]+)+\]",  # [causal-mask-offset]
    r"[\w.]*\((?:[\w.=+*/-]+(?: [+*/-] [\w.]+)*, )*[\w.=+*/-]+(?: [+*/-] [\w.]+)*\)",  # view(b, n, h, d), (t, s + t)
    r"\b[A-Za-z]\w*(?:[._]\w+)+\b",  # torch.bool, num_kv_heads, is_causal=True's is_causal
    r"`[^`\n]+`",
]))
MARKERS = re.compile(r"\*\*\S|(?<![\w*])\*[^\s*][^*\n]*?[^\s*]\*(?![\w*])|(?<![\w`])_[A-Za-z][^_\n]*?[a-z]_(?!\w)")


def atoms_of(text: str) -> set[str]:
    return {atom for match in ATOMS.findall(text) if len(atom := match.strip("`")) > 2}


def assert_laid_out(shown: str, source: str, width: int | None) -> None:
    """``shown`` (what a learner sees) keeps every atom of ``source`` (the same texts
    unwrapped) that fits on a line whole on one line, has no line wider than ``width``
    (None: a pipe, where nothing is wrapped) and no markdown marker. Python code (indented
    by four spaces: a near-code hint) is printed whole, never wrapped: the terminal
    soft-wraps it, and a copy of it stays one line."""
    lines = ANSI_ESCAPE.sub("", shown).splitlines()
    if width is not None:
        too_wide = [line for line in lines if layout.display_width(line) > width
                    and not line.startswith("    ")]
        assert not too_wide, f"lines wider than {width}:\n" + "\n".join(too_wide)
    for atom in atoms_of(source):
        if width is not None and layout.display_width(atom) > width - 12:
            continue  # wider than a cell's line may be: it has to open up (module docstring)
        split = source.count(atom) > sum(line.count(atom) for line in lines)
        assert not split, f"{atom!r} is split across lines at width {width}:\n" + "\n".join(lines)
    marked = [line for line in lines if MARKERS.search(line.replace("`", " "))]
    assert not marked, "markdown markers reach the terminal:\n" + "\n".join(marked)


def terminal(width: int, colour: bool = True) -> tuple[Console, io.StringIO]:
    output = io.StringIO()
    return Console(file=output, width=width, force_terminal=True, legacy_windows=False,
                   color_system="standard" if colour else None), output


def pipe() -> tuple[Console, io.StringIO]:
    output = io.StringIO()
    return Console(file=output, width=80, force_terminal=False, color_system=None), output


def mutant_file(kata, slug: str, folder) -> str:
    mutant = next(m for m in mutants(kata) if m.slug == slug and not m.variant)
    return str(mutant.materialise(kata, folder))


@pytest.fixture(scope="module")
def failing(tmp_path_factory) -> dict[str, object]:
    """Kata 11 graded with the causal mask not offset by the cache, in both languages, and
    kata 13 with the mask read the wrong way round (English)."""
    folder = tmp_path_factory.mktemp("mutants")
    kv_cache = mutant_file(KV_CACHE, "causal-mask-offset", folder)
    results = {}
    for language in LANGUAGES:
        with i18n.speaking(language):
            results[language] = session.grade(KV_CACHE.id, kv_cache)
    results["gqa"] = session.grade(GQA.id, mutant_file(GQA, "mask-inverted", folder))
    return results


def rendered(result, console: Console, output: io.StringIO, *, plain: bool = False) -> str:
    rendering.render(result, console, plain=plain)
    return output.getvalue()


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("width", WIDTHS)
def test_verdict_and_table_keep_atoms_whole_in_a_terminal(failing, language, width):
    result = failing[language]
    assert "causal-mask-offset" in result.slugs
    with i18n.speaking(language):
        source = rendered(result, *pipe(), plain=True)
        shown = rendered(result, *terminal(width))
    assert_laid_out(shown, source, width)
    assert "[causal-mask-offset]" in shown and "(t, s + t)" in shown


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_pipe_gets_one_unwrapped_line_per_check(failing, language):
    result = failing[language]
    with i18n.speaking(language):
        shown = rendered(result, *pipe(), plain=True)
        hint = layout.strip_markers(i18n.translate(MISTAKES["causal-mask-offset"].hint))
        names = [check.label for check in result.checks]  # the check's title, translated
    assert_laid_out(shown, shown, None)
    lines = shown.splitlines()
    for check, name in zip(result.checks, names):
        rows = [line for line in lines if line.startswith(name + " ")]
        assert len(rows) == 1, (name, shown)
        if check.slug:
            assert f"[{check.slug}]" in rows[0]
    assert any(line.endswith(hint) for line in lines), "the hint is not whole on its row"
    assert max(map(layout.display_width, lines)) > 80  # 80 columns are not imposed on a pipe
    assert not re.search("[\u2500-\u259f]", shown)  # no box drawing


def test_markdown_emphasis_never_reaches_the_terminal(failing):
    result = failing["gqa"]
    assert "*blocked*" in MISTAKES["mask-inverted"].explanation  # the catalogue keeps its markdown
    assert "mask-inverted" in result.slugs
    for console, output in (terminal(80), terminal(40, colour=False), pipe()):
        shown = rendered(result, console, output, plain=not console.is_terminal)
        assert "True means blocked here" in re.sub(r"\s+", " ", ANSI_ESCAPE.sub("", shown))
        assert_laid_out(shown, shown if not console.is_terminal else "", None)


def test_a_table_that_cannot_fit_is_stacked(failing):
    result = failing["en"]
    narrow = ANSI_ESCAPE.sub("", rendered(result, *terminal(40)))
    wide = ANSI_ESCAPE.sub("", rendered(result, *terminal(200)))  # room for the 61-column hint
    assert "┃" not in narrow and "mistake: [causal-mask-offset]" in narrow
    assert "┃" in wide or re.search(r"^check\s+tier\s+result", wide, re.M)


@pytest.mark.parametrize("language", LANGUAGES)
def test_notebook_check_keeps_atoms_whole(failing, language, tmp_path, capsys):
    path = mutant_file(KV_CACHE, "causal-mask-offset", tmp_path)
    spec = importlib.util.spec_from_file_location("kv_cache_mutant", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with i18n.speaking(language):
        notebook.check(KV_CACHE.id, module.CausalSelfAttention)
        shown = capsys.readouterr().out
        source = rendered(failing[language], *pipe(), plain=True)
    assert "[causal-mask-offset]" in shown
    assert_laid_out(shown, source, notebook.REPORT_WIDTH)


@pytest.fixture
def sandbox(tmp_path):
    shutil.copytree(REPO_ROOT / "katas", tmp_path / "katas",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def kata(root, *argv: str, console: Console, output: io.StringIO) -> str:
    with contextlib.redirect_stderr(io.StringIO()):
        cli.main(list(argv), root=root, console=console, interactive=False)
    return output.getvalue()


@pytest.mark.parametrize("language", LANGUAGES)
def test_hint_rungs_and_list_keep_atoms_whole(sandbox, language):
    with i18n.speaking(language):
        source = ""
        for width in (None, *WIDTHS):  # the pipe first: its unwrapped text is the source
            console, output = terminal(width) if width else pipe()
            for _rung in KV_CACHE.hints:
                kata(sandbox, "hint", KV_CACHE.id, console=console, output=output)
            kata(sandbox, "list", console=console, output=output)
            shown = output.getvalue()
            source = source or shown
            assert_laid_out(shown, source, width)
            assert "01_attention" in shown and "14_flash_attention" in shown
            shutil.rmtree(sandbox / ".kata")  # the hints again from the first


def split_titles(shown: str, titles: list[str]) -> list[str]:
    """The titles that a table's first column breaks inside a word: anywhere but at a space,
    after Chinese punctuation (，、：；）) or before （. A stacked layout prints each title on
    a line of its own."""
    lines = ANSI_ESCAPE.sub("", shown).splitlines()
    fragments = [cells[1].strip() for line in lines if (cells := line.split("│"))[0] == ""
                 and len(cells) > 2 and cells[1].strip()]
    header = next((line for line in lines if line.startswith(i18n.translate("check") + " ")), None)
    if not fragments and header:  # a table without a frame: the first column's cells
        width = len(header) - len(header[len(i18n.translate("check")):].lstrip())
        width = layout.display_width(header[:width])
        body = lines[lines.index(header) + 1:]
        for line in body[:next((n for n, line in enumerate(body) if not line.strip()), len(body))]:
            cut = next((n for n in range(len(line) + 1)
                        if layout.display_width(line[:n]) >= width), len(line))
            fragments += [line[:cut].strip()] if line[:cut].strip() else []
    if not fragments:
        return [title for title in titles if title not in [line.strip() for line in lines]]
    found, rest = [], iter(fragments)
    for title in titles:
        pieces = [next(rest)]
        while "".join(pieces).replace(" ", "") != title.replace(" ", ""):
            pieces.append(next(rest))
        at = 0
        for piece in pieces[:-1]:
            at = title.index(piece, at) + len(piece)
            if not (title[at] == " " or title[at - 1] in "，、：；）" or title[at] == "（"):
                found.append(f"{title!r} broken as {pieces}")
    return found


@pytest.mark.parametrize("kata, slug", [("13", "kv-cache-dtype-ignored"),
                                        ("16", "top-p-drops-crossing-token"),
                                        ("18", "window-off-by-one")])
def test_check_titles_are_never_split_inside_a_word(kata, slug, tmp_path):
    """zh review of 15–19, #40: at 100 columns the title column got 14–24 cells and showed
    "大小为 1 和不" / "小于 n 的窗" / "口、大量汇聚点". A title now breaks only between words,
    or the table is stacked."""
    kata = registry.get(kata)
    with i18n.speaking("zh-CN"):
        result = session.grade(kata.id, mutant_file(kata, slug, tmp_path))
        assert slug in result.slugs
        titles = [check.label for check in result.checks]
        for width in (100, 120, 140):
            shown = rendered(result, *terminal(width))
            assert_laid_out(shown, rendered(result, *pipe(), plain=True), width)
            assert not split_titles(shown, titles), (width, split_titles(shown, titles), shown)
    assert split_titles("│ 大小为 1 和不 │\n│ 小于 n 的窗 │\n│ 口、大量汇聚点 │",
                        ["大小为 1 和不小于 n 的窗口、大量汇聚点"])  # what the review saw


@pytest.mark.parametrize("text, width, lines", [
    ("hint: view(b, n, h, d) first, then transpose(1, 2) to (b, h, n, d)", 24,
     ["hint: view(b, n, h, d)", "first, then", "transpose(1, 2) to", "(b, h, n, d)"]),
    ("see [reshape-without-transpose] now", 30, ["see", "[reshape-without-transpose]", "now"]),
    ("see [reshape-without-transpose] now", 20, ["see", "[reshape-without-tra", "nspose] now"]),
    ("新的查询 i 位于位置 s + i，必须能看到所有缓存中的键", 20,
     ["新的查询 i 位于位置", "s + i，必须能看到所", "有缓存中的键"]),
    ("先写下来：`softmax(Q Kᵀ / √d_k + mask) V`。然后", 34,
     ["先写下来：", "`softmax(Q Kᵀ / √d_k + mask) V`。", "然后"]),
    # zh review 2026-12-01, L2: Chinese breaks after its punctuation or before a bracket when
    # one lies a third of the line back, not inside a word ("从序列" / "开头数起").
    ("键和值写入位置 p（从序列开头数起）在块 table[p // block_size] 的槽位 p % block_size", 24,
     ["键和值写入位置 p", "（从序列开头数起）在块", "table[p // block_size]", "的槽位 p % block_size"]),
    ("按这些位置旋转查询和键，再比较", 22, ["按这些位置旋转查询和", "键，再比较"]),
])
def test_where_lines_break(text, width, lines):
    assert layout.wrap(text, width) == lines


@pytest.mark.parametrize("width", [80, 100])
def test_a_column_of_chinese_prose_is_wide_or_stacked(width):
    """zh review 2026-12-01, L2: a table's Chinese hint column is never squeezed under
    PROSE_COLUMN cells (breaking every few characters); the table is stacked instead."""
    hint = "提示：键和值写入位置 p（从序列开头数起）在块 table[p // block_size] 的槽位 p % block_size" * 2
    rows = [["paged_attention 对照 float64 参考实现", "未通过", hint]] * 2
    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=True, no_color=True)
    layout.print_table(console, ["检查项", "结果", "提示"], rows, plain=False)
    lines = out.getvalue().splitlines()
    if any("┃" in line or "│" in line for line in lines):  # a table: its last column is wide enough
        cells = [line.split("│")[-2] for line in lines if line.count("│") >= 3]
        assert min(layout.cell_len(cell) for cell in cells) >= layout.PROSE_COLUMN, lines
    else:
        assert any(line.startswith("提示：") or "提示：" in line for line in lines), lines


def test_markers_are_stripped_but_formulas_and_identifiers_kept():
    assert layout.strip_markers("True means *blocked* here, **always**; _note_") == \
        "True means blocked here, always; note"
    for kept in ("base ** 2*i / d_model", "(base**2)*i/d_model", "2*p*q*r", "__init__",
                 "`*args*`", "x * y * z"):
        assert layout.strip_markers(kept) == kept


# --- Chinese paragraphs are not hard-wrapped (a break renders as a stray space) ---

def test_reflow_joins_chinese_sentences_and_nothing_else():
    from graders.tools.texts import hard_wraps, reflow

    source = "\n".join([
        "在多头注", "意力中，每个 token", "的键都要保存。下一句还会", "*点出名字*。", "另起一行也可以。", "",
        "- 列表项的第一行，", "  它的续行", "- 第二项", "",
        "| 名称 | 说明 |", "|---|---|", "| `q` | 查询 |", "",
        "```python", "x = 1  # 注释", "y = 2  # 不动", "```", "",
        "## 标题", "正文第一行", "English lines", "wrap as they like",
    ])
    assert reflow(source) == "\n".join([
        "在多头注意力中，每个 token 的键都要保存。下一句还会*点出名字*。", "另起一行也可以。", "",
        "- 列表项的第一行，它的续行", "- 第二项", "",
        "| 名称 | 说明 |", "|---|---|", "| `q` | 查询 |", "",
        "```python", "x = 1  # 注释", "y = 2  # 不动", "```", "",
        "## 标题", "正文第一行 English lines", "wrap as they like",
    ])
    assert len(hard_wraps(source)) == 5 and hard_wraps(reflow(source)) == []


def chinese_markdown() -> dict[str, str]:
    """Every markdown a Chinese reader sees: the translated READMEs, the lessons' prose in
    the catalogs, and the zh-CN notebooks' markdown cells."""
    import json

    from graders.tools import texts

    found = {str(p.relative_to(REPO_ROOT)): p.read_text(encoding="utf-8")
             for p in texts.translated_readmes()}
    for path in sorted(i18n.catalog_dir("zh-CN").glob("*.po")):
        for message in texts.read(path):
            if message.id and message.string and texts.is_markdown(message):
                found[f"{path.name}: {message.auto_comments[0]}"] = message.string
    for path in sorted((REPO_ROOT / "notebooks" / "zh-CN").glob("*.ipynb")):
        for number, cell in enumerate(json.loads(path.read_text())["cells"]):
            if cell["cell_type"] == "markdown":
                found[f"{path.name} cell {number}"] = "".join(cell["source"])
    return found


def test_no_chinese_sentence_is_hard_wrapped():
    from graders.tools.texts import hard_wraps

    wrapped = {where: breaks for where, text in chinese_markdown().items()
               if (breaks := hard_wraps(text))}
    assert not wrapped, ("line breaks inside Chinese sentences (fix: python -m "
                         "graders.tools.texts reflow):\n" + "\n".join(
                             f"{where}: {len(breaks)}, e.g. {breaks[0]}"
                             for where, breaks in wrapped.items()))


def test_report_in_a_terminal_shows_no_markdown_and_a_pipe_keeps_lines_whole(sandbox):
    with i18n.speaking("zh-CN"):
        console, output = terminal(80)
        kata(sandbox, "report", console=console, output=output)
        shown = ANSI_ESCAPE.sub("", output.getvalue())
    assert "01_attention：" in shown and "**" not in shown and not shown.lstrip().startswith("#")
    path = sandbox / "katas" / KV_CACHE.name / KV_CACHE.file
    path.write_text(path.read_text() + "\n# my attempt, saved by kata reset before it replaces it\n")
    console, output = pipe()
    kata(sandbox, "reset", KV_CACHE.id, "--yes", console=console, output=output)
    kata(sandbox, "restore", KV_CACHE.id, "--list", console=console, output=output)
    listed = [line for line in output.getvalue().splitlines() if re.match(r"\s+1\s", line)]
    assert len(listed) == 1 and listed[0].endswith("(latest)"), output.getvalue()
    assert layout.display_width(listed[0]) > 80  # whole, not cut at 80 columns


@pytest.mark.parametrize("language", LANGUAGES)
def test_readmes_shown_in_a_terminal_keep_atoms_whole(language):
    """kata mock shows the README's questions laid out like this (code blocks apart)."""
    for kata in registry.KATAS:
        readme = kata.folder / i18n.readme_name(language)
        source = re.sub(r"^\s*```.*?^\s*```\n?", "", readme.read_text(encoding="utf-8"),
                        flags=re.S | re.M)
        console, output = terminal(60)
        layout.print_markdown(console, source)
        assert_laid_out(output.getvalue(), re.sub(r"\s*\n\s*", " ", source), 60)
