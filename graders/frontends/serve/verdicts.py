"""What the room shows, as data for the page: a grading result as a structured verdict
(the scoreboard, and for each failed check what was checked, on which input, expected vs
got, the mistake's slug, its explanation and hint), markdown as HTML, and the page's own
words in the learner's language."""

from __future__ import annotations

from markdown_it import MarkdownIt

from graders.core.catalogue import MISTAKES
from graders.core.i18n import _, translate
from graders.core.results import KataResult, shown, shown_tally

_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table")  # raw HTML is escaped


def markdown(source: str) -> str:
    """``source`` rendered as HTML; any HTML in it is shown as text, never run."""
    return _MARKDOWN.render(source)


def verdict(result: KataResult, *, hidden: bool = False) -> dict:
    """``result`` for the page. ``hidden``: a mock interview of its kata runs, so the
    mistakes' names, explanations and hints are left out (graders.core.interview)."""
    if hidden:
        from graders.core import interview

        result = interview.without_mistakes(result)
    checks = []
    for check in result.checks:
        entry = {"name": check.name, "label": check.label, "tier": check.tier, "tier_text": shown(check.tier),
                 "outcome": check.outcome, "outcome_text": shown(check.outcome),
                 "verdict": check.verdict, "slug": check.slug, "pictures": check.pictures}
        if check.slug and check.slug in MISTAKES and not hidden:
            entry["explanation"] = translate(MISTAKES[check.slug].explanation)
            entry["hint"] = translate(MISTAKES[check.slug].hint)
            # shown apart above, so the verdict keeps what was checked, on which input, and
            # expected vs got
            from graders.core import interview

            entry["verdict"] = interview.hidden_verdict(check.verdict, check.slug)
        checks.append(entry)
    return {"kata": result.kata, "status": result.status, "status_text": shown(result.status),
            "passed": result.passed, "core_passed": result.core_passed, "error": result.error,
            "note": result.note, "hidden": hidden,
            "scoreboard": [shown_tally(label, passed, total) for label, passed, total in result.tally],
            "skipped": len(result.skipped), "checks": checks}


def page_texts() -> dict[str, str]:
    """Every word the page writes itself, in the learner's language."""
    return {
        "home": _("Home"), "check": _("Check"), "hint": _("Hint"), "reset": _("Reset"),
        "restore": _("Restore"), "solution": _("Solution"), "quiz": _("Quiz"),
        "mock": _("Mock interview"), "submit": _("Hand in"), "abort": _("Abort"),
        "report": _("Report"), "start_mock": _("Start a mock"), "random": _("a random kata"),
        "checking": _("grading…"), "saved": _("saved"), "unsaved": _("unsaved changes"),
        "time_left": _("time left"), "next": _("next"), "status": _("status"),
        "level": _("level"), "hints": _("hints"), "kata": _("kata"), "minutes": _("min"),
        "disk_changed": _("The file was changed on disk by another editor."),
        "load_disk": _("Load the file on disk (the editor's text is backed up first)"),
        "keep_mine": _("Keep the editor's text (overwrite the file)"),
        "confirm_reset": _("Replace your file with the skeleton? (it is backed up first)"),
        "confirm_solution": _("Show the reference solution? Your report will say you saw it."),
        "mark": _("Mark my answers"), "passed": _("passed"), "failed": _("failed"),
        "explanation": _("mistake"), "mistake_hint": _("hint"), "skipped": _("skipped"),
        "expected": _("expected"), "yours": _("yours"),
        # templates: {label}, {text}, {title}, {tier}, {outcome} are filled in by the page
        "labeled": _("{label}: {text}"), "check_line": _("{title} ({tier}): {outcome}"),
        "no_token": _("Open the address kata serve printed: it carries the token."),
    }
