"""`kata serve` in a real browser: Playwright for Python driving Chromium (Debian's
`chromium`, through ``executable_path``; Playwright's own browser download is not needed).
One server (`kata serve --no-browser --port 0`, a real subprocess on a temporary copy of
katas/) and one browser for the module.

Skipped, with one line saying how to get one, where no Chromium or no Playwright exists.
Screenshots go to KATA_SCREENSHOT_DIR when set (the README's picture of the room was taken
so), else to a temporary folder.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graders.core import registry
from graders.core.registry import REPO_ROOT
from tests.mutation import mutants

CHROMIUM = os.environ.get("KATA_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
try:
    from playwright.sync_api import expect, sync_playwright
except ImportError:  # pragma: no cover - the dev extra installs it
    sync_playwright = None

if sync_playwright is None or CHROMIUM is None:  # one line for the whole module
    pytest.skip("no browser for the kata serve tests: pip install -e '.[dev]' and apt-get install "
                "-y chromium fonts-noto-cjk (.ci/run does both)", allow_module_level=True)
pytestmark = pytest.mark.browser

ATTENTION = registry.get("01")
MISSING_SCALE = next(m for m in mutants(ATTENTION) if m.id == "missing_scale").source(ATTENTION)
SCORES_LINE = "    scores = query @ key.transpose(-2, -1)"
GRADING_S = 180_000  # ms: a grading run (a subprocess importing torch) on a busy machine
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    folder = Path(os.environ.get("KATA_SCREENSHOT_DIR") or tmp_path_factory.mktemp("screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    """The server: (its root, its address with the token)."""
    root = tmp_path_factory.mktemp("room")
    shutil.copytree(REPO_ROOT / "katas", root / "katas", ignore=shutil.ignore_patterns("__pycache__"))
    environment = {**os.environ, "KATA_ROOT": str(root), "KATA_TIME_LIMIT": "2",
                   "KATA_RUN_TIME_LIMIT": "60", "KATA_LANG": "en"}
    process = subprocess.Popen([sys.executable, "-m", "graders.frontends.cli", "serve", "--no-browser",
                                "--port", "0"], cwd=REPO_ROOT, env=environment,
                               stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    found = re.search(r"http://127\.0\.0\.1:\d+/\?token=\S+", line)
    assert found, line
    yield root, found.group(0)
    process.terminate()
    process.wait(timeout=20)


@pytest.fixture(scope="module")
def page(room):
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        page = context.new_page()
        page.on("dialog", lambda dialog: dialog.accept())
        page.on("console", lambda message: print("console:", message.type, message.text))
        page.on("pageerror", lambda error: print("page error:", error))
        page.goto(room[1] + "#kata/01")
        page.locator(".cm-content").wait_for()
        yield page
        browser.close()


def type_file(page, text: str) -> None:
    """Select everything in the editor and type ``text`` in its place (as a paste does)."""
    page.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(text)


def editor_text(page) -> str:
    return page.evaluate("KataEditor.getText(view)")


def check(page) -> None:
    page.locator("#btn-check").click()
    page.locator("#verdict").wait_for(timeout=GRADING_S)


def test_without_the_scale_check_names_missing_scale(page, room, shots):
    type_file(page, MISSING_SCALE)
    check(page)
    expect(page.locator("#verdict .slug").first).to_have_text("[missing-scale]")
    expect(page.locator("#scoreboard")).to_contain_text("core:")
    page.screenshot(path=shots / "serve-room.png")
    root = room[0]
    assert (root / "katas" / ATTENTION.name / ATTENTION.file).read_text() == editor_text(page)


def test_fixed_every_core_check_passes_and_the_file_is_what_the_editor_saved(page, room):
    line = MISSING_SCALE.splitlines().index(SCORES_LINE) + 1
    page.evaluate("(n) => { const l = view.state.doc.line(n); view.focus();"
                  " view.dispatch({selection: {anchor: l.to}}); }", line)
    page.keyboard.type(" / math.sqrt(query.size(-1))")
    check(page)
    expect(page.locator("#scoreboard")).to_contain_text("core: 5/5 passed")
    page.wait_for_timeout(2500)  # a disk poll (every 2 s) sees the room's own save: no conflict
    expect(page.locator("#conflict")).to_be_hidden()
    saved = (room[0] / "katas" / ATTENTION.name / ATTENTION.file).read_text()
    assert saved == editor_text(page) == ATTENTION.solution_path.read_text() or \
        saved == editor_text(page)
    assert "/ math.sqrt(query.size(-1))" in saved


def test_a_change_on_disk_is_offered_and_not_overwritten(page, room):
    path = room[0] / "katas" / ATTENTION.name / ATTENTION.file
    mine = editor_text(page)
    path.write_text(mine + "# added in another editor\n")
    expect(page.locator("#conflict")).to_be_visible(timeout=10_000)
    assert path.read_text().endswith("# added in another editor\n") and editor_text(page) == mine
    page.locator("#conflict-load").click()
    expect(page.locator("#conflict")).to_be_hidden()
    assert editor_text(page) == path.read_text()
    backups = list((room[0] / ".kata" / "backups" / ATTENTION.name).iterdir())
    assert any(b.read_text() == mine for b in backups)  # the editor's text, kept


def test_a_hint_is_revealed(page):
    page.locator("#btn-hint").click()
    expect(page.locator(".card.hint").first).to_contain_text("hint 1/3")


def test_in_chinese_the_verdict_is_chinese(page, shots):
    page.select_option("#lang", "zh-CN")
    expect(page.locator("#btn-check")).to_have_text("检查")
    type_file(page, MISSING_SCALE)
    check(page)
    expect(page.locator("#verdict .slug").first).to_have_text("[missing-scale]")
    expect(page.locator("#scoreboard")).to_contain_text("核心")
    page.screenshot(path=shots / "serve-room-zh-CN.png")
    page.select_option("#lang", "en")
    expect(page.locator("#btn-check")).to_have_text("Check")


def test_an_endless_loop_gives_a_verdict_in_bounded_time_and_the_page_still_works(page):
    looping = MISSING_SCALE.replace(SCORES_LINE, "    while True:\n        pass\n" + SCORES_LINE, 1)
    type_file(page, looping)
    started = time.monotonic()
    check(page)
    assert time.monotonic() - started < 120
    expect(page.locator("#verdict")).to_contain_text("did not finish within 2 s")
    page.locator("#btn-hint").click()
    expect(page.locator(".card.hint").first).to_contain_text("hint 2/3")


def test_a_transposed_causal_mask_is_drawn_as_two_heatmaps(page, shots):
    masks = registry.get("04")
    transposed = next(m for m in mutants(masks) if m.id == "causal_mask_transposed").source(masks)
    page.evaluate("location.hash = '#kata/04'")
    expect(page.locator("#kata-name")).to_have_text("04_masks")
    type_file(page, transposed)
    check(page)
    card = page.locator(".check", has=page.locator(".slug", has_text="[causal-mask-transposed]"))
    expect(card.locator(".heatmap")).to_have_count(2)
    expect(card.locator(".heatmap").nth(1).locator("td.inf")).to_have_count(10)
    card.locator(".heatmaps").scroll_into_view_if_needed()
    page.locator("#work").screenshot(path=shots / "serve-heatmap.png")


def test_a_mock_shows_its_countdown_and_refuses_a_hint(page, room, shots):
    page.goto(room[1])
    page.locator("[data-mock='02']").click()
    expect(page.locator("#mock-bar")).to_be_visible()
    expect(page.locator("#countdown")).to_have_text(re.compile(r"^\d+:\d\d$"))
    expect(page.locator("#kata-name")).to_have_text("02_heads")
    page.locator("#btn-hint").click()
    expect(page.locator(".hint-refused")).to_contain_text("mock interview")
    page.locator("#btn-solution").click()
    expect(page.locator(".card.refused").first).to_contain_text("mock interview")
    page.screenshot(path=shots / "serve-mock.png")
    page.locator("#mock-abort").click()
    expect(page.locator("#mock-bar")).to_be_hidden()


def test_requests_without_the_token_or_from_another_origin_are_refused(page, room):
    status = page.evaluate("fetch('/api/home').then(r => r.status)")
    assert status == 401
    status = page.evaluate("fetch('/api/kata/01/save', {method: 'POST', headers: {'X-Kata-Token': 'x'},"
                           " body: '{}'}).then(r => r.status)")
    assert status == 401
    token = room[1].split("token=")[1]
    foreign = page.request.post(room[1].split("/?")[0] + "/api/kata/01/save",
                                headers={"X-Kata-Token": token, "Origin": "https://evil.example"},
                                data={"text": "pwned", "force": True})
    assert foreign.status == 403
    assert "pwned" not in (room[0] / "katas" / ATTENTION.name / ATTENTION.file).read_text()
