"""Every English text a learner reads, grouped into the catalogs translators work on.

    python -m graders.tools.texts update     # rewrite graders/locales/*/LC_MESSAGES/*.po
    python -m graders.tools.texts status     # untranslated entries per language and catalog
    python -m graders.tools.texts check      # translations that change code, numbers, ...
    python -m graders.tools.texts export --lang zh-CN --catalog kata_03_mha > todo.json
    python -m graders.tools.texts import --lang zh-CN todo.json   # after translating it
    python -m graders.tools.texts reflow     # join hard-wrapped Chinese sentences; rebuild notebooks

The catalogs (see :mod:`graders.core.i18n` for the lookup):

- ``messages``: the literal messages of the core and the front ends, wherever they wrap
  them in ``_()`` (or mark a constant with ``N_()``)
  (verdict framing, the scoreboard, the ``kata`` command, the notebooks' cells), found by
  Babel's extractor;
- ``mistakes``: the catalogue's explanation and hint of every slug;
- ``kata_NN_name``: one kata's title, hint ladder, quiz (questions, choices, reasoning),
  lesson prose (each markdown cell of ``notebooks/lessons/NN_name.py``, and the print
  labels, plot titles and comments of its code cells: graders.tools.lesson_code) and the
  literal messages of its own package (``graders/<module>/``: check titles, what each check
  compares, on which input), then its skeleton's docstrings and NotImplementedError messages
  (a notebook's exercise cell), so that a kata's texts live with the kata.

``update`` keeps every translation whose English text is unchanged, adds the new English
texts untranslated, and drops the texts that are gone, so a catalog always lists exactly
what the repository shows. The self-tests (tests/test_i18n.py) then insist on a complete,
faithful translation.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from graders.core import i18n, quizzes, registry
from graders.core.catalogue import MISTAKES, WORDINGS
from graders.core.registry import KATAS, NOTEBOOKS_DIR, PRISTINE_SKELETON, REPO_ROOT, Kata
from graders.tools import lesson_code

# Where ``_()`` messages live: the grading code, the front ends and the notebook builder.
SOURCE_FILES = ("graders/**/*.py",)
MESSAGES, MISTAKES_CATALOG = "messages", "mistakes"


@dataclass(frozen=True)
class Text:
    english: str
    where: str  # for the translator: where the learner meets it
    piece: lesson_code.Piece | None = None  # a lesson code cell's string or comment


def kata_catalog(kata: Kata) -> str:
    return f"kata_{kata.name}"


def source_messages() -> list[Text]:
    """``_("...")`` literals in the code, in file order."""
    import contextlib
    import io

    from babel.messages.extract import extract_from_file

    texts: list[Text] = []
    for pattern in SOURCE_FILES:
        for path in sorted(REPO_ROOT.glob(pattern)):
            if path.name == PRISTINE_SKELETON:  # its texts: skeleton_texts, in the kata's order
                continue
            # babel warns of every f-string inside a _() call; ours are the values of named
            # placeholders (_("{a} with {b}", b=f"...")), never a message, so its warnings
            # (a hundred per run) are noise and are dropped; anything else it says is kept.
            said = io.StringIO()
            with contextlib.redirect_stderr(said):
                found = list(extract_from_file("python", str(path),
                                               keywords={"_": None, "N_": None}))
            for line in said.getvalue().splitlines():
                if "warning: Skipping f-string" not in line:
                    print(line, file=sys.stderr)
            for line, message, _comments, _context in found:
                if isinstance(message, str):
                    texts.append(Text(message, f"{path.relative_to(REPO_ROOT).as_posix()}:{line}"))
    return texts


def slugs_declared_twice() -> list[str]:
    """"slug: declared by A and B" for every mistake declared by more than one place (the
    catalogue's SHARED, a kata's MISTAKES). The catalog of mistakes keeps one text per slug,
    so a second declaration silently replaces the first one's words and blanks their
    translation: `texts update` refuses to run while one exists."""
    from graders.core.catalogue import SHARED
    from graders.core.registry import METAS

    declared = collections.defaultdict(list)
    for mistake in SHARED:
        declared[mistake.slug].append("graders/core/catalogue.py (SHARED)")
    for meta in METAS:
        for mistake in meta.MISTAKES:
            declared[mistake.slug].append(f"kata {meta.KATA.name}")
    return [f"{slug}: declared by {' and '.join(where)}" for slug, where in declared.items()
            if len(where) > 1]


def mistake_texts() -> list[Text]:
    """Every mistake's explanation and hint, then the katas' own wordings of shared ones."""
    entries = [(f"[{slug}]", mistake) for slug, mistake in MISTAKES.items()]
    entries += [(f"[{slug}] in kata {kata_id}", mistake)
                for (kata_id, slug), mistake in WORDINGS.items()]
    return [Text(text, f"{where} {part}") for where, mistake in entries
            for part, text in (("explanation", mistake.explanation), ("hint", mistake.hint))]


def _lesson_cells(kata: Kata, cell_type: str) -> list[str]:
    import jupytext  # contributors' dependency: only catalogs and builds read lessons

    path = NOTEBOOKS_DIR / "lessons" / f"{kata.name}.py"
    if not path.exists():
        return []
    lesson = jupytext.reads(path.read_text(), fmt="py:percent")
    return [cell.source.strip() for cell in lesson.cells
            if cell.cell_type == cell_type and cell.source.strip()]


def lesson_prose(kata: Kata) -> list[str]:
    """The lesson's markdown cells, as the notebook build reads them."""
    return _lesson_cells(kata, "markdown")


def lesson_code_texts(kata: Kata) -> list[Text]:
    """The print labels, plot titles and comments of the lesson's code cells."""
    return [Text(piece.english, f"kata {kata.id}: lesson, code cell {index}, "
                 + ("comment" if piece.kind == "comment" else
                    f"{piece.prefix}...{piece.prefix[-1]} literal (keep escapes and every {{field}})"),
                 piece)
            for index, cell in enumerate(_lesson_cells(kata, "code"), start=1)
            for piece in lesson_code.pieces(cell)]


def skeleton_texts(kata: Kata) -> list[Text]:
    """The skeleton's docstrings and NotImplementedError messages, as a notebook's exercise
    cell shows them (the ``katas/`` file itself stays English)."""
    source = kata.pristine_skeleton_path.read_text()
    return [Text(piece.english, f"kata {kata.id}: exercise cell (the skeleton {kata.file}), "
                 + ("comment" if piece.kind == "comment" else
                    f"{piece.prefix}...{piece.prefix.lstrip('rRuU')} literal: translate the "
                    "prose, keep code, names, shapes and line breaks"), piece)
            for piece in lesson_code.skeleton_pieces(source)]


def kata_folder(kata: Kata) -> str:
    """``graders/attention/``: the package of ``kata``'s grader and meta, as ``Text.where``
    names the files in it."""
    return f"graders/{kata.module}/"


def kata_texts(kata: Kata) -> list[Text]:
    texts = [Text(kata.title, f"kata {kata.id}: title")]
    texts += [Text(hint, f"kata {kata.id}: hint {level}")
              for level, hint in zip(("1 (nudge)", "2 (the key idea)", "3 (near-code: translate "
                                      "comments and prose only)"), kata.hints)]
    for number, question in enumerate(registry.questions(kata.id), start=1):
        texts.append(Text(question.prompt, f"kata {kata.id}: quiz question {number}"))
        texts += [Text(choice, f"kata {kata.id}: quiz question {number}, choice {letter}")
                  for letter, choice in zip(quizzes.letters(len(question.choices)), question.choices)]
        texts.append(Text(question.reasoning, f"kata {kata.id}: quiz question {number}, reasoning"))
    texts += [Text(cell, f"kata {kata.id}: lesson, markdown cell {index}")
              for index, cell in enumerate(lesson_prose(kata), start=1)]
    return texts + lesson_code_texts(kata)


def catalogs() -> dict[str, list[Text]]:
    """Catalog name -> its English texts, each once, in the order a learner meets them."""
    by_folder = {kata_folder(kata): kata_catalog(kata) for kata in KATAS}
    grader_messages: dict[str, list[Text]] = collections.defaultdict(list)
    core_messages = []
    for text in source_messages():  # a kata's own package feeds that kata's catalog
        owner = by_folder.get(text.where.rsplit("/", 1)[0] + "/")
        (grader_messages[owner] if owner else core_messages).append(text)
    found = {MESSAGES: core_messages, MISTAKES_CATALOG: mistake_texts()}
    found |= {kata_catalog(kata): kata_texts(kata) + grader_messages[kata_catalog(kata)]
              + skeleton_texts(kata) for kata in KATAS}
    seen: set[str] = set()
    unique: dict[str, list[Text]] = {}
    for name, texts in found.items():  # a text shared by two catalogs is translated once
        unique[name] = []
        for text in texts:
            if text.english and text.english not in seen:
                seen.add(text.english)
                unique[name].append(text)
    return unique


def catalog_path(language: str, name: str) -> Path:
    return i18n.catalog_dir(language) / f"{name}.po"


def read(path: Path):
    from babel.messages.pofile import read_po

    with path.open("rb") as handle:
        return read_po(handle)


def update(language: str) -> list[Path]:
    """Rewrite ``language``'s catalogs from the current English texts; returns those changed."""
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import write_po

    changed = []
    wanted = catalogs()
    folder = i18n.catalog_dir(language)
    folder.mkdir(parents=True, exist_ok=True)
    # Every translation so far, whichever catalog held it: a text that moves to another
    # catalog keeps its translation.
    old = {m.id: m for path in sorted(folder.glob("*.po")) for m in read(path) if m.id}
    for stale in sorted(folder.glob("*.po")):
        if stale.stem not in wanted:
            stale.unlink()
            changed.append(stale)
    for name, texts in wanted.items():
        path = catalog_path(language, name)
        catalog = Catalog(locale=language.replace("-", "_"), project="attention-katas",
                          domain=name, fuzzy=False)
        for text in texts:
            previous = old.get(text.english)
            catalog.add(text.english, previous.string if previous else "",
                        auto_comments=[text.where],
                        flags=previous.flags if previous else ())
        before = path.read_bytes() if path.exists() else b""
        with path.open("wb") as handle:
            write_po(handle, catalog, width=0, omit_header=True, sort_output=False)
        if path.read_bytes() != before:
            changed.append(path)
    return changed


def untranslated(language: str) -> dict[str, list[str]]:
    """Catalog name -> English texts that have no (non-fuzzy) translation in ``language``."""
    missing: dict[str, list[str]] = {}
    for name, texts in catalogs().items():
        path = catalog_path(language, name)
        have = {m.id: m for m in read(path) if m.id} if path.exists() else {}
        gaps = [t.english for t in texts
                if t.english not in have or not have[t.english].string or have[t.english].fuzzy]
        if gaps:
            missing[name] = gaps
    return missing


# ----------------------------------------------------------------------- faithfulness checks

_FENCE = re.compile(r"^[ \t]*```.*?^[ \t]*```", re.S | re.M)  # also indented, in a list
_INLINE_CODE = re.compile(r"`[^`\n]+`")
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$")  # display math first, then inline
_MATH_TEXT = re.compile(r"\\text\{[^{}]*\}")
_PLACEHOLDER = re.compile(r"(?<!\{)\{[A-Za-z_][A-Za-z0-9_]*(?:[.:!][^{}]*)?\}(?!\})")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_NUMBER = re.compile(r"\d+")
_SLUG = re.compile(r"\[[a-z0-9]+(?:-[a-z0-9]+)+\]")


def _code_lines(text: str) -> list[str]:
    """A near-code hint's code, comments dropped (only comments and prose are translated)."""
    lines = (line.split("#", 1)[0].rstrip() for line in text.splitlines())
    return [line for line in lines if line.strip()]


def fingerprint(text: str, near_code: bool = False) -> dict[str, object]:
    """What a translation must keep exactly: code blocks, inline code, math, placeholders,
    slugs and every number written with digits."""
    blocks = _FENCE.findall(text)
    # Markdown reads a line break in prose as a space: `code` may be wrapped across lines.
    prose = re.sub(r"\s+", " ", _FENCE.sub("", text))
    # Math keeps its formula; the words of a \text{...} label in it are translated.
    spans = _INLINE_CODE.findall(prose) + [_MATH_TEXT.sub(r"\\text{}", math)
                                           for math in _MATH.findall(prose)]
    prose = _MATH.sub("", _INLINE_CODE.sub("", prose))
    prose = _LINK_TARGET.sub("]", prose)
    parts: dict[str, object] = {
        "code blocks": blocks,
        "inline code and math": collections.Counter(spans),
        "placeholders": collections.Counter(_PLACEHOLDER.findall(text)),
        "slugs": collections.Counter(_SLUG.findall(prose)),
        "numbers": collections.Counter(_NUMBER.findall(prose)),
    }
    if near_code:
        parts = {"code": _code_lines(text),
                 "placeholders": parts["placeholders"]}
    return parts


_COMMENT = re.compile(r"(^|\s)#.*$")
_CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")


def _block_line_differs(english: str, translated: str) -> bool:
    """A fenced block's line keeps its code; its comments, and the words of a line written
    in the translation's language (a diagram's label, a sample of translated output), are
    translated, keeping their numbers."""
    english, translated = (_COMMENT.sub("", line).rstrip() for line in (english, translated))
    if _CJK.search(translated):
        return _NUMBER.findall(english) != _NUMBER.findall(translated)
    return english != translated


def _blocks_differ(english: list[str], translated: list[str]) -> bool:
    if len(english) != len(translated):
        return True
    for block, twin in zip(english, translated):
        lines, twin_lines = block.splitlines(), twin.splitlines()
        if len(lines) != len(twin_lines) or any(map(_block_line_differs, lines, twin_lines)):
            return True
    return False


def _translated_samples(lost: collections.Counter, added: collections.Counter):
    """Pair an English inline sample of output (`01_attention  core: 5/5 passed`) with its
    translation: a span in the translation's language with the same numbers."""
    lost, added = collections.Counter(lost), collections.Counter(added)
    for span in [s for s in added.elements() if _CJK.search(s)]:
        twin = next((e for e in lost.elements() if _NUMBER.findall(e) == _NUMBER.findall(span)), None)
        if twin is not None:
            lost[twin] -= 1
            added[span] -= 1
    return +lost, +added


def differences(english: str, translated: str, near_code: bool = False) -> list[str]:
    """How ``translated`` departs from ``english`` in what must stay the same."""
    want, got = fingerprint(english, near_code), fingerprint(translated, near_code)
    found = []
    for part in want:
        if part == "code blocks":
            if _blocks_differ(want[part], got[part]):
                found.append("code blocks differ (only comments, and lines in the translation's "
                             "language with the same numbers, may change)")
        elif want[part] != got[part]:
            if isinstance(want[part], collections.Counter):
                lost, added = want[part] - got[part], got[part] - want[part]
                if part == "inline code and math":
                    lost, added = _translated_samples(lost, added)
                    if not (lost or added):
                        continue
                found.append(f"{part}: missing {sorted(lost)} / extra {sorted(added)}")
            else:
                found.append(f"{part} differ")
    return found


def problems(language: str) -> list[str]:
    """Every translation in ``language``'s catalogs that changes what must stay the same."""
    found = []
    for name, texts in catalogs().items():
        path = catalog_path(language, name)
        if not path.exists():
            continue
        translated = {m.id: m.string for m in read(path) if m.id and m.string}
        for text in texts:
            if text.english in translated:
                near_code = "near-code" in text.where
                for problem in differences(text.english, translated[text.english], near_code):
                    found.append(f"{name} ({text.where}): {problem}")
    # A lesson code cell's piece must keep the cell valid, whichever catalog translates it.
    every = {m.id: m.string for name in catalogs() if catalog_path(language, name).exists()
             for m in read(catalog_path(language, name)) if m.id and m.string}
    for kata in KATAS:
        for text in lesson_code_texts(kata) + skeleton_texts(kata):
            if text.english in every:
                found += [f"{kata_catalog(kata)} ({text.where}): {problem}"
                          for problem in lesson_code.problems(text.piece, every[text.english])]
    return found


def export(language: str, name: str) -> list[dict[str, str]]:
    """A catalog's entries as JSON-friendly records: where, en, and the translation so far."""
    path = catalog_path(language, name)
    have = {m.id: m.string for m in read(path) if m.id} if path.exists() else {}
    return [{"where": t.where, "en": t.english, language: have.get(t.english, "")}
            for t in catalogs()[name]]


def import_(language: str, records: list[dict[str, str]]) -> int:
    """Write translations from :func:`export`-shaped records into the catalogs; returns how
    many texts were set. Records whose English is no longer in a catalog are ignored."""
    from babel.messages.pofile import write_po

    by_english = {r["en"]: r.get(language, "") for r in records if r.get(language)}
    count = 0
    for name in catalogs():
        path = catalog_path(language, name)
        if not path.exists():
            continue
        catalog = read(path)
        changed = False
        for message in catalog:
            if message.id in by_english and message.string != by_english[message.id]:
                message.string = by_english[message.id]
                message.flags.discard("fuzzy")
                changed = True
                count += 1
        if changed:
            with path.open("wb") as handle:
                write_po(handle, catalog, width=0, omit_header=True, sort_output=False)
    return count


# --------------------------------------------------------------------------- hard wraps
# A line break inside a Chinese paragraph renders as a stray space in most browsers
# (GitHub, JupyterLab: "多头注 意力"). Chinese markdown keeps a paragraph on one line; a
# break may follow a sentence's end (。！？), never split a sentence.

_ZH = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f\u201c\u201d\u2018\u2019]")
_ZH_PUNCTUATION = re.compile(r"[\u3000-\u303f\uff00-\uffef\u201c\u201d\u2018\u2019]")
_SENTENCE_END = re.compile(r"[。！？][）」』”’*_]*$")
_BLOCK_START = re.compile(r"^\s*(#|\||```|~~~|\$\$|<|>|[-*+]\s|\d+[.)]\s|$)")
_FENCE_LINE = re.compile(r"^\s*(```|~~~|\$\$\s*$)")


def _breaks_a_sentence(before: str, after: str) -> bool:
    """Whether the break between two lines of one paragraph splits a Chinese sentence."""
    before, after = before.rstrip(), after.lstrip()
    if not before or not after or _SENTENCE_END.search(before):
        return False
    return bool(_ZH.match(before[-1]) or _ZH.match(after[0]))


def _paragraph_lines(markdown: str):
    """``(line, continues)`` for each line of ``markdown``: ``continues`` when the line goes
    on the paragraph (or list item) of the line before it - not a new block, and neither
    line inside a fenced code block or a math block, a table, a heading, nor after a line
    that ends with an intended break (two spaces, a backslash)."""
    fence, previous_is_text = None, False
    for line in markdown.split("\n"):
        opens = _FENCE_LINE.match(line)
        if fence is not None:
            if opens and opens.group(1).strip() == fence:
                fence = None
            yield line, False
            previous_is_text = False
            continue
        if opens:
            fence = opens.group(1).strip()
            yield line, False
            previous_is_text = False
            continue
        yield line, previous_is_text and not _BLOCK_START.match(line)
        previous_is_text = (bool(line.strip()) and not re.match(r"^\s*(#|\||<|\$\$)", line)
                            and not line.endswith(("  ", "\\")))


def hard_wraps(markdown: str) -> list[str]:
    """Each place where ``markdown`` breaks a line inside a Chinese sentence, as
    ``'...end of line⏎start of next...'``."""
    found, before = [], ""
    for line, continues in _paragraph_lines(markdown):
        if continues and _breaks_a_sentence(before, line):
            found.append(f"{before.rstrip()[-12:]}⏎{line.lstrip()[:12]}")
        before = line
    return found


def reflow(markdown: str) -> str:
    """``markdown`` with every line break inside a Chinese sentence joined: nothing between
    two Chinese characters or next to Chinese punctuation, a space between Chinese and
    Latin text (as the rest of the text writes it). Code, tables, headings and list
    structure are left as they are."""
    out: list[str] = []
    for line, continues in _paragraph_lines(markdown):
        if out and continues and _breaks_a_sentence(out[-1], line):
            before, after = out[-1].rstrip(), line.lstrip()
            # Emphasis markers are not text: "还会" + "*点出*" joins tight, like the words.
            last, first = before.rstrip("*_")[-1:] or " ", after.lstrip("*_")[:1] or " "
            tight = (_ZH_PUNCTUATION.match(last) or _ZH_PUNCTUATION.match(first)
                     or (_ZH.match(last) and _ZH.match(first)))
            out[-1] = before + ("" if tight else " ") + after
        else:
            out.append(line)
    return "\n".join(out)


def translated_readmes() -> list[Path]:
    """Every README in a language other than English: the root's and each kata's."""
    return sorted(p for folder in (REPO_ROOT, *(kata.folder for kata in KATAS))
                  for p in folder.glob("README.*.md"))


def is_markdown(message) -> bool:
    """Whether a catalog entry is markdown a notebook shows (a lesson's prose cell)."""
    return any("lesson, markdown cell" in comment for comment in message.auto_comments)


def reflow_all() -> list[Path]:
    """Join the hard-wrapped Chinese sentences of the translated READMEs and of the
    catalogs' lesson prose; returns the files changed."""
    from babel.messages.pofile import write_po

    changed = []
    for path in translated_readmes():
        text = path.read_text(encoding="utf-8")
        if reflow(text) != text:
            path.write_text(reflow(text), encoding="utf-8")
            changed.append(path)
    for language in i18n.languages()[1:]:
        for path in sorted(i18n.catalog_dir(language).glob("*.po")):
            catalog, edited = read(path), False
            for message in catalog:
                if message.id and message.string and is_markdown(message):
                    fixed = reflow(message.string)
                    edited |= fixed != message.string
                    message.string = fixed
            if edited:
                with path.open("wb") as handle:
                    write_po(handle, catalog, width=0, omit_header=True, sort_output=False)
                changed.append(path)
    return changed


def rebuild_notebooks() -> None:
    """``python notebooks/build.py``: the notebooks show the READMEs and the lessons' prose."""
    from graders.tools import notebooks

    notebooks.main([])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("update", "status", "check", "export", "import",
                                            "reflow"))
    parser.add_argument("file", nargs="?", help="import: the JSON file to read")
    parser.add_argument("--lang", action="append", help="only this language (default: all)")
    parser.add_argument("--catalog", help="export: the catalog, e.g. kata_03_mha or mistakes")
    args = parser.parse_intermixed_args(argv)  # --lang before or after the file
    languages = args.lang or [tag for tag in i18n.languages() if tag != i18n.ENGLISH]
    if args.command == "export":
        json.dump(export(languages[0], args.catalog), sys.stdout, ensure_ascii=False, indent=1)
        print()
        return 0
    if args.command == "import":
        records = json.loads(Path(args.file).read_text())
        print(f"set {import_(languages[0], records)} translation(s)")
        return 0
    if args.command == "reflow":  # Chinese paragraphs on one line, then the notebooks rebuilt
        for path in reflow_all():
            print(f"reflowed {path.relative_to(REPO_ROOT).as_posix()}")
        rebuild_notebooks()
        return 0
    if args.command == "check":
        found = [p for language in languages for p in problems(language)]
        print("\n".join(found) or "no problems")
        return 1 if found else 0
    twice = slugs_declared_twice() if args.command == "update" else []
    if twice:
        print("texts update refused: a slug declared twice would replace the first one's words "
              "and blank their translations; use the shared entry (or the meta's WORDINGS):\n  "
              + "\n  ".join(twice), file=sys.stderr)
        return 1
    if args.command == "update":  # a skeleton written since `kata dev new`: its texts first
        from graders.tools import scaffold

        for kata in KATAS:
            derived = scaffold.sync_skeleton(REPO_ROOT, kata.name, kata.file)
            if derived:
                print(derived)
    for language in languages:
        if args.command == "update":
            for path in update(language):
                print(f"updated {path.relative_to(REPO_ROOT).as_posix()}")
        gaps = untranslated(language)
        total = sum(len(texts) for texts in catalogs().values())
        left = sum(len(g) for g in gaps.values())
        print(f"{language}: {total - left}/{total} texts translated"
              + "".join(f"\n  {name}: {len(g)} to translate" for name, g in gaps.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
