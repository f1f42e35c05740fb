"""Grading from a kata's notebook: ``check`` for the code, ``quiz`` for the follow-up questions.

In ``notebooks/03_mha.ipynb`` the learner fills in the skeleton cell (plain Python, so its
names live in the notebook), then the grading cell runs::

    result = check("03_mha", MultiheadAttention)

which grades those objects with the same checks as ``pytest katas/03_mha``, in this process
(``graders.core.session``), and prints the compact table: check, tier, result, mistake, hint,
then the first failure's verdict. The learner's file in ``katas/`` is never read or written.
"""

from __future__ import annotations

import sys

from graders.core import i18n, interview, registry, session
from graders.frontends import rendering
from graders.core.i18n import _
from graders.frontends.quiz import quiz  # noqa: F401  (the notebooks import check and quiz from here)
from graders.core.results import KataResult

REPORT_WIDTH = 110  # wide enough for the hint column, narrow enough for a notebook


def use_language(tag: str) -> str:
    """Read this notebook's grading and quiz in language ``tag`` (``"zh-CN"``, ``"en"``);
    a zh-CN notebook calls it in its first code cell, which also gives its plots a font
    with Chinese characters. Returns the tag chosen; raises ValueError naming the
    languages there are."""
    chosen = i18n.use(tag)
    if chosen.startswith("zh"):
        use_cjk_font()
    return chosen


# Fonts with Chinese characters as Windows, macOS and Linux ship them. Matplotlib's default
# font (DejaVu Sans) has none; since matplotlib 3.6 a glyph missing from the first font is
# taken from the next one in the list, so these go after the defaults.
CJK_FONTS = ("Microsoft YaHei", "SimHei", "PingFang SC", "Hiragino Sans GB", "Heiti SC",
             "Noto Sans CJK SC", "Source Han Sans SC", "Noto Sans SC", "WenQuanYi Zen Hei",
             "WenQuanYi Micro Hei", "AR PL UMing CN")


def use_cjk_font() -> str | None:
    """Let matplotlib draw the Chinese plot titles and labels of a zh-CN notebook with the
    first installed font of CJK_FONTS; returns its name. None installed: say so once (the
    labels would show as boxes) and keep matplotlib's warning per missing glyph quiet."""
    try:
        from matplotlib import font_manager, rcParams
    except ImportError:  # a notebook without matplotlib draws nothing
        return None
    installed = {font.name for font in font_manager.fontManager.ttflist}
    found = [name for name in CJK_FONTS if name in installed]
    if found:
        rcParams["font.sans-serif"] = [*rcParams["font.sans-serif"], *found]
        return found[0]
    import warnings

    warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from")
    print(_("No font with Chinese characters is installed, so the Chinese in the plots shows "
            "as boxes. Install one (e.g. Noto Sans CJK SC: `apt install fonts-noto-cjk`) and "
            "restart the kernel."))
    return None


def check(kata_key: str, *objects, **named) -> KataResult:
    """Grade the notebook's ``objects`` (functions and classes, found by ``__name__``; or
    passed as ``name=object``) as kata ``kata_key``; print the report and return the result.

    A failing, unfinished or crashing implementation never raises here: it is a verdict.
    """
    from rich.console import Console

    implementation = {}
    for obj in objects:
        name = getattr(obj, "__name__", None)
        if name is None:
            raise TypeError(_("check() takes functions and classes, or name=object; got {value}",
                              value=repr(obj)))
        implementation[name] = obj
    implementation.update(named)
    result = session.grade(kata_key, objects=implementation)
    shown = result
    if interview.hides(result.kata, registry.REPO_ROOT):  # as kata check shows it in a mock
        shown = interview.without_mistakes(result)
        print(interview.notice())
    # Plain text on stdout (no Jupyter HTML, no colour codes): a stream output that reads
    # the same in Jupyter, in nbclient's captured outputs and in a terminal.
    console = Console(file=sys.stdout, force_jupyter=False, force_terminal=False,
                      no_color=True, width=REPORT_WIDTH)
    rendering.render(shown, console)
    if result.passed:
        print("\n" + _("all checks pass"))
    return result

