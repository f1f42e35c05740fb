"""Every text a learner reads exists in every language, equally correct.

- Choosing: KATA_LANG first, then the locale (LC_ALL, LC_MESSAGES, LANG), else English.
- Catalogs (graders/locales/<ll_CC>/LC_MESSAGES/*.po) hold exactly the English texts the
  repository shows today (graders.tools.texts gathers them), every one translated,
  none left over, none marked fuzzy; a kata added later brings its own catalog, which
  fails here until it is translated.
- Faithful: a translation keeps the code, inline code, math, placeholders, slugs and every
  number of its English, and renders the glossary's terms as the glossary says.
- READMEs: every kata's README.md has its README.<lang>.md twin, linked both ways, with the
  same code, shapes and numbers.
- Display width: prose wraps by terminal columns (a Chinese character takes two).
- A third language is data: a folder of .po files, no code.
"""

from __future__ import annotations

import re

import pytest

from graders.core import i18n
from graders.frontends import layout
from graders.core.catalogue import MISTAKES
from graders.core.registry import KATAS, REPO_ROOT, Kata
from graders.tools import texts

TRANSLATED = [tag for tag in i18n.languages() if tag != i18n.ENGLISH]
by_language = pytest.mark.parametrize("language", TRANSLATED)


def test_there_is_a_chinese_edition():
    assert "zh-CN" in TRANSLATED


# --- choosing the language ---

@pytest.mark.parametrize("environment, expected", [
    ({"KATA_LANG": "zh-CN"}, "zh-CN"),
    ({"KATA_LANG": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}, "zh-CN"),
    ({"KATA_LANG": "en", "LANG": "zh_CN.UTF-8"}, "en"),
    ({"LANG": "zh_CN.UTF-8"}, "zh-CN"),
    ({"LC_ALL": "zh_TW.UTF-8", "LANG": "en_US.UTF-8"}, "zh-CN"),  # a zh locale selects zh-CN
    ({"LC_ALL": "en_GB.UTF-8", "LANG": "zh_CN.UTF-8"}, "en"),  # the first one set decides
    ({"LC_MESSAGES": "zh_CN", "LANG": "C"}, "zh-CN"),
    ({"LANG": "C.UTF-8"}, "en"),
    ({"LANG": "fr_FR.UTF-8"}, "en"),
    ({}, "en"),
])
def test_language_from_kata_lang_then_the_locale(monkeypatch, environment, expected):
    for name in ("KATA_LANG", *i18n.LOCALE_ENVS):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert i18n.current() == expected


def test_an_unknown_language_is_refused_by_name(monkeypatch):
    monkeypatch.delenv("KATA_LANG", raising=False)
    with pytest.raises(ValueError, match="available: en, zh-CN"):
        i18n.use("klingon")


def test_lookup_falls_back_to_english_and_fills_placeholders(monkeypatch):
    monkeypatch.setenv("KATA_LANG", "zh-CN")
    assert i18n._("no such text {n}", n=3) == "no such text 3"
    assert i18n.translate("") == ""


# --- the catalogs: complete, current, faithful ---

@by_language
def test_every_english_text_has_its_translation(language):
    gaps = texts.untranslated(language)
    shown = {name: found[:3] for name, found in gaps.items()}
    assert not gaps, (f"untranslated {language} texts (run `python -m graders.tools.texts "
                      f"update` and translate them): {shown}")


@by_language
def test_catalogs_hold_exactly_the_current_texts(language):
    wanted = texts.catalogs()
    folder = i18n.catalog_dir(language)
    assert {p.stem for p in folder.glob("*.po")} == set(wanted), \
        "catalogs differ from the texts: run python -m graders.tools.texts update"
    for name, found in wanted.items():
        have = [m.id for m in texts.read(texts.catalog_path(language, name)) if m.id]
        left_over = set(have) - {t.english for t in found}
        assert not left_over, f"{name}.po keeps texts that are gone: {sorted(left_over)[:3]}"


@by_language
def test_no_translation_is_fuzzy(language):
    for path in sorted(i18n.catalog_dir(language).glob("*.po")):
        fuzzy = [m.id for m in texts.read(path) if m.id and m.fuzzy]
        assert not fuzzy, f"{path.name}: fuzzy entries (check them, then drop the flag): {fuzzy[:3]}"


@by_language
def test_translations_keep_code_numbers_and_placeholders(language):
    problems = texts.problems(language)
    assert not problems, "\n".join(problems[:20])


def test_the_checks_see_a_changed_number_or_code_span():
    english = "Divide by `math.sqrt(d_k)`: 8 heads of {width} columns [missing-scale]."
    assert texts.differences(english, "除以 `math.sqrt(d_k)`：8 个头，每个 {width} 列 [missing-scale]。") == []
    assert texts.differences(english, "除以 `sqrt(d_k)`：8 个头，每个 {width} 列 [missing-scale]。")
    assert texts.differences(english, "除以 `math.sqrt(d_k)`：八个头，每个 {width} 列 [missing-scale]。")
    assert texts.differences(english, "除以 `math.sqrt(d_k)`：8 个头，每个 {w} 列 [missing-scale]。")
    code = "w = x @ y  # the scores\nreturn w"
    assert texts.differences(code, "w = x @ y  # 注意力分数\nreturn w", near_code=True) == []
    assert texts.differences(code, "w = x @ y.T  # 注意力分数\nreturn w", near_code=True)
    # A fenced block keeps its code; its comments and its Chinese lines (a diagram's labels,
    # a sample of Chinese output) change, keeping their numbers. So may an inline sample.
    block = "```\nw = x @ y  # the scores\nkeys:  0 1\n```"
    assert texts.differences(block, "```\nw = x @ y  # 注意力分数\n键:  0 1\n```") == []
    assert texts.differences(block, "```\nw = x @ y.T  # 注意力分数\n键:  0 1\n```")
    assert texts.differences(block, "```\nw = x @ y  # 注意力分数\n键:  0 2\n```")
    assert texts.differences("e.g. `core: 5/5 passed`", "例如 `核心检查：5/5 通过`") == []
    assert texts.differences("e.g. `core: 5/5 passed`", "例如 `核心检查：5/4 通过`")


# The glossary's renderings that every translation must use (graders/locales/zh_CN/GLOSSARY.md).
GLOSSARY_ZH = {
    "scaled dot-product attention": "缩放点积注意力",
    "multi-head attention": "多头注意力",
    "causal mask": "因果掩码",
    "padding mask": "填充掩码",
    "positional encoding": "位置编码",
    "residual connection": "残差连接",
    "cross-attention": "交叉注意力",
    "grouped-query attention": "分组查询注意力",
    "feed-forward": "前馈",
}


def test_chinese_uses_the_glossary():
    glossary = (i18n.LOCALES_DIR / "zh_CN" / "GLOSSARY.md").read_text()
    for english, chinese in GLOSSARY_ZH.items():
        assert chinese in glossary, english
    off = []
    for name in texts.catalogs():
        for message in texts.read(texts.catalog_path("zh-CN", name)):
            if not (message.id and message.string):
                continue
            prose = re.sub(r"`[^`]*`", "", message.id).lower()
            off += [f"{name}: {english!r} not rendered {chinese!r} in {message.string[:60]!r}"
                    for english, chinese in GLOSSARY_ZH.items()
                    if english in prose and chinese not in message.string]
    assert not off, "\n".join(off[:20])


# Renderings that drifted from the glossary once: never again, in any Chinese text.
DRIFTED_ZH = {
    "运行最大值": "当前最大值", "运行加权和": "累计加权和", "堆栈": "层堆叠", "接近代码": "近似代码",
    "算子核": "kernel", "注意力核": "kernel", "原生核": "kernel", "受限于显存带宽": "访存受限",
    "受限于内存带宽": "访存受限", "Flash Attention": "FlashAttention",
    "Flash attention": "FlashAttention", "曝光偏差": "暴露偏差", "教师强制": "teacher forcing",
    "批次元素": "样本", "笔记本": "notebook", "评判结果": "判定结果", "点出它的名字": "给出错误名",
    "盈亏平衡点": "临界点", "几何级数": "等比数列", "极小负数": "很大的负数",
    # zh review of katas 15–19 (2026-11-28), #34 and across katas:
    "给出它的名字": "给出错误名", "面试官的追问": "面试官追问", "评测本文件夹": "为本文件夹中的",
    "评分本文件夹": "为本文件夹中的", "认出常见错误": "认出经典错误", "（查询, 键）": "（查询，键）",
    "主干": "残差流", "左侧填充": "左填充", "长位置": "位置很大时", "不同行 {": "个不同的行",
    "指数竞赛": "指数竞速法", "键值缓存内存": "显存", "少多少倍": "多少倍", "下一 token": "预测下一个 token",
}


def chinese_texts() -> dict[str, str]:
    """Every Chinese text a learner reads: READMEs, catalog translations, notebooks."""
    import nbformat

    found = {path.relative_to(REPO_ROOT).as_posix(): path.read_text()
             for path in [REPO_ROOT / i18n.readme_name("zh-CN"),
                          *(kata.folder / i18n.readme_name("zh-CN") for kata in KATAS)]}
    for path in sorted((REPO_ROOT / "notebooks" / "zh-CN").glob("*.ipynb")):
        cells = nbformat.read(path, as_version=4).cells
        found[path.relative_to(REPO_ROOT).as_posix()] = "\n".join(cell.source for cell in cells)
    for name in texts.catalogs():
        path = texts.catalog_path("zh-CN", name)
        if path.exists():
            found[f"{name}.po"] = "\n".join(m.string for m in texts.read(path) if m.id and m.string)
    return found


def test_a_chinese_hint_that_ends_in_code_has_no_full_stop():
    """GLOSSARY.md: a sentence that ends in code ends without 。, so that copying the code
    does not copy the full stop (zh review of 15–19, #37: `…x.var()。`, `…(b, h, n, d)。`)."""
    table = i18n.translations("zh-CN")
    ending = re.compile(r"[)\]'\d]。$")  # a call, a shape, a string or a number, then 。
    off = [f"[{slug}] {table[m.hint]!r}" for slug, m in MISTAKES.items()
           if m.hint in table and ending.search(table[m.hint])]
    assert not off, "\n".join(off)


def test_chinese_never_uses_a_drifted_rendering():
    glossary = (i18n.LOCALES_DIR / "zh_CN" / "GLOSSARY.md").read_text()
    assert all(term in glossary for term in DRIFTED_ZH.values())
    drifted = DRIFTED_ZH
    off = [f"{name}: {variant!r} (the glossary says {term!r})"
           for name, text in chinese_texts().items()
           for unwrapped in [re.sub(r"\n\s*", "", text)]  # also where a line break splits it
           for variant, term in drifted.items() if variant in text or variant in unwrapped]
    assert not off, "\n".join(off[:20])


# --- READMEs ---

by_readme = pytest.mark.parametrize("kata, language", [(k, lang) for k in KATAS for lang in TRANSLATED],
                                    ids=lambda v: v.name if isinstance(v, Kata) else v)


@by_readme
def test_every_readme_has_its_twin_linked_both_ways(kata, language):
    english = kata.readme_path.read_text()
    twin_path = kata.folder / i18n.readme_name(language)
    assert twin_path.exists(), f"{kata.name} has no {twin_path.name}"
    twin = twin_path.read_text()
    assert f"]({twin_path.name})" in english, f"README.md does not link to {twin_path.name}"
    assert "](README.md)" in twin, f"{twin_path.name} does not link back to README.md"
    assert twin.startswith(f"# Kata {kata.id} — ")
    headings = [line.split()[0] for line in english.splitlines() if line.startswith("#")]
    assert [line.split()[0] for line in twin.splitlines() if line.startswith("#")] == headings


@by_readme
def test_readme_twin_keeps_code_shapes_and_numbers(kata, language):
    english = kata.readme_path.read_text()
    twin = (kata.folder / i18n.readme_name(language)).read_text()
    links = re.compile(r"^\[[^\]]+\]\(README(\.[A-Za-z-]+)?\.md\)\s*$", re.M)
    problems = texts.differences(links.sub("", english), links.sub("", twin))
    assert not problems, f"{kata.name} README in {language}: {problems}"


@by_readme
def test_readme_twin_tells_the_notebook_build_which_file_to_edit(kata, language):
    """The notebooks replace "Edit `<file>` in this folder" in each language's README."""
    with i18n.speaking(language):
        sentence = i18n._(texts_edit_sentence(), file=kata.file)
    twin = (kata.folder / i18n.readme_name(language)).read_text()
    assert re.sub(r"\s+", "", sentence) in re.sub(r"\s+", "", twin)


def texts_edit_sentence() -> str:
    from graders.tools.notebooks import EDIT_SENTENCE

    return EDIT_SENTENCE


@pytest.mark.parametrize("language", TRANSLATED)
def test_the_repository_readme_has_its_twin(language):
    english = (REPO_ROOT / "README.md").read_text()
    twin_name = i18n.readme_name(language)
    twin = (REPO_ROOT / twin_name).read_text()
    assert f"]({twin_name})" in english and "](README.md)" in twin
    links = re.compile(r"^\[[^\]]+\]\(README(\.[A-Za-z-]+)?\.md\)\s*$", re.M)
    assert texts.differences(links.sub("", english), links.sub("", twin)) == []


# --- display width ---

def test_wrapping_counts_a_chinese_character_as_two_columns():
    text = ("缩放点积注意力先用 `query @ key.transpose(-2, -1)` 计算注意力分数，再除以 "
            "sqrt(d_k)，然后在最后一维上做 softmax，得到每个查询对所有键的注意力权重。")
    lines = layout.wrap(text, 30)
    assert all(layout.display_width(line) <= 30 for line in lines if "`" not in line), lines
    assert "".join(lines).replace(" ", "") == text.replace(" ", "")
    assert any("`query" in line for line in lines) and any("-1)`" in line for line in lines)
    assert layout.display_width("注意力") == 6 and layout.display_width("abc") == 3
    english = layout.wrap("the quick brown fox jumps over the lazy dog", 10)
    assert english == ["the quick", "brown fox", "jumps over", "the lazy", "dog"]


# --- a third language is data ---

def test_a_third_language_is_a_folder_of_catalogs(tmp_path, monkeypatch):
    folder = tmp_path / "fr_FR" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    (folder / "messages.po").write_text(
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
        'msgid "Single-head scaled dot-product attention"\n'
        'msgstr "Attention à une tête"\n')
    monkeypatch.setattr(i18n, "LOCALES_DIR", tmp_path)
    i18n.translations.cache_clear()
    try:
        assert i18n.languages() == ("en", "fr-FR")
        monkeypatch.setenv("KATA_LANG", "fr")
        assert i18n.current() == "fr-FR"
        assert i18n.translate(KATAS[0].title) == "Attention à une tête"
    finally:
        i18n.translations.cache_clear()


# --- the words in the lessons' code cells ---

LESSON_CELL = '''\
x = torch.zeros(2, device="meta")                     # (b, n): the scores
label = "causal mask"
print("interleaved equals PyTorch:", ", ".join(["a b"]), sep=" ")
print(f"multi-head cache: {x.sum():.2f} GiB per sequence")
axis.set(title=label, xlabel="key j", cmap="viridis")
print("q", x)
axis.plot(x, x, "k--", label="full cache", color="gray")  # a legend: label= of any call
'''


def test_lesson_code_cells_offer_what_the_learner_reads():
    from graders.tools import lesson_code

    found = [(piece.kind, piece.english) for piece in lesson_code.pieces(LESSON_CELL)]
    assert found == [("comment", "(b, n): the scores"), ("string", "causal mask"),
                     ("string", "interleaved equals PyTorch:"),
                     ("string", "multi-head cache: {x.sum():.2f} GiB per sequence"),
                     ("string", "key j"), ("string", "full cache"),
                     ("comment", "a legend: label= of any call")]
    chinese = {"(b, n): the scores": "(b, n)：注意力分数", "causal mask": "因果掩码",
               "interleaved equals PyTorch:": "交错复制与 PyTorch 一致：", "key j": "键 j",
               "multi-head cache: {x.sum():.2f} GiB per sequence": "多头注意力的缓存：每条序列 {x.sum():.2f} GiB",
               "full cache": "完整缓存"}
    translated = lesson_code.translate(LESSON_CELL, lambda text: chinese.get(text, text))
    assert 'device="meta"' in translated and 'cmap="viridis"' in translated and '", ".join' in translated
    assert 'print(f"多头注意力的缓存：每条序列 {x.sum():.2f} GiB")' in translated
    assert "# (b, n)：注意力分数" in translated and 'label = "因果掩码"' in translated
    assert 'axis.plot(x, x, "k--", label="完整缓存", color="gray")' in translated
    compile(translated, "<cell>", "exec")


SKELETON = '''\
"""Kata 99: a toy.

Read README.md in this folder, then run
    pytest katas/99_toy
"""

import math  # noqa: F401  (you will want math.sqrt)

import torch  # noqa: F401


def scale(x, name="relu"):
    """x (b, n, d) -> (b, n, d), divided by sqrt(d)."""
    raise NotImplementedError("see katas/99_toy/README.md")
'''


def test_skeleton_docstrings_messages_and_asides_are_offered_and_code_kept():
    """zh review of 15–19, #35: a zh notebook's exercise cell is the skeleton with its
    docstrings, NotImplementedError messages and noqa asides translated, its code as it is."""
    from graders.tools import lesson_code

    found = [piece.english for piece in lesson_code.skeleton_pieces(SKELETON)]
    assert found == ["Kata 99: a toy.\n\nRead README.md in this folder, then run\n    pytest katas/99_toy\n",
                     "(you will want math.sqrt)", "x (b, n, d) -> (b, n, d), divided by sqrt(d).",
                     "see katas/99_toy/README.md"]
    chinese = {found[1]: "（你会用到 math.sqrt）", found[2]: "x (b, n, d) -> (b, n, d)，除以 sqrt(d)。",
               found[3]: "见 katas/99_toy/README.zh-CN.md"}
    translated = lesson_code.translate(SKELETON, lambda text: chinese.get(text, text),
                                       find=lesson_code.skeleton_pieces)
    assert '"""x (b, n, d) -> (b, n, d)，除以 sqrt(d)。"""' in translated
    assert 'NotImplementedError("见 katas/99_toy/README.zh-CN.md")' in translated
    assert "# noqa: F401  （你会用到 math.sqrt）" in translated and 'name="relu"' in translated
    compile(translated, "<skeleton>", "exec")
    every = [text.english for kata in KATAS for text in texts.skeleton_texts(kata)]
    catalogs = texts.catalogs()  # built once: it reads every source file
    assert len(every) > 100 and all(kata.file in catalogs[texts.kata_catalog(kata)][-1].where
                                    for kata in KATAS)  # the last entries of each kata's catalog


def test_a_code_cell_translation_that_breaks_the_code_is_refused():
    from graders.tools import lesson_code

    label, comment, name = lesson_code.pieces(
        'print(f"cache: {x.sum():.2f} GiB")  # the cache\nprint("in_proj_weight", w)')
    assert lesson_code.problems(label, "缓存：{x.sum():.2f} GiB") == []
    assert lesson_code.problems(label, "缓存：{x.mean():.2f} GiB")  # another expression
    assert lesson_code.problems(label, "缓存：{x.sum():.3f} GiB")  # another format
    assert lesson_code.problems(label, '缓存："{x.sum():.2f} GiB')  # the quote ends the literal
    assert lesson_code.problems(comment, "缓存\n第二行")
    assert lesson_code.problems(name, "输入投影权重")  # names code


def test_every_lesson_code_label_is_a_catalog_entry():
    """The zh-CN notebooks' print labels, plot titles and comments come from the catalogs:
    a new English label fails test_every_english_text_has_its_translation until translated."""
    wanted = {text.english for texts_ in texts.catalogs().values() for text in texts_}
    for kata in KATAS:
        for text in texts.lesson_code_texts(kata):
            assert text.english in wanted, (kata.name, text.english)
