"""The one ordered list of katas, and their tracks.

Graders, self-tests, notebooks and the CLI all read this module; nothing else hard-codes a
kata's folder, file or mistakes. Each kata declares itself beside its grader, in
``graders/<module>/meta.py`` (its :class:`Kata` entry with the hint ladder, its own
mistakes, its quiz); this list only says which katas there are, and in which order. A new
kata is one more line of :data:`KATA_MODULES`.
"""

from __future__ import annotations

import functools
import importlib
import os
import types
from pathlib import Path

from graders.core.kata import (  # noqa: F401 (the names every reader of the registry uses)
    ATTENTION_BUILTINS, DECODER_BUILTINS, DIFFICULTIES, ENCODER_BUILTINS, HINT_LEVELS, KATAS_DIR,
    NOTEBOOKS_DIR, PRISTINE_SKELETON, REPO_ROOT, SOLUTIONS_DIR, TRANSFORMER_BUILTINS, Kata)

# The tracks, in order: `kata list`, the README and the notebooks group katas by them.
TRACKS = {
    "foundations": "Foundations",
    "models": "Full models and modern inference",
    "llm": "Decoder-only LLMs",
    "inference": "LLM inference systems",
    "training": "Training and aligning LLMs",
}

# Every kata, in order: the package graders/<module>/ that holds its grader and meta.
KATA_MODULES = (
    "attention",            # 01
    "heads",                # 02
    "mha",                  # 03
    "masks",                # 04
    "positional_encoding",  # 05
    "encoder_layer",        # 06
    "flops",                # 07
    "decoder_layer",        # 08
    "transformer",          # 09
    "vit",                  # 10
    "kv_cache",             # 11
    "rope",                 # 12
    "gqa",                  # 13
    "flash_attention",      # 14
    "llama_block",          # 15
    "sampling",             # 16
    "beam_search",          # 17
    "sliding_window",       # 18
    "attention_backward",   # 19
    "moe",                  # 20
    "speculative",          # 21
    "paged_kv_cache",       # 22
    "mla",                  # 23
    "kv_quant",             # 24
    "batching",             # 25
    "cross_entropy",        # 26
    "adamw",                # 27
    "lora",                 # 28
    "dpo",                  # 29
    "grpo",                 # 30
    "tensor_parallel",      # 31
)

METAS: tuple[types.ModuleType, ...] = tuple(
    importlib.import_module(f"graders.{module}.meta") for module in KATA_MODULES)
KATAS: tuple[Kata, ...] = tuple(meta.KATA for meta in METAS)


def meta(kata: Kata) -> types.ModuleType:
    """The ``graders/<module>/meta.py`` module of ``kata``: its KATA, MISTAKES and QUESTIONS."""
    return importlib.import_module(kata.meta_module)


def questions(key: str) -> tuple:
    """Kata ``key``'s quiz: the ``QUESTIONS`` of its meta (graders.core.quizzes.Question)."""
    return meta(get(key)).QUESTIONS


def get(key: str | Path, *, paths: bool = True) -> Kata:
    """Find a kata by id ("03"), number ("3"), folder name ("03_mha"), short name ("mha"),
    or (unless ``paths`` is false: `kata serve`'s keys) a path inside its folder. Raises
    KeyError naming the katas there are. A key with a NUL is never a path."""
    text = str(key).strip()
    for kata in KATAS:
        names = (kata.id, kata.name, kata.name[3:], kata.file.removesuffix(".py"))
        if text in names or (text.isdigit() and int(text) == int(kata.id)):
            return kata
    partial = partial_matches(text)
    if len(partial) == 1:  # "flash", "kv": one kata's name holds it
        return partial[0]
    if paths and "\0" not in text:
        kata = _kata_holding(text, os.getcwd())
        if kata is not None:
            return kata
    known = ", ".join(f"{kata.name} ({int(kata.id)}, {kata.name[3:]})" for kata in KATAS)
    raise KeyError(f"no kata called {text!r}; the katas are: {known}")


@functools.lru_cache(maxsize=1024)
def _kata_holding(path: str, cwd: str) -> Kata | None:
    """The kata whose folder name is a part of ``path`` (resolved from ``cwd``). Cached: the
    grading plugin asks for every check's file several times."""
    parts = (Path(cwd) / path).resolve().parts
    return next((kata for kata in KATAS if kata.name in parts), None)


def partial_matches(key: str) -> list[Kata]:
    """The katas whose short name contains ``key`` (a word such as "flash" or "kv", any
    case, two characters at least); none for a key that could be a path."""
    text = str(key).strip().lower()
    if len(text) < 2 or "/" in text or "\\" in text or text.isdigit():
        return []
    return [kata for kata in KATAS if text in kata.name[3:].lower()]

