"""Reviews (graders.practice.review): when a kata comes back, the documented schedule, the
mistakes that recur across katas, the state file's version — and `kata review`, `kata list`,
`kata report` and the room's home agreeing on what is due."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import time

from starlette.testclient import TestClient

from graders.core import registry
from graders.core.registry import REPO_ROOT
from graders.practice import review
from graders.practice.common import iso
from graders.practice.state import STATE_VERSION, StateStore, fresh_state

ATTENTION, MHA, LLAMA, HEADS = (registry.get(k) for k in ("01", "03", "15", "02"))
DAY = 86_400.0
T0 = datetime.datetime(2026, 11, 1, 12, 0).timestamp()


def attempt(kata, status, *slugs, t=T0):
    return {"kata": kata.name, "at": "", "t": t, "source": "check", "status": status,
            "slugs": list(slugs), "key": f"{kata.name}-{t}-{status}", "duration_s": 0.0}


def state_with(*attempts, hints=None, revealed=(), mocks=()):
    state = fresh_state()
    state["attempts"] = list(attempts)
    state["hints"] = dict(hints or {})
    state["revealed"] = {name: {"at": "", "t": T0} for name in revealed}
    state["mocks"] = list(mocks)
    return state


def test_a_clean_pass_needs_no_review_and_each_reason_is_recorded():
    clean = state_with(attempt(ATTENTION, "failing", "missing-scale"), attempt(ATTENTION, "all passed"))
    assert review.reasons(clean, ATTENTION) == [] and review.schedule(clean) == []
    helped = state_with(attempt(ATTENTION, "all passed"), hints={ATTENTION.name: 2},
                        revealed=[ATTENTION.name])
    assert review.reasons(helped, ATTENTION) == [review.AFTER_HINTS, review.AFTER_SOLUTION]
    recurring = state_with(attempt(MHA, "failing", "missing-scale", t=T0),
                           attempt(MHA, "failing", "missing-scale", t=T0 + 60))
    assert review.reasons(recurring, MHA) == [review.RECURRING]  # never passed: still due
    timed_out = state_with(mocks=[{"kata": HEADS.name, "outcome": "time ran out", "started": iso(T0),
                                   "taken_s": 600.0, "minutes": 10, "status": "failing"}])
    assert review.reasons(timed_out, HEADS) == [review.MOCK_TIMED_OUT]


def test_the_first_review_is_due_the_day_after_and_due_lists_it_from_then_on():
    state = state_with(attempt(ATTENTION, "all passed", t=T0), hints={ATTENTION.name: 1})
    (only,) = review.schedule(state)
    first_day = datetime.date(2026, 11, 2)
    assert only.kata == ATTENTION and only.due == first_day and only.step == 0
    assert review.due(state, datetime.date(2026, 11, 1)) == []
    assert review.due(state, first_day) == [only] == review.due(state, datetime.date(2026, 12, 1))


def test_unaided_passes_space_reviews_1_3_7_21_21_days_and_help_starts_again():
    state = state_with(attempt(ATTENTION, "all passed", t=T0), hints={ATTENTION.name: 1})
    now, gaps = T0 + DAY, []
    for n in range(5):  # a review started and passed unaided each time it is due
        review.begin(state, ATTENTION, now)
        state["attempts"].append(attempt(ATTENTION, "all passed", t=now + 60 + n))
        review.after_grade(state, ATTENTION, "all passed", now + 60)
        due = datetime.date.fromisoformat(state["reviews"][ATTENTION.name]["due"])
        gaps.append((due - review.day(now)).days)
        now = datetime.datetime.combine(due, datetime.time(12)).timestamp()
    assert gaps == [3, 7, 21, 21, 21] and list(review.SCHEDULE_DAYS) == [1, 3, 7, 21]
    review.begin(state, ATTENTION, now)  # a hint during the review: back to 1 day
    state["hints"][ATTENTION.name] = 2
    state["attempts"].append(attempt(ATTENTION, "all passed", t=now + 60))
    review.after_grade(state, ATTENTION, "all passed", now + 60)
    assert state["reviews"][ATTENTION.name]["step"] == 0
    assert state["reviews"][ATTENTION.name]["due"] == (review.day(now) + datetime.timedelta(days=1)).isoformat()
    review.begin(state, ATTENTION, now)  # a failing check on the way: back to 1 day too
    state["attempts"] += [attempt(ATTENTION, "failing", "missing-scale", t=now + 1),
                          attempt(ATTENTION, "all passed", t=now + 2)]
    review.after_grade(state, ATTENTION, "all passed", now + 2)
    assert state["reviews"][ATTENTION.name]["step"] == 0
    review.after_grade(state, ATTENTION, "all passed", now + 3)  # no review under way: no change
    assert state["reviews"][ATTENTION.name]["step"] == 0


def test_a_mistake_in_several_katas_is_a_topic_with_its_lesson():
    state = state_with(attempt(ATTENTION, "failing", "missing-scale"),
                       attempt(MHA, "failing", "missing-scale", "mask-inverted"),
                       attempt(LLAMA, "failing", "missing-scale"),
                       attempt(HEADS, "failing", "heads-interleaved"))
    (topic,) = review.recurring_mistakes(state)
    assert topic.slug == "missing-scale" and [k.id for k in topic.katas] == ["01", "03", "15"]
    assert topic.lesson.startswith(("notebooks/", "katas/"))


def test_an_old_state_file_is_read_without_loss(tmp_path):
    old = {"version": 1, "hints": {"01_attention": 2}, "attempts": [attempt(ATTENTION, "all passed")],
           "cache": {}, "revealed": {}, "time": {"01_attention": {"last": T0, "total_s": 60.0}},
           "mock": None, "mocks": []}
    (tmp_path / "state.json").write_text(json.dumps(old))
    store = StateStore(tmp_path, warn=lambda line: (_ for _ in ()).throw(AssertionError(line)))
    state = store.read()
    assert {k: state[k] for k in old if k != "version"} == {k: v for k, v in old.items() if k != "version"}
    assert state["reviews"] == {} and review.schedule(state)[0].kata == ATTENTION
    store.update(lambda s: None)
    written = json.loads((tmp_path / "state.json").read_text())
    assert written["version"] == STATE_VERSION == 2 and written["attempts"] == old["attempts"]


def kata_command(root, *args):
    return subprocess.run([sys.executable, "-m", "graders.frontends.cli", *args], cwd=REPO_ROOT,
                          env={**os.environ, "KATA_ROOT": str(root), "KATA_LANG": "en"},
                          capture_output=True, text=True, timeout=600)


def prepared_copy(tmp_path):
    """A copy of katas/ whose state holds recurring mistakes, hints and a timed-out mock."""
    import shutil

    root = tmp_path / "copy"
    shutil.copytree(REPO_ROOT / "katas", root / "katas", ignore=shutil.ignore_patterns("__pycache__"))
    days_ago = time.time() - 3 * DAY
    state = state_with(attempt(ATTENTION, "failing", "missing-scale", t=days_ago),
                       attempt(ATTENTION, "all passed", t=days_ago + 60),
                       attempt(MHA, "failing", "missing-scale", t=days_ago),
                       attempt(MHA, "failing", "missing-scale", t=days_ago + 60),
                       hints={ATTENTION.name: 1},
                       mocks=[{"kata": HEADS.name, "outcome": "time ran out", "started": iso(days_ago),
                               "taken_s": 600.0, "minutes": 10, "status": "failing"}])
    (root / ".kata").mkdir()
    (root / ".kata" / "state.json").write_text(json.dumps(state))
    return root


def test_kata_review_list_report_and_the_rooms_home_agree_on_what_is_due(tmp_path):
    from graders.frontends.serve import server

    root = prepared_copy(tmp_path)
    listed = kata_command(root, "review")
    assert listed.returncode == 0, listed.stderr
    due_in_cli = [line.split(":")[0].strip() for line in listed.stdout.splitlines()
                  if line.startswith("  ") and ": due " in line]
    assert due_in_cli == ["01_attention", "02_heads", "03_mha"], listed.stdout
    assert "[missing-scale] in 01, 03" in listed.stdout
    token = "t" * 43
    client = TestClient(server.create_app(root, token, port=8765), base_url="http://127.0.0.1:8765")
    home = client.get("/api/home", headers={"X-Kata-Token": token}).json()
    assert [r["name"] for r in home["reviews_due"]] == due_in_cli
    assert home["recurring"][0]["slug"] == "missing-scale"
    assert "Due for review today" in kata_command(root, "list").stdout
    report = kata_command(root, "report").stdout
    assert "## Reviews" in report and "## Mistakes across katas" in report

    started = kata_command(root, "review", "03", "--yes")  # a review: skeleton, backup first
    assert started.returncode == 0 and "backed up" in started.stdout, started.stdout
    assert (root / "katas" / MHA.name / MHA.file).read_text() == MHA.pristine_skeleton_path.read_text()
    entry = json.loads((root / ".kata" / "state.json").read_text())["reviews"][MHA.name]
    assert entry["started"] and entry["step"] == 0


def test_a_review_started_of_a_kata_not_due_is_listed_as_started_by_you(tmp_path):
    """The room trial (2026-12-01): `kata review 07 --yes` printed "07_flops: due ... (), under way"."""
    root = prepared_copy(tmp_path)
    started = kata_command(root, "review", "07", "--yes")
    assert started.returncode == 0, started.stdout + started.stderr
    listed = kata_command(root, "review").stdout
    assert "07_flops: due " in listed and "(started by you), under way" in listed, listed
    assert "()" not in listed
