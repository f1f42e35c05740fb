"""What the room shows, as data for the page: a grading result as a structured verdict
(the scoreboard, and for each failed check what was checked, on which input, expected vs
got, the mistake's slug, its explanation and hint), markdown as HTML, and the page's own
words in the learner's language."""

from __future__ import annotations

from markdown_it import MarkdownIt

from graders.core import registry
from graders.core.catalogue import MISTAKES, mistake
from graders.core.i18n import _, translate
from graders.core.results import SKIPPED, KataResult, shown, shown_tally

_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table")  # raw HTML is escaped


def markdown(source: str) -> str:
    """``source`` rendered as HTML; any HTML in it is shown as text, never run."""
    return _MARKDOWN.render(source)


def drawn(pictures: dict | None) -> bool:
    """Whether a failing check's matrices are worth a heatmap: a mask or scores (with -inf
    in them), a 0/1 matrix, or attention weights (each row a probability distribution, or all
    zero). An output or a projection is not: a picture of its numbers says nothing a
    heatmap can show."""
    if not pictures:
        return False
    if pictures.get("kind") == "sequence":  # token lists, short vectors, integers: a diff
        return True
    values = [v for row in pictures["expected"] for v in row]
    if any(isinstance(v, str) for v in values):  # -inf (or nan) in the expected matrix
        return True
    if all(v in (0, 1) for v in values):
        return True
    return all(all(v >= -1e-6 for v in row) and (abs(sum(row) - 1) < 1e-3 or abs(sum(row)) < 1e-6)
               for row in pictures["expected"])


def picture_caption(pictures: dict, label: str) -> str:
    """What the drawn matrix is: the tensor checked (its label when the grader gave none)
    and which (n, m) slice of it, e.g. ``the attention weights (batch, n, m) [0, :, :]``."""
    if pictures.get("kind") == "sequence":
        return pictures.get("of") or label
    index = ", ".join([*(str(i) for i in pictures.get("at", [])), ":", ":"])
    return f"{pictures.get('of') or label} [{index}]"


def verdict(result: KataResult, *, hidden: bool = False) -> dict:
    """``result`` for the page. ``hidden``: a mock interview of its kata runs, so the
    mistakes' names, explanations and hints are left out (graders.core.interview)."""
    if hidden:
        from graders.core import interview

        result = interview.without_mistakes(result)
    checks = []
    for check in result.checks:
        pictures = ({**check.pictures, "caption": picture_caption(check.pictures, check.label)}
                    if drawn(check.pictures) else None)
        entry = {"name": check.name, "label": check.label, "tier": check.tier, "tier_text": shown(check.tier),
                 "outcome": check.outcome, "outcome_text": shown(check.outcome),
                 # a skipped check's verdict is its reason, as the grader gave it: translated
                 "verdict": translate(check.verdict) if check.outcome == SKIPPED else check.verdict,
                 "slug": check.slug, "pictures": pictures}
        if check.slug and check.slug in MISTAKES and not hidden:
            words = mistake(check.slug, registry.get(result.kata).id)  # the kata's own wording
            entry["explanation"] = translate(words.explanation)
            entry["hint"] = translate(words.hint)
            # shown apart above, so the verdict keeps what was checked, on which input, and
            # expected vs got
            from graders.core import interview

            entry["verdict"] = interview.hidden_verdict(check.verdict, check.slug)
        checks.append(entry)
    return {"kata": result.kata, "status": result.status, "status_text": shown(result.status),
            "passed": result.passed, "core_passed": result.core_passed, "error": result.error,
            "note": result.note, "hidden": hidden,
            "scoreboard": [shown_tally(label, passed, total) for label, passed, total in result.tally
                           if total or label == "core"],  # a kata with no follow-ups: no "0/0"
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
        "busy": _("working…"),
        "copy": _("Copy"), "copied": _("copied"),
        "reviews_due": _("Due for review today"), "start_review": _("Review"),
        "review_as_mock": _("as a mock"),
        "confirm_review": _("Review this kata from the skeleton? (your file is backed up first)"),
        "confirm_review_mock": _("Review this kata as a timed mock interview, from the skeleton? "
                                 "(your file is backed up first; no hints and no solution until "
                                 "you hand it in)"),
        "under_way": _(", under way"),
        "no_room": _("The practice room does not answer: is kata serve still running? Start it "
                     "again, then open the address it prints."),
        "room_failed": _("The room could not answer this request (HTTP {status}): nothing more "
                         "was done. The terminal kata serve runs in shows the details."),
        "recurring": _("Mistakes across katas (topics to revisit)"),
        "revisit": _("revisit {lesson}"),
        "shortcuts": _("Ctrl+Enter (⌘+Enter): check · Alt+Enter: run the README's example · "
                       "Ctrl+S (⌘+S): save"),
        "shortcuts_no_run": _("Ctrl+Enter (⌘+Enter): check · Ctrl+S (⌘+S): save"),
        "run": _("Run"), "run_title": _("The README's example, run on your code"),
        "theme_dark": _("Dark theme"), "theme_light": _("Light theme"),
        "draft_restored": _("Your unsaved text from last time is back in the editor (the file "
                            "on disk is unchanged: Check saves it)."),
        "loading_home": _("Counting your progress: katas changed since they were last graded "
                          "are graded first…"),
        "hints_exhausted": _("That was the last hint: all {total} are shown. Still stuck? "
                             "Solution shows the reference (your report will say you saw it)."),
        "explained_above": _("the same mistake as above: its explanation and hint are there"),
        "editor_kept": _("The editor keeps your text, unsaved."),
        "confirm_leave": _("The editor has unsaved changes. Leave this kata? They are kept as a "
                           "backup first (Restore brings them back)."),
        "confirm_submit": _("Hand in now? Your file as it stands is graded and the mock "
                            "interview ends."),
        # templates: {label}, {text}, {title}, {tier}, {outcome} are filled in by the page
        "labeled": _("{label}: {text}"), "check_line": _("{title} ({tier}): {outcome}"),
        "no_token": _("Open the address kata serve printed: it carries the token."),
    }
