"""Markdown emphasis in the catalogue's and the lessons' texts, taken out where a verdict is
plain text: ``*blocked*`` -> ``blocked``. The engine's verdicts use it (graders.core.report);
the front ends that lay text out show emphasis their own way (graders.frontends.layout).
"""

from __future__ import annotations

import re

# An asterisk touching a Latin letter or digit is arithmetic (2*p*q*r); touching Chinese, it
# is emphasis, as markdown reads it (键**被屏蔽**).
BOLD = re.compile(r"(?<![A-Za-z0-9_*\\])\*\*(?=\S)([^*\n]+?)(?<=\S)\*\*(?![A-Za-z0-9_*])")
ITALIC = re.compile(r"(?<![A-Za-z0-9_*\\])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?![A-Za-z0-9_*])")
UNDERSCORE = re.compile(r"(?<![\w`\\])_(?=[^\s_])([^_\n]+?)(?<=[^\s_])_(?!\w)")
CODE = re.compile(r"`([^`\n]+)`")


def emphasis(plain: str, pattern: re.Pattern) -> list[re.Match]:
    """``pattern``'s matches in ``plain`` whose markers are not inside backticked code."""
    quoted = [m.span() for m in CODE.finditer(plain)]
    return [match for match in pattern.finditer(plain)
            if not any(a <= marker < b for a, b in quoted
                       for marker in (match.start(), match.end() - 1))]


def strip_markers(text: str) -> str:
    """``text`` without markdown emphasis: ``*blocked*`` -> ``blocked``, ``**x**`` -> ``x``,
    ``_x_`` -> ``x``. Formulas (``2*p*q*r``, ``base ** 2*i``) and identifiers (``d_model``,
    ``__init__``) are left alone, and so is code in backticks."""
    for pattern in (BOLD, ITALIC, UNDERSCORE):
        for match in reversed(emphasis(text, pattern)):
            text = text[:match.start()] + match.group(1) + text[match.end():]
    return text
