"""Verdicts: the few lines a learner reads when a check fails.

Every failure a grader raises is a :class:`GradingFailure`; the pytest plugin prints its
text instead of a traceback. Helpers here describe tensors and inputs briefly, never as a
full dump.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from graders.core import catalogue, i18n
from graders.core.i18n import _, translate
from graders.core.kata import REPO_ROOT, Kata

if TYPE_CHECKING:
    import torch


class GradingFailure(AssertionError):
    """A check failed. ``str(failure)`` is the whole verdict, ready to print. ``pictures``:
    for a matrix that differs, the expected and the learner's (see compare.matrix_pictures),
    which `kata serve` draws as heatmaps side by side."""

    pictures: dict | None = None

    def __init__(self, verdict: str, slug: str | None = None):
        self.slug = slug
        super().__init__(verdict)


class NotImplementedYet(GradingFailure):
    """The learner has not written this part yet (it raises NotImplementedError)."""


def title(text: str):
    """Decorator giving a check (a grader's test function) its learner-facing title, the
    English marked for the catalogs: ``@title(N_("attention without a mask"))``. Every front
    end that lists checks shows it, translated (``CheckResult.label``); the function's name
    stays what ``pytest -k`` selects."""

    def titled(check):
        check.title = text
        return check

    return titled


def start_with(kata: Kata) -> str:
    """"not implemented yet: start with katas/NN/README.md", naming the README in the
    learner's language (README.zh-CN.md in Chinese) where the kata has one."""
    edition = kata.folder / i18n.readme_name(i18n.current())
    readme = (edition if edition.is_file() else kata.readme_path).relative_to(REPO_ROOT)
    return _("not implemented yet: start with {readme}", readme=readme.as_posix())


def mistake_lines(slug: str) -> list[str]:
    """``[slug] explanation`` and ``hint: ...``, from the catalogue in the words of the kata
    being graded, in the learner's language (the slug stays as it is)."""
    from graders.core.markup import strip_markers  # the catalogue's emphasis is for markdown

    mistake = catalogue.mistake(slug)
    return [f"[{slug}] {strip_markers(translate(mistake.explanation))}",
            hint_line(strip_markers(translate(mistake.hint)))]


def hint_line(hint: str) -> str:
    """``hint: ...`` in the learner's language (``hint`` already translated)."""
    return _("hint: {hint}", hint=hint)


def is_hint_line(line: str) -> bool:
    """Whether a verdict line is a mistake's ``hint: ...`` line (in the current language)."""
    return line.startswith(hint_line(""))


def checked_line(check: str, on: str) -> str:
    """A verdict's first line: what was checked, on which input."""
    return _("checked {check} on {on}", check=check, on=on)


def verdict(
    check: str,
    on: str,
    details: list[str],
    slug: str | None = None,
) -> GradingFailure:
    """Build the failure: 'checked <check> on <on>', detail lines, and the mistake if known.

    The slug comes right after the first line so that it is among the first things read.
    """
    lines = [checked_line(check, on)]
    if slug:
        lines += mistake_lines(slug)
    lines += [f"  {line}" for line in details]
    return GradingFailure("\n".join(lines), slug=slug)


def describe_value(value: Any) -> str:
    """One short phrase for anything a learner may return, with a word of advice when the
    type itself is the likely slip (None, a Python list, a numpy array)."""
    text = _describe(value)
    if value is None:
        return _("{value} (did you forget `return`?)", value=text)
    if isinstance(value, list):
        return _("a Python {value} (keep the result a torch tensor)", value=text)
    if _is_numpy(value):
        return _("{value} (keep the result a torch tensor: no .numpy() or numpy calls)", value=text)
    return text


def _is_numpy(value: Any) -> bool:
    return type(value).__module__ == "numpy" and hasattr(value, "shape")


def _is_tensor(value: Any) -> bool:
    """Without importing torch: the ``kata`` command reads this module's hint lines before
    it grades anything (``kata list`` and ``kata hint`` never need torch), and grading imports
    torch its own way (graders.core.fast_start)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def _describe(value: Any, depth: int = 0) -> str:
    if _is_tensor(value):
        return describe_tensor(value)
    if isinstance(value, (tuple, list)):
        kind, count = type(value).__name__, len(value)
        if depth >= 2:  # nested lists (a .tolist() result): the outline says enough
            return _("{kind} of {count}", kind=kind, count=count)
        items = [_describe(v, depth + 1) for v in value[:3]] + (["..."] if len(value) > 3 else [])
        return _("{kind} of {count} ({items})", kind=kind, count=count, items=i18n.listing(items))
    if _is_numpy(value):
        return _("a numpy {kind} {dtype} {shape}", kind=type(value).__name__, dtype=value.dtype,
                 shape=tuple(value.shape))
    if isinstance(value, float):
        # 31248.0 as it is, not 3.125e+04: a whole-number float is a type slip, not a value's.
        return repr(value) if value.is_integer() and abs(value) < 1e16 else f"{value:.4g}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


PREVIEW_VALUES = 4


def describe_tensor(t: torch.Tensor, start: int = 0) -> str:
    """e.g. ``float32 (2, 3, 4) [0.1234, -0.5, 1.25, ...]``: at most 4 values, in flat
    (row-major) order from flat index ``start`` — where two tensors first differ, so that
    side-by-side previews show the difference — with ``...`` for the values left out."""
    shape = tuple(t.shape)
    dtype = str(t.dtype).removeprefix("torch.")
    start = max(0, min(start, t.numel() - PREVIEW_VALUES))
    window = t.detach().flatten()[start:start + PREVIEW_VALUES].to("cpu")
    if window.is_floating_point():
        values = ", ".join(f"{v:.4g}" for v in window.double().tolist())
    else:
        values = ", ".join(str(v) for v in window.tolist())
    before = "..., " if start > 0 else ""
    after = ", ..." if t.numel() > start + PREVIEW_VALUES else ""
    device = "" if t.device.type == "cpu" else f" on {t.device}"
    return f"{dtype} {shape}{device} [{before}{values}{after}]"


def describe_inputs(**named: Any) -> str:
    """``query (2, 5, 8), key (2, 7, 8), mask bool (2, 1, 7)`` for verdict headers."""
    parts = []
    for name, value in named.items():
        if _is_tensor(value):
            dtype = "" if str(value.dtype) == "torch.float32" else " " + str(value.dtype)[6:]
            parts.append(f"{name}{dtype} {tuple(value.shape)}")
        elif value is not None:
            parts.append(f"{name}={value!r}")
    return ", ".join(parts)
