"""Languages: which one the learner reads, and the one lookup for every text they read.

English is the source language: texts are written in English where they belong — literal
messages in the code wrapped in ``_()``, and the data the code already holds (the
catalogue's explanations and hints, the registry's titles and hint ladders, the quizzes,
the lessons' prose). Every other language is a set of gettext catalogs,
``graders/locales/<ll_CC>/LC_MESSAGES/*.po``: msgid the English text, msgstr its
translation, read with Babel. Why gettext rather than our own data files: a ``.po`` file
is the format translators' tools (Poedit, Weblate) and Babel already speak; an English
text that changes shows up as a missing translation instead of silently drifting; and a
third language is one more folder of ``.po`` files, no code. Kata READMEs are whole
documents and are translated as files (``README.zh-CN.md`` beside ``README.md``).

Which language: ``KATA_LANG`` (``en``, ``zh-CN``; ``kata --lang`` sets it); otherwise the
first of ``LC_ALL``, ``LC_MESSAGES``, ``LANG`` that names a language we have (a ``zh``
locale selects ``zh-CN``); otherwise English. The same setting applies to ``pytest
katas/NN``, ``kata`` and the notebooks (whose zh-CN editions choose Chinese themselves).

``python -m graders.tools.texts update`` rewrites the catalogs from the current English
texts (keeping every translation whose English is unchanged); ``tests/test_i18n.py``
fails while any English text lacks its translation, or a translation keeps a text that is
gone or differs from its English in placeholders, inline code or numbers.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from pathlib import Path
from typing import Iterator

ENGLISH = "en"
LANGUAGE_ENV = "KATA_LANG"
LOCALES_DIR = Path(__file__).resolve().parent.parent / "locales"
LOCALE_ENVS = ("LC_ALL", "LC_MESSAGES", "LANG")
# A language chosen for one thread alone (speaking_here): `kata serve` answers requests in
# several languages at once, each in its own thread, so it may not set KATA_LANG.
_THREAD = threading.local()


def tag_of(directory: str) -> str:
    """``zh_CN`` (gettext's folder name) -> ``zh-CN`` (the tag learners type)."""
    return directory.replace("_", "-")


def languages() -> tuple[str, ...]:
    """English, then every language with catalogs, e.g. ``("en", "zh-CN")``."""
    return _languages_in(LOCALES_DIR)


@functools.cache
def _languages_in(locales: Path) -> tuple[str, ...]:
    # Read once per folder: every translated text asks, tens of thousands of times a run.
    found = sorted(tag_of(p.name) for p in locales.iterdir()
                   if (p / "LC_MESSAGES").is_dir()) if locales.is_dir() else []
    return (ENGLISH, *found)


def resolve(name: str | None) -> str | None:
    """The language we have for a tag or locale name (``zh-CN``, ``zh_CN.UTF-8``, ``zh``,
    ``en_US``), or None. A bare language picks the first of its regions we have."""
    if not name:
        return None
    base = name.split(".")[0].split("@")[0].replace("_", "-").strip()
    if not base or base in ("C", "POSIX"):
        return None
    have = languages()
    for tag in have:
        if tag.lower() == base.lower():
            return tag
    language = base.split("-")[0].lower()
    return next((tag for tag in have if tag.split("-")[0].lower() == language), None)


def current() -> str:
    """The language the learner reads now (see the module docstring)."""
    here = getattr(_THREAD, "language", None)
    if here:
        return here
    chosen = os.environ.get(LANGUAGE_ENV)
    if chosen:
        return resolve(chosen) or ENGLISH
    for env in LOCALE_ENVS:
        value = os.environ.get(env)
        if value:  # the first locale variable that is set decides, as in gettext
            return resolve(value) or ENGLISH
    return ENGLISH


def use(language: str) -> str:
    """Choose the language for this process (and the grading it starts); returns its tag.
    Raises ValueError naming the languages there are."""
    tag = resolve(language)
    if tag is None:
        raise ValueError(f"no language {language!r}; available: {', '.join(languages())}")
    os.environ[LANGUAGE_ENV] = tag
    return tag


@contextlib.contextmanager
def speaking(language: str) -> Iterator[str]:
    """Within the block, :func:`_` answers in ``language`` (e.g. to build a zh-CN notebook
    from an English session); the choice before it is restored after."""
    before = os.environ.get(LANGUAGE_ENV)
    tag = use(language)
    try:
        yield tag
    finally:
        if before is None:
            os.environ.pop(LANGUAGE_ENV, None)
        else:
            os.environ[LANGUAGE_ENV] = before


@contextlib.contextmanager
def speaking_here(language: str) -> Iterator[str]:
    """Like :func:`speaking`, for this thread alone (KATA_LANG is left as it is)."""
    tag = resolve(language)
    if tag is None:
        raise ValueError(f"no language {language!r}; available: {', '.join(languages())}")
    before = getattr(_THREAD, "language", None)
    _THREAD.language = tag
    try:
        yield tag
    finally:
        _THREAD.language = before


def readme_name(language: str) -> str:
    """``README.md`` in English, ``README.zh-CN.md`` in Chinese: a kata's problem statement."""
    return "README.md" if language == ENGLISH else f"README.{language}.md"


def catalog_dir(language: str) -> Path:
    return LOCALES_DIR / language.replace("-", "_") / "LC_MESSAGES"


@functools.lru_cache(maxsize=None)
def translations(language: str) -> dict[str, str]:
    """msgid -> msgstr over every catalog of ``language`` (translated, non-fuzzy entries)."""
    if language == ENGLISH:
        return {}
    from babel.messages.pofile import read_po  # only when a translation is wanted

    table: dict[str, str] = {}
    for path in sorted(catalog_dir(language).glob("*.po")):
        with path.open("rb") as handle:
            catalog = read_po(handle)
        for message in catalog:
            if message.id and message.string and not message.fuzzy:
                table[message.id] = message.string
    return table


def translate(text: str, language: str | None = None) -> str:
    """``text`` (English) in ``language`` (default: the current one); English when no
    translation exists."""
    if not text:
        return text
    language = language or current()
    if language == ENGLISH:
        return text
    return translations(language).get(text, text)


def _(text: str, /, **fields: object) -> str:
    """The learner-facing text in the current language, its ``{placeholders}`` filled.

    Write the English with named placeholders — ``_("{passed} of {total} passed",
    passed=p, total=t)`` — never an f-string, so that the message is one catalog entry.
    """
    translated = translate(text)
    return translated.format(**fields) if fields else translated


def N_(text: str, /) -> str:
    """Marks an English text for the catalogs where it is defined (a constant), without
    translating it there: translate it where it is shown, with ``_(CONSTANT)``."""
    return text


def listing(items, last: str | None = None) -> str:
    """Names listed as the language writes them: ``a, b, c`` in English, ``a、b、c`` in
    Chinese (whose ``，`` separates clauses, not names). With ``last`` (a message with the
    fields ``{items}`` and ``{last}``), the last name joins the list through it instead
    (e.g. ``"{items}, {last}"``, Chinese ``"{items} 或 {last}"``: "A、B、C 或 D")."""
    items = [str(item) for item in items]
    if not items:
        return ""
    joined = items[0]
    for index, item in enumerate(items[1:], start=2):
        # Translators: one more name of a list ("a, b" -> "a、b"); the last one may differ.
        message = last if last is not None and index == len(items) else N_("{items}, {item}")
        joined = translate(message).format(items=joined, item=item, last=item)
    return joined


_FULL_WIDTH_END = tuple("。！？；：）」』")


def sentences(*parts: str) -> str:
    """Sentences (each already translated) run on as the language writes them: a space
    after an English full stop, none after a Chinese one (``。``), so two catalog strings
    joined read ``今天没有到期要复习的练习。下一次：……`` (zh review 2026-12-01, L11).
    Empty parts are left out."""
    joined = ""
    for part in (p for p in parts if p):
        joined += part if not joined or joined.endswith(_FULL_WIDTH_END) else " " + part
    return joined
