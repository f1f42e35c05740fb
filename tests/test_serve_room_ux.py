"""The room's working comforts in a real browser (Chromium through Playwright, as in
tests/test_serve_browser.py, whose server, browser and helpers this module reuses): the
keyboard shortcuts, the dark theme, panes the learner resizes, expected-vs-got as a diff with
a copy button, and what the room remembers of each kata. Screenshots at 1280×800 and 390×844
in both themes go to KATA_SCREENSHOT_DIR (docs/images/ holds the ones the README shows)."""

from __future__ import annotations

import pytest

from graders.core import registry
from tests.mutation import mutants
try:  # without a browser, test_serve_browser skips itself at import, and so does this module
    from tests.test_serve_browser import (  # noqa: F401 (fixtures: pytest finds them by name here)
        ATTENTION, DESKTOP, GRADING_S, MISSING_SCALE, PHONE, browser, editor_text, expect, fits,
        no_page_errors, open_kata, room, shots, state_of, state_path, type_file, watch)
except ImportError as missing:  # pytest's Skipped at import reaches us as a partial module
    pytest.skip(f"no browser for the room's UX tests ({missing})", allow_module_level=True)

FLOPS = registry.get("07")
BEAM = registry.get("17")


def new_page(browser, room, *, viewport=DESKTOP, scheme="light", at="#kata/01", **options):
    context = browser.new_context(viewport=viewport, color_scheme=scheme, **options)
    page = context.new_page()
    watch(page)
    page.goto(room[1] + at)
    return context, page


@pytest.fixture(scope="module")
def page(room, browser):
    context, page = new_page(browser, room)
    page.locator(".cm-content").wait_for()
    yield page
    context.close()


def theme(page) -> str:
    return page.evaluate("document.documentElement.dataset.theme")


def test_ctrl_enter_checks_from_inside_the_editor_and_the_shortcuts_are_listed(page):
    open_kata(page, ATTENTION)
    expect(page.locator("#shortcuts")).to_contain_text("Ctrl+Enter")
    type_file(page, MISSING_SCALE)
    page.locator(".cm-content").press("Control+Enter")
    page.locator("#verdict").wait_for(timeout=GRADING_S)
    expect(page.locator("#verdict .slug").first).to_have_text("[missing-scale]")
    assert "\n\n" not in editor_text(page)[-2:] and editor_text(page) == MISSING_SCALE  # no newline typed


def test_the_theme_follows_the_system_and_a_chosen_one_is_remembered(room, browser, shots):
    context, dark = new_page(browser, room, scheme="dark")
    dark.locator(".cm-content").wait_for()
    assert theme(dark) == "dark"
    background = dark.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(20, 23, 29)", background
    editor = dark.evaluate("getComputedStyle(document.querySelector('.cm-editor')).backgroundColor")
    assert editor != "rgb(255, 255, 255)", editor
    type_file(dark, MISSING_SCALE)
    dark.locator("#btn-check").click()
    dark.locator("#verdict").wait_for(timeout=GRADING_S)
    dark.screenshot(path=shots / "serve-room-dark.png")
    dark.locator("#theme").click()  # the learner's choice beats the system's, and is kept
    assert theme(dark) == "light"
    dark.reload()
    dark.locator(".cm-content").wait_for()
    assert theme(dark) == "light"
    dark.locator("#theme").click()
    assert theme(dark) == "dark"
    context.close()


def test_on_a_phone_both_themes_fit_and_the_handles_are_hidden(room, browser, shots):
    for scheme in ("light", "dark"):
        context, phone = new_page(browser, room, viewport=PHONE, scheme=scheme, at="#kata/04",
                                  device_scale_factor=2, is_mobile=True, has_touch=True)
        phone.locator(".cm-content").wait_for()
        assert theme(phone) == scheme
        expect(phone.locator("#split-columns")).to_be_hidden()
        fits(phone)
        phone.screenshot(path=shots / f"serve-phone-kata-{scheme}.png")
        phone.evaluate("location.hash = ''")
        expect(phone.locator("#home .scoreboard")).to_be_visible(timeout=GRADING_S)
        fits(phone)
        phone.screenshot(path=shots / f"serve-phone-home-{scheme}.png")
        context.close()


def drag(page, handle: str, dx: float, dy: float) -> None:
    box = page.locator(handle).bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + dx / 2, y + dy / 2)
    page.mouse.move(x + dx, y + dy)
    page.mouse.up()


def test_the_panes_resize_by_their_handles_and_keep_their_sizes(room, browser):
    context, page = new_page(browser, room)
    page.locator(".cm-content").wait_for()
    before = page.locator("#problem").bounding_box()["width"]
    drag(page, "#split-columns", 200, 0)
    wider = page.locator("#problem").bounding_box()["width"]
    assert wider > before + 150, (before, wider)
    editor_before = page.locator("#editor").bounding_box()["height"]
    drag(page, "#split-rows", 0, -120)
    editor_after = page.locator("#editor").bounding_box()["height"]
    assert editor_after < editor_before - 80, (editor_before, editor_after)
    page.locator("#split-columns").focus()  # the keyboard moves a handle too
    page.keyboard.press("ArrowLeft")
    narrower = page.locator("#problem").bounding_box()["width"]
    assert narrower < wider - 30, (wider, narrower)
    page.reload()
    page.locator(".cm-content").wait_for()
    assert abs(page.locator("#problem").bounding_box()["width"] - narrower) < 4
    assert abs(page.locator("#editor").bounding_box()["height"] - editor_after) < 12
    fits(page)
    context.close()


def test_integers_and_ranked_hypotheses_show_as_a_diff_with_a_copy_button(room, browser, shots):
    context, page = new_page(browser, room, at="#kata/07")
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.locator(".cm-content").wait_for()
    batch_ignored = next(m for m in mutants(FLOPS) if m.slug == "batch-ignored")
    type_file(page, batch_ignored.source(FLOPS))
    page.locator("#btn-check").click()
    page.locator("#verdict").wait_for(timeout=GRADING_S)
    diff = page.locator(".check", has=page.locator(".slug", has_text="[batch-ignored]")).locator(".diff").first
    expect(diff.locator("td.off.got")).to_have_count(1)
    expected, got = diff.locator("td.expected").inner_text(), diff.locator("td.got").inner_text()
    assert expected != got and expected.replace(",", "").isdigit(), (expected, got)
    diff.locator("button.copy").click()
    expect(diff.locator("button.copy")).to_have_text("copied")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith("expected: [") and got in copied, copied
    diff.scroll_into_view_if_needed()
    page.locator("#work").screenshot(path=shots / "serve-diff.png")

    open_kata(page, BEAM)  # long entries: one row per rank, the differing ranks marked
    type_file(page, mutants(BEAM)[0].source(BEAM))
    page.locator("#btn-check").click()
    page.locator("#verdict").wait_for(timeout=GRADING_S)
    ranked = page.locator("#verdict .diff").first
    expect(ranked.locator("th", has_text="#")).to_have_count(1)
    assert ranked.locator("td.off").count() >= 1
    context.close()


def test_each_kata_remembers_unsaved_text_scroll_and_its_last_verdict(room, browser):
    context, page = new_page(browser, room, at="#kata/05")
    page.locator(".cm-content").wait_for()
    encoding = registry.get("05")
    on_disk = (room[0] / "katas" / encoding.name / encoding.file).read_text()
    type_file(page, on_disk + "# typed, not saved\n")
    page.evaluate("document.getElementById('problem').scrollTop = 300")
    page.wait_for_timeout(600)  # remembered a quarter of a second after the last change
    page.reload()  # the tab reloaded (the browser asks; the test says yes)
    page.locator(".cm-content").wait_for()
    expect(page.locator(".draft-restored")).to_be_visible()
    assert editor_text(page) == on_disk + "# typed, not saved\n"
    expect(page.locator("#save-state")).to_have_text("unsaved changes")
    assert abs(page.evaluate("document.getElementById('problem').scrollTop") - 300) < 2
    assert (room[0] / "katas" / encoding.name / encoding.file).read_text() == on_disk  # untouched

    page.locator("#btn-check").click()  # saved and graded: the verdict is what comes back next
    page.locator("#verdict").wait_for(timeout=GRADING_S)
    page.wait_for_timeout(600)
    open_kata(page, ATTENTION)
    open_kata(page, encoding)
    expect(page.locator("#verdict")).to_be_visible()
    expect(page.locator(".draft-restored")).to_have_count(0)
    context.close()


def test_run_shows_the_readmes_example_on_the_learners_code_apart_from_check(page):
    open_kata(page, ATTENTION)
    type_file(page, ATTENTION.solution_path.read_text())
    page.locator("#btn-run").click()
    run = page.locator("#output .card.run").first
    expect(run).to_contain_text(">>> out, w = scaled_dot_product_attention(q, k, v)",
                                timeout=GRADING_S)
    expect(run).to_contain_text("tensor([[0.6698, 0.3302]])    # (1, 2) float32")
    expect(page.locator("#grading")).to_have_count(0)  # a run is not a check
    type_file(page, MISSING_SCALE)  # Alt+Enter runs too: the unscaled weights show
    page.locator(".cm-content").press("Alt+Enter")
    expect(page.locator("#output .card.run").first).to_contain_text("tensor([[0.7311, 0.2689]])",
                                                                   timeout=GRADING_S)
    broken = MISSING_SCALE.replace("def scaled_dot_product_attention", "def renamed", 1)
    type_file(page, broken)  # a name the example needs is missing: said in one line
    page.locator("#btn-run").click()
    expect(page.locator("#output .card.run.failed").first).to_contain_text(
        "NameError", timeout=GRADING_S)


def test_a_kata_without_an_example_offers_no_run_and_the_room_says_why(page):
    open_kata(page, FLOPS)
    expect(page.locator("#btn-run")).to_be_hidden()  # the room trial (2026-12-01): Run offered
    page.locator(".cm-content").press("Alt+Enter")  # the shortcut does nothing here either
    page.wait_for_timeout(500)
    expect(page.locator("#output .card.run")).to_have_count(0)
    answer = page.evaluate("api(`/api/kata/${current.id}/run`, {text: KataEditor.getText(view),"
                           " base: current.sha}).then((d) => d.run.error)")
    assert "no example to run" in answer


def test_the_home_page_lists_the_reviews_kata_review_lists(room, browser, shots):
    """Last in this module: it writes a state with recurring mistakes into the room's copy."""
    import shutil

    from tests.test_review import kata_command, prepared_copy

    prepared = prepared_copy(room[0].parent / "prepared")
    shutil.copy(prepared / ".kata" / "state.json", state_path(room))
    listed = kata_command(room[0], "review").stdout
    due = [line.split(":")[0].strip() for line in listed.splitlines() if ": due " in line]
    assert due, listed
    context, page = new_page(browser, room, at="")
    expect(page.locator("#reviews-due")).to_be_visible(timeout=GRADING_S)
    shown = page.locator("#reviews-due li a").all_inner_texts()
    assert shown == due, (shown, due)
    expect(page.locator("#recurring")).to_contain_text("[missing-scale]")
    page.screenshot(path=shots / "serve-home-reviews.png")
    page.locator("#reviews-due button[data-review='03']").first.click()  # asks, then starts
    expect(page.locator("#kata-name")).to_have_text("03_mha")
    state = state_of(room)
    assert state["reviews"]["03_mha"]["started"]
    context.close()
