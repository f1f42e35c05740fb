"""`kata serve`'s API, through Starlette's test client, on a temporary copy of katas/: the
room does what the `kata` command does (same state file, same backups, same refusals), and
nobody but the learner gets in (token, Host, Origin, only the katas' own files).

Grading is real where the verdict matters (kata 01, in a subprocess with a time limit);
elsewhere a stand-in grader keeps the tests fast.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient  # noqa: E402

from graders.core import registry  # noqa: E402
from graders.core.registry import REPO_ROOT  # noqa: E402
from graders.core.results import CheckResult, KataResult  # noqa: E402
from graders.frontends.serve import server  # noqa: E402
from tests.mutation import mutants  # noqa: E402

TOKEN = "test-token"
PORT = 8765
OWN = {"X-Kata-Token": TOKEN, "Host": f"127.0.0.1:{PORT}"}
ATTENTION = registry.get("01")
SOLUTION = ATTENTION.solution_path.read_text()
MISSING_SCALE = next(m for m in mutants(ATTENTION) if m.id == "missing_scale").source(ATTENTION)


def stand_in_grader(kata, path) -> KataResult:
    """Passes when the file is kata 01's reference, fails naming missing-scale otherwise."""
    passed = Path(path).read_text() == SOLUTION
    return KataResult(kata.name, [CheckResult("test_x", "core", "passed" if passed else "failed",
                                              "" if passed else "checked x\n  expected 1, got 2",
                                              None if passed else "missing-scale")])


@pytest.fixture
def root(tmp_path) -> Path:
    shutil.copytree(REPO_ROOT / "katas", tmp_path / "katas",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


@pytest.fixture
def client(root) -> TestClient:
    app = server.create_app(root, TOKEN, port=PORT, grader=stand_in_grader)
    return TestClient(app, base_url=f"http://127.0.0.1:{PORT}")


@pytest.fixture
def graded_client(root) -> TestClient:
    """A room that grades for real, in a subprocess."""
    return TestClient(server.create_app(root, TOKEN, port=PORT), base_url=f"http://127.0.0.1:{PORT}")


def learner_file(root: Path, kata=ATTENTION) -> Path:
    return root / "katas" / kata.name / kata.file


def opened(client, key="01", **params) -> dict:
    response = client.get(f"/api/kata/{key}", headers=OWN, params=params)
    assert response.status_code == 200, response.text
    return response.json()


# -- what the room does --

def test_home_shows_the_same_facts_as_kata_list(client):
    data = client.get("/api/home", headers=OWN).json()
    names = [k["name"] for track in data["tracks"] for k in track["katas"]]
    assert names == [k.name for k in registry.KATAS]
    assert data["progress"].startswith(f"{len(registry.KATAS)} katas:") and data["next"] == "01"
    first = data["tracks"][0]["katas"][0]
    assert first["status"] == "not started" and first["minutes"] == ATTENTION.target_minutes


def test_the_kata_page_has_the_readme_in_the_learners_language_and_the_file(client, root):
    english, chinese = opened(client), opened(client, lang="zh-CN")
    assert english["text"] == learner_file(root).read_text()
    assert "<h1>" in english["readme"] and "单头" in chinese["readme"]
    texts = client.get("/api/texts", headers=OWN, params={"lang": "zh-CN"}).json()["texts"]
    assert texts["check"] == "检查" and texts["hint"] == "提示"


def test_check_saves_the_editor_to_the_file_and_grades_it(client, root):
    page = opened(client)
    response = client.post("/api/kata/01/check", headers=OWN, json={"text": MISSING_SCALE, "base": page["sha"]})
    assert response.status_code == 200
    verdict = response.json()["verdict"]
    assert learner_file(root).read_text() == MISSING_SCALE  # what pytest katas/01 grades
    assert verdict["checks"][0]["slug"] == "missing-scale" and verdict["checks"][0]["explanation"]
    state = json.loads((root / ".kata" / "state.json").read_text())
    assert state["attempts"][-1]["slugs"] == ["missing-scale"]  # recorded as kata check does


def test_a_change_on_disk_is_offered_never_overwritten(client, root):
    page = opened(client)
    learner_file(root).write_text("# written by another editor\n")
    response = client.post("/api/kata/01/save", headers=OWN, json={"text": "mine", "base": page["sha"]})
    assert response.status_code == 409
    assert response.json()["disk"]["text"] == "# written by another editor\n"
    assert learner_file(root).read_text() == "# written by another editor\n"
    forced = client.post("/api/kata/01/save", headers=OWN,
                         json={"text": "mine", "base": page["sha"], "force": True})
    assert forced.status_code == 200 and learner_file(root).read_text() == "mine"


def test_the_editors_text_is_set_aside_as_a_backup_that_restore_brings_back(client, root):
    kept = client.post("/api/kata/01/set-aside", headers=OWN, json={"text": "editor text\n"}).json()
    assert "backed up" in kept["message"]
    restored = client.post("/api/kata/01/restore", headers=OWN, json={}).json()
    assert restored["text"] == "editor text\n" == learner_file(root).read_text()


def test_hints_come_one_rung_at_a_time_and_are_recorded(client, root):
    first = client.post("/api/kata/01/hint", headers=OWN, json={}).json()
    second = client.post("/api/kata/01/hint", headers=OWN, json={}).json()
    assert (first["level"], second["level"]) == (1, 2)
    assert json.loads((root / ".kata" / "state.json").read_text())["hints"]["01_attention"] == 2


def test_reset_backs_up_and_restore_brings_it_back(client, root):
    page = opened(client)
    client.post("/api/kata/01/save", headers=OWN, json={"text": "my work\n", "base": page["sha"]})
    reset = client.post("/api/kata/01/reset", headers=OWN, json={}).json()
    assert reset["text"] == ATTENTION.pristine_skeleton_path.read_text()
    assert "backed up" in reset["message"]
    restored = client.post("/api/kata/01/restore", headers=OWN, json={}).json()
    assert restored["text"] == "my work\n" == learner_file(root).read_text()


def test_a_mock_refuses_hints_solution_and_quiz_and_hides_mistakes(client, root):
    started = client.post("/api/mock/start", headers=OWN, json={"kata": "01", "minutes": 5})
    mock = started.json()["mock"]
    assert mock["kata"] == "01_attention" and 0 < mock["left_s"] <= 300
    for route in ("hint", "solution"):
        refused = client.post(f"/api/kata/01/{route}", headers=OWN, json={})
        assert refused.status_code == 409 and "mock" in refused.json()["error"]
    assert client.get("/api/kata/01/quiz", headers=OWN).status_code == 409
    page = opened(client)
    assert "Interviewer follow-ups" in page["readme"] and page["mock"]["kata"] == "01_attention"
    checked = client.post("/api/kata/01/check", headers=OWN, json={"text": MISSING_SCALE, "base": page["sha"]})
    assert checked.json()["verdict"]["hidden"] and not checked.json()["verdict"]["checks"][0]["slug"]
    submitted = client.post("/api/mock/submit", headers=OWN, json={}).json()
    assert submitted["record"]["kata"] == "01_attention" and submitted["record"]["slugs"] == ["missing-scale"]
    assert "mock interview of 01_attention" in submitted["message"]
    report = client.get("/api/report", headers=OWN).json()["markdown"]
    assert "01_attention" in report


def test_a_mock_past_its_deadline_is_handed_in_as_time_ran_out(root):
    now = [1_750_000_000.0]
    client = TestClient(server.create_app(root, TOKEN, port=PORT, grader=stand_in_grader,
                                          clock=lambda: now[0]), base_url=f"http://127.0.0.1:{PORT}")
    client.post("/api/mock/start", headers=OWN, json={"kata": "01", "minutes": 1})
    now[0] += 61
    assert client.get("/api/mock", headers=OWN).json()["mock"] is not None  # the page's own hand-in's grace
    now[0] += server.MOCK_GRACE_S
    assert client.get("/api/mock", headers=OWN).json()["mock"] is None  # any request hands it in
    submitted = client.post("/api/mock/submit", headers=OWN, json={}).json()
    assert submitted["record"]["outcome"] == "time ran out" and "time ran out" in submitted["message"]
    state = json.loads((root / ".kata" / "state.json").read_text())
    assert [m["outcome"] for m in state["mocks"]] == ["time ran out"]


def test_the_quiz_is_marked(client):
    questions = client.get("/api/kata/01/quiz", headers=OWN).json()["questions"]
    marks = client.post("/api/kata/01/quiz", headers=OWN, json={"answers": {"1": "?"}}).json()
    assert len(marks["marks"]) == len(questions) and marks["marks"][0]["outcome"] == "wrong"


def test_the_solution_is_shown_and_recorded(client, root):
    shown = client.post("/api/kata/01/solution", headers=OWN, json={}).json()
    assert shown["solution"] == SOLUTION
    assert "01_attention" in json.loads((root / ".kata" / "state.json").read_text())["revealed"]


def test_real_grading_names_missing_scale_and_survives_an_endless_loop(graded_client, root, monkeypatch):
    monkeypatch.setenv("KATA_TIME_LIMIT", "1")
    page = opened(graded_client)
    verdict = graded_client.post("/api/kata/01/check", headers=OWN,
                                 json={"text": MISSING_SCALE, "base": page["sha"]}).json()["verdict"]
    assert "missing-scale" in [c["slug"] for c in verdict["checks"]]
    loop = MISSING_SCALE.replace("    scores = ", "    while True:\n        pass\n    scores = ", 1)
    assert loop != MISSING_SCALE
    verdict = graded_client.post("/api/kata/01/check", headers=OWN,
                                 json={"text": loop, "base": server.sha(MISSING_SCALE.encode())}).json()["verdict"]
    assert any("did not finish within 1 s" in c["verdict"] for c in verdict["checks"])
    crash = "import os\nos._exit(3)\n"
    verdict = graded_client.post("/api/kata/01/check", headers=OWN,
                                 json={"text": crash, "base": server.sha(loop.encode())}).json()["verdict"]
    assert verdict["error"] and not verdict["passed"]
    assert graded_client.get("/api/home", headers=OWN).status_code == 200  # still serving


# -- who gets in --

@pytest.mark.parametrize("method,path", [("GET", "/api/home"), ("GET", "/api/kata/01"),
                                         ("GET", "/api/kata/01/file"), ("POST", "/api/kata/01/check"),
                                         ("POST", "/api/kata/01/save"), ("POST", "/api/mock/start"),
                                         ("GET", "/api/report"), ("GET", "/")])
@pytest.mark.parametrize("token", [None, "wrong-token", ""])
def test_requests_without_the_token_are_refused(client, root, method, path, token):
    headers = {"Host": f"127.0.0.1:{PORT}"}
    if token is not None:
        headers["X-Kata-Token"] = token
    before = learner_file(root).read_bytes()
    response = client.request(method, path, headers=headers, json={"text": "x", "base": ""})
    if (method, path, token) == ("GET", "/", None):  # the page alone (reloaded once it
        assert response.status_code == 200 and "<html" in response.text.lower()  # dropped the token)
    else:
        assert response.status_code == 401
    assert learner_file(root).read_bytes() == before and not (root / ".kata").exists()


def test_the_page_needs_the_token_in_its_url(client):
    page = client.get("/", params={"token": TOKEN}, headers={"Host": OWN["Host"]})
    assert page.status_code == 200
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["referrer-policy"] == "no-referrer" and page.headers["x-frame-options"] == "DENY"
    assert client.get("/", params={"token": "nope"}, headers={"Host": OWN["Host"]}).status_code == 401


@pytest.mark.parametrize("host", ["evil.example", f"evil.example:{PORT}", "127.0.0.1:9999",
                                  "localhost.evil.example", ""])
def test_a_foreign_host_is_refused_even_with_the_token(client, host):
    """DNS rebinding: a name that resolves to 127.0.0.1 still sends its own Host."""
    response = client.get("/api/home", headers={**OWN, "Host": host})
    assert response.status_code == 403


@pytest.mark.parametrize("origin", ["https://evil.example", "http://evil.example",
                                    f"http://127.0.0.1:{PORT}.evil.example", "null",
                                    f"https://127.0.0.1:{PORT}x"])
def test_a_cross_site_request_is_refused(client, root, origin):
    before = learner_file(root).read_bytes()
    response = client.post("/api/kata/01/save", headers={**OWN, "Origin": origin},
                           json={"text": "pwned", "base": "", "force": True})
    assert response.status_code == 403 and learner_file(root).read_bytes() == before
    assert client.post("/api/kata/01/check", headers={**OWN, "Origin": origin},
                       json={"text": "pwned", "force": True}).status_code == 403


def test_the_servers_own_origin_is_allowed(client):
    assert client.get("/api/home", headers={**OWN, "Origin": f"http://127.0.0.1:{PORT}"}).status_code == 200


@pytest.mark.parametrize("path", ["/api/kata/..%2F..%2Fsolutions%2F01_attention/file",
                                  "/api/kata/%2Fetc%2Fpasswd/file", "/api/kata/../../etc/passwd",
                                  "/api/kata/solutions/file", "/api/kata/..%2Fgraders/file",
                                  "/static/..%2F..%2Fcli%2Fapp.py", "/static/../server.py",
                                  "/static/%2Fetc%2Fpasswd", "/api/kata/01/..%2F..%2F..%2Fsolutions"])
def test_no_path_a_request_names_reaches_another_file(client, path):
    response = client.get(path, headers=OWN)
    assert response.status_code in (400, 404, 405), (path, response.status_code)
    assert "Reference solution" not in response.text and "root:" not in response.text
    assert "def create_app" not in response.text


def test_a_symlinked_kata_file_is_neither_read_nor_written(client, root):
    target = learner_file(root)
    target.unlink()
    target.symlink_to(ATTENTION.solution_path)
    assert client.get("/api/kata/01/file", headers=OWN).status_code == 403
    saved = client.post("/api/kata/01/save", headers=OWN, json={"text": "x", "base": "", "force": True})
    assert saved.status_code == 403 and ATTENTION.solution_path.read_text() == SOLUTION


def other_addresses() -> set[str]:
    """This machine's IPv4 addresses other than loopback: the host name's, and the one it
    would send from to a documentation address (a UDP connect sends nothing)."""
    found = {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)}
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.254", 9))
        found.add(probe.getsockname()[0])
    except OSError:
        pass
    finally:
        probe.close()
    return {a for a in found if not a.startswith("127.") and a != "0.0.0.0"}


def test_kata_serve_binds_to_the_loopback_address_only(root):
    """`kata serve --port 0` prints an address on 127.0.0.1; the same port on another
    address of this machine is closed."""
    process = subprocess.Popen([sys.executable, "-m", "graders.frontends.cli", "serve", "--no-browser",
                                "--port", "0"], cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "KATA_ROOT": str(root)})
    try:
        line = process.stdout.readline()
        url = re.search(r"http://(\S+?):(\d+)/\?token=(\S+)", line)
        assert url and url.group(1) == "127.0.0.1", line
        port = int(url.group(2))
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        for address in other_addresses():
            with pytest.raises(OSError):
                socket.create_connection((address, port), timeout=2).close()
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_port_in_use_is_said_in_one_line(root):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        done = subprocess.run([sys.executable, "-m", "graders.frontends.cli", "serve", "--no-browser",
                               "--port", str(taken.getsockname()[1])], cwd=REPO_ROOT, capture_output=True,
                              text=True, timeout=120, env={**os.environ, "KATA_ROOT": str(root)})
    finally:
        taken.close()
    assert done.returncode == 1 and "cannot listen on 127.0.0.1:" in done.stdout
    assert "Traceback" not in done.stderr


# -- the room trial's security probe (2026-11-28), each request as the trial sent it --

POLICY = ("content-security-policy", "x-frame-options", "x-content-type-options", "referrer-policy")


@pytest.fixture
def outside(tmp_path_factory) -> Path:
    """A file outside the checkout (the trial used /etc/passwd)."""
    path = tmp_path_factory.mktemp("elsewhere") / "passwd"
    path.write_text("root:x:0:0:root:/root:/bin/bash\n")
    return path


def nothing_leaked(response, outside: Path) -> None:
    assert "root:x:0:0" not in response.text


def test_reset_then_restore_never_goes_through_a_symlinked_kata_file(client, root, outside):
    target = learner_file(root)
    target.unlink()
    target.symlink_to(outside)
    for route in ("reset", "restore", "save", "check", "set-aside"):
        response = client.post(f"/api/kata/01/{route}", headers=OWN,
                               json={"text": "pwned", "base": "", "force": True})
        assert response.status_code == 403, (route, response.status_code)
        nothing_leaked(response, outside)
    for path in ("/api/kata/01", "/api/kata/01/file"):
        response = client.get(path, headers=OWN)
        assert response.status_code == 403 and "root:x:0:0" not in response.text
    assert outside.read_text() == "root:x:0:0:root:/root:/bin/bash\n"
    assert target.is_symlink() and not (root / ".kata" / "backups").exists()  # nothing backed up
    home = client.get("/api/home", headers=OWN)
    assert home.status_code == 200  # the other katas still work


def test_a_symlinked_kata_folder_is_refused(client, root, tmp_path_factory):
    """katas/02_heads -> a copy of the references (the trial overwrote a solution so)."""
    heads = registry.get("02")
    elsewhere = tmp_path_factory.mktemp("solutions") / heads.name
    shutil.copytree(root / "katas" / heads.name, elsewhere)
    reference = elsewhere / heads.file
    reference.write_text("# the reference\n")
    shutil.rmtree(root / "katas" / heads.name)
    (root / "katas" / heads.name).symlink_to(elsewhere, target_is_directory=True)
    for route in ("save", "reset", "restore", "check"):
        response = client.post(f"/api/kata/02/{route}", headers=OWN,
                               json={"text": "pwned", "base": "", "force": True})
        assert response.status_code == 403, (route, response.status_code)
    assert client.get("/api/kata/02/file", headers=OWN).status_code == 403
    assert client.get("/api/kata/02", headers=OWN).status_code == 403
    assert reference.read_text() == "# the reference\n"


def test_a_hard_linked_kata_file_is_refused(client, root, outside):
    target = learner_file(root)
    target.unlink()
    os.link(outside, target)
    assert client.get("/api/kata/01/file", headers=OWN).status_code == 403
    for route in ("reset", "restore", "save"):
        response = client.post(f"/api/kata/01/{route}", headers=OWN, json={"text": "x", "base": "", "force": True})
        assert response.status_code == 403 and "root:x:0:0" not in response.text
    assert outside.read_text() == "root:x:0:0:root:/root:/bin/bash\n"
    assert not (root / ".kata" / "backups").exists()


def test_backups_are_never_read_through_a_link(client, root, outside):
    folder = root / ".kata" / "backups" / ATTENTION.name
    folder.mkdir(parents=True)
    (folder / "attention-20990101-000000.py").symlink_to(outside)  # the newest, by name
    os.link(outside, folder / "attention-20990101-000001.py")
    restored = client.post("/api/kata/01/restore", headers=OWN, json={})
    assert restored.status_code == 200 and "root:x:0:0" not in restored.text
    assert "root:x:0:0" not in learner_file(root).read_text()
    shutil.rmtree(folder)
    folder.symlink_to(outside.parent, target_is_directory=True)  # the backups folder itself
    for route in ("restore", "reset", "set-aside"):
        page = opened(client)
        client.post("/api/kata/01/save", headers=OWN, json={"text": "mine\n", "base": page["sha"]})
        response = client.post(f"/api/kata/01/{route}", headers=OWN, json={"text": "x"})
        assert response.status_code == 403 and "root:x:0:0" not in response.text, route
    assert sorted(p.name for p in outside.parent.iterdir()) == ["passwd"]


def test_saving_keeps_the_files_mode(client, root):
    path = learner_file(root)
    for mode in (0o644, 0o640):
        path.chmod(mode)
        page = opened(client)
        assert client.post("/api/kata/01/save", headers=OWN,
                           json={"text": f"# {mode:o}\n", "base": page["sha"]}).status_code == 200
        assert path.read_text() == f"# {mode:o}\n" and (path.stat().st_mode & 0o777) == mode
    client.post("/api/kata/01/reset", headers=OWN, json={})
    assert (path.stat().st_mode & 0o777) == 0o640


def test_request_bodies_are_bounded(client, root):
    before = learner_file(root).read_bytes()
    big = {"text": "x" * (2 << 20), "base": "", "force": True}
    response = client.post("/api/kata/01/save", headers=OWN, json=big)
    assert response.status_code == 413 and all(h in response.headers for h in POLICY)

    def streamed():  # no Content-Length: counted as it arrives
        yield b'{"text": "'
        for _ in range(20):
            yield b"x" * 100_000
        yield b'", "force": true}'

    response = client.post("/api/kata/01/save", headers={**OWN, "Content-Type": "application/json"},
                           content=streamed())
    assert response.status_code == 413 and "MiB" in response.json()["error"]
    assert learner_file(root).read_bytes() == before


@pytest.mark.parametrize("minutes", ["Infinity", "NaN", "-Infinity", "-5", "0", "1e9", "601", '"30"', "true"])
def test_a_mocks_minutes_are_finite_and_sane(client, root, minutes):
    response = client.post("/api/mock/start", headers={**OWN, "Content-Type": "application/json"},
                           content=f'{{"kata": "05", "minutes": {minutes}}}')
    assert response.status_code == 400, response.text
    assert client.get("/api/mock", headers=OWN).json()["mock"] is None
    assert client.get("/api/report", headers=OWN).status_code == 200


@pytest.mark.parametrize("bad", ["Infinity", "NaN", '"soon"', "1e400", "-3"])
def test_a_state_file_holding_a_bad_number_is_repaired(client, root, bad):
    (root / ".kata").mkdir()
    (root / ".kata" / "state.json").write_text(
        '{"version": 1, "mock": {"kata": "05_positional_encoding", "started": 1750000000, '
        f'"deadline": {bad}, "minutes": {bad}}}, "mocks": [{{"kata": "05_positional_encoding", '
        f'"started": "2025-06-16T09:00:00", "minutes": {bad}, "taken_s": {bad}, "outcome": "aborted", '
        '"status": "not started", "slugs": []}], "time": {"05_positional_encoding": {"total_s": '
        f'{bad}, "last": {bad}}}}}')
    for path in ("/api/home", "/api/report", "/api/mock", "/api/kata/05"):
        assert client.get(path, headers=OWN).status_code == 200, path
    done = subprocess.run([sys.executable, "-m", "graders.frontends.cli", "report"], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "KATA_ROOT": str(root)})
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


def test_a_bad_kata_key_is_a_404_without_touching_the_file_system(client, monkeypatch):
    def no_resolving(self, *args, **kwargs):
        raise AssertionError(f"resolved {self}")

    monkeypatch.setattr(Path, "resolve", no_resolving)
    for key in ("01%00", "%00", "nosuchkata", "01%00..%2F", "a" * 300):
        response = client.get(f"/api/kata/{key}/file", headers=OWN)
        assert response.status_code == 404, (key, response.status_code)
        assert all(h in response.headers for h in POLICY)


def test_deeply_nested_json_is_a_400(client):
    nested = "[" * 100_000 + "]" * 100_000
    for path in ("/api/kata/01/save", "/api/mock/start", "/api/kata/01/quiz"):
        response = client.post(path, headers={**OWN, "Content-Type": "application/json"},
                               content=f'{{"text": {nested}}}')
        assert response.status_code == 400, (path, response.status_code)
        assert all(h in response.headers for h in POLICY)


def test_refusals_carry_the_security_headers(client):
    refusals = [client.get("/api/home", headers={"Host": OWN["Host"]}),  # 401
                client.get("/api/home", headers={**OWN, "Host": "evil.example"}),  # 403
                client.post("/api/kata/01/save", headers={**OWN, "Origin": "http://evil.example"}, json={}),
                client.get("/api/kata/99/file", headers=OWN),  # 404
                client.post("/api/kata/01/save", headers=OWN, content=b"x" * ((1 << 20) + 1)),  # 413
                client.post("/api/kata/01/save", headers=OWN, content=b"{not json")]  # 400
    assert [r.status_code for r in refusals] == [401, 403, 403, 404, 413, 400]
    for response in refusals:
        assert all(h in response.headers for h in POLICY), (response.status_code, response.headers)
        assert response.headers["x-frame-options"] == "DENY"


def test_a_slow_check_never_blocks_the_rest_of_the_room(root):
    """While one tab's check grades (a grader that waits), another tab's hint, file read and
    home page answer at once."""
    import threading
    import time

    release, started = threading.Event(), threading.Event()

    def slow_grader(kata, path):
        started.set()
        release.wait(30)
        return stand_in_grader(kata, path)

    client = TestClient(server.create_app(root, TOKEN, port=PORT, grader=slow_grader),
                        base_url=f"http://127.0.0.1:{PORT}")
    page = opened(client)
    checking = threading.Thread(target=lambda: client.post(
        "/api/kata/01/check", headers=OWN, json={"text": MISSING_SCALE, "base": page["sha"]}))
    checking.start()
    try:
        assert started.wait(30)
        for method, path in (("POST", "/api/kata/01/hint"), ("GET", "/api/kata/01/file"),
                             ("GET", "/api/kata/02"), ("GET", "/api/home"), ("POST", "/api/kata/02/hint"),
                             ("GET", "/api/report")):
            begun = time.monotonic()
            response = client.request(method, path, headers=OWN, json={} if method == "POST" else None)
            assert response.status_code == 200 and time.monotonic() - begun < 2, (path, time.monotonic() - begun)
    finally:
        release.set()
        checking.join(30)


FORKS = "import os, time\nif os.fork() == 0:\n    open(os.environ['KATA_PID_FILE'], 'a').write(f'{os.getpid()}\\n')\n    time.sleep(400)\n"


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, IndexError):
        return False


def test_code_that_forks_is_stopped_with_its_process_group(graded_client, root, monkeypatch, tmp_path):
    import time

    pids = tmp_path / "pids"
    monkeypatch.setenv("KATA_PID_FILE", str(pids))
    page = opened(graded_client)
    begun = time.monotonic()
    verdict = graded_client.post("/api/kata/01/check", headers=OWN,
                                 json={"text": SOLUTION + FORKS, "base": page["sha"]}).json()["verdict"]
    assert time.monotonic() - begun < 60
    assert "child process" in verdict["note"] and "endless loop" not in str(verdict)
    assert verdict["passed"]  # the real result, kept
    forked = [int(line) for line in pids.read_text().split()]
    assert forked
    time.sleep(0.5)
    assert not any(alive(pid) for pid in forked), "an orphan was left running"


def test_the_browser_is_opened_on_a_private_redirect_file_never_on_the_token(root, tmp_path):
    """A stand-in BROWSER records its command line: no token there; the file it is given is
    the learner's alone (0600 in a 0700 folder) and holds the tokened address."""
    import time

    record = tmp_path / "browser"
    fake = tmp_path / "fakebrowser"
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$RECORD.argv"\nf="${1#file://}"\n'
                    'stat -c %a "$f" > "$RECORD.mode"\nstat -c %a "$(dirname "$f")" > "$RECORD.dirmode"\n'
                    'cat "$f" > "$RECORD.page"\n')
    fake.chmod(0o755)
    process = subprocess.Popen([sys.executable, "-m", "graders.frontends.cli", "serve", "--port", "0"],
                               cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "KATA_ROOT": str(root), "BROWSER": f"{fake} %s",
                                    "RECORD": str(record)})
    try:
        line = process.stdout.readline()
        token = re.search(r"token=(\S+)", line).group(1)
        deadline = time.monotonic() + 60
        while not Path(f"{record}.page").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.3)
        argv = Path(f"{record}.argv").read_text()
        assert token not in argv and argv.startswith("file://"), argv
        assert Path(f"{record}.mode").read_text().strip() == "600"
        assert Path(f"{record}.dirmode").read_text().strip() == "700"
        assert f"token={token}" in Path(f"{record}.page").read_text()
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_the_room_gives_its_own_advice_never_the_commands(client, root):
    """Messages the room relays say what to press (Hand in, Restore), not `kata mock --submit`
    or `kata restore 01 --list`, in both languages."""
    for language in ("en", "zh-CN"):
        said = []
        said.append(client.post("/api/kata/01/restore", headers=OWN, params={"lang": language}, json={}).json()["message"])
        page = opened(client)
        client.post("/api/kata/01/save", headers=OWN, json={"text": "mine\n", "base": page["sha"]})
        client.post("/api/mock/start", headers=OWN, params={"lang": language}, json={"kata": "01", "minutes": 5})
        for route in ("restore", "solution"):
            said.append(client.post(f"/api/kata/01/{route}", headers=OWN, params={"lang": language}, json={}).json()["error"])
        said.append(client.post("/api/mock/start", headers=OWN, params={"lang": language},
                                json={"kata": "02"}).json()["error"])
        said.append(client.post("/api/mock/abort", headers=OWN, params={"lang": language}, json={}).json()["message"])
        said.append(client.post("/api/mock/submit", headers=OWN, params={"lang": language}, json={}).json()["error"])
        for text in said:
            assert "kata mock" not in text and "kata restore" not in text and "--" not in text, text
        assert ("Restore" if language == "en" else "恢复") in said[-2]
        shutil.rmtree(root / ".kata")


def test_the_rooms_quiz_shows_small_tolerances_and_the_asked_decimals(client):
    questions = client.get("/api/kata/16/quiz", headers=OWN).json()["questions"]
    number = next(q["number"] for q in questions if "0.5%" in q["format"])
    marks = client.post("/api/kata/16/quiz", headers=OWN, json={"answers": {str(number): "0.8"}}).json()["marks"]
    text = marks[number - 1]["text"]
    assert "0.865" in text and "0.8649548767993754" not in text


def test_a_chinese_mock_page_shows_the_follow_ups_without_answers(client):
    """Kata 16's Chinese README titles its follow-ups 面试官的追问 and answers in full-width
    parentheses: during its mock the room shows the questions alone."""
    readme = registry.get("16").readme_path.with_name("README.zh-CN.md").read_text(encoding="utf-8")
    answer = re.search(r"（([^（）]{6,})）", readme.split("## 面试官")[1]).group(1)
    assert answer[:6] in opened(client, "16", lang="zh-CN")["readme"]  # shown outside a mock
    client.post("/api/mock/start", headers=OWN, json={"kata": "16", "minutes": 5})
    page = opened(client, "16", lang="zh-CN")
    assert "面试官" in page["readme"] and answer[:6] not in page["readme"]


def test_a_mock_page_shows_no_mistake_names(client):
    """The room's mock page of kata 02, in both languages: the README's list of the
    mistakes the grader names is shown outside a mock, not during one."""
    for language in ("en", "zh-CN"):
        assert "[heads-interleaved]" in opened(client, "02", lang=language)["readme"]
    client.post("/api/mock/start", headers=OWN, json={"kata": "02", "minutes": 5})
    for language in ("en", "zh-CN"):
        page = opened(client, "02", lang=language)
        assert "heads-interleaved" not in page["readme"] and page["mock"]["kata"] == "02_heads"


def test_the_rooms_report_advises_with_its_buttons(client, root):
    page = opened(client)
    client.post("/api/kata/01/check", headers=OWN, json={"text": MISSING_SCALE, "base": page["sha"]})
    client.post("/api/kata/02/solution", headers=OWN, json={})
    for language in ("en", "zh-CN"):
        report = client.get("/api/report", headers=OWN, params={"lang": language}).json()["markdown"]
        assert "01_attention" in report and "02_heads" in report
        for command in ("kata hint", "kata mock", "kata list"):
            assert command not in report, (language, command, report)


# -- the room trial of 2026-12-01: each defect, sent as the trial sent it --

def test_review_as_a_mock_starts_the_mock_and_answers_it(client, root):
    """Defect 1: POST /api/review/start {"kata": "01", "mock": true} answered 500 (the room's
    words lacked "mock.started") after it had started the mock."""
    learner_file(root).write_text(MISSING_SCALE)
    response = client.post("/api/review/start", headers=OWN, json={"kata": "01", "mock": True})
    assert response.status_code == 200, response.text
    data = response.json()
    assert data["mock"]["id"] == "01" and "Hand in" in data["message"], data
    assert "kata mock" not in data["message"]  # the room's words, naming its buttons


def test_every_message_the_service_says_has_the_rooms_words():
    from graders.frontends.cli import words as cli_words
    from graders.frontends.serve import words as room_words

    # restore.no_such: a backup chosen by number, which only the CLI offers
    assert set(cli_words.WORDS) - set(room_words.WORDS) == {"restore.no_such"}


@pytest.mark.parametrize("route", ["save", "check", "run", "set-aside"])
def test_a_lone_surrogate_in_the_text_is_refused_with_a_sentence(client, root, route):
    """Problem 2: {"text": "\\ud800"} gave a 500 (UnicodeEncodeError) on these four routes."""
    before = learner_file(root).read_bytes()
    page = opened(client)
    body = '{"text": "x = 1\\n\\ud800", "base": "%s"}' % page["sha"]
    response = client.post(f"/api/kata/01/{route}", headers={**OWN, "Content-Type": "application/json"},
                           content=body.encode())
    assert response.status_code == 400, response.text
    assert "surrogate" in response.json()["error"] and "line 2" in response.json()["error"]
    assert learner_file(root).read_bytes() == before and not (root / ".kata" / "backups").exists()
    zh = client.post(f"/api/kata/01/{route}", headers={**OWN, "Content-Type": "application/json"},
                     params={"lang": "zh-CN"}, content=body.encode()).json()["error"]
    assert re.search(r"[\u4e00-\u9fff]", zh) and "surrogate" not in zh, zh


def test_an_unexpected_failure_is_answered_with_a_sentence(root):
    def broken(kata, path):
        raise RuntimeError("boom")

    client = TestClient(server.create_app(root, TOKEN, port=PORT, grader=broken),
                        base_url=f"http://127.0.0.1:{PORT}", raise_server_exceptions=False)
    page = opened(client)
    response = client.post("/api/kata/01/check", headers=OWN, json={"text": "x = 1\n", "base": page["sha"]})
    assert response.status_code == 500 and "RuntimeError" in response.json()["error"], response.text


def test_backups_are_bounded_oldest_dropped_with_a_message(client, root):
    """Problem 3: 200 set-asides of 0.5 MB each made 200 backup files (100 MB)."""
    from graders.practice.workspace import MAX_BACKUP_BYTES, MAX_BACKUPS

    said = []
    for number in range(MAX_BACKUPS + 5):
        response = client.post("/api/kata/03/set-aside", headers=OWN, json={"text": f"# {number}\n"})
        assert response.status_code == 200
        said.append(response.json()["message"])
    folder = root / ".kata" / "backups" / registry.get("03").name
    kept = sorted(folder.iterdir())
    assert len(kept) == MAX_BACKUPS and "oldest backups" in said[-1] and "oldest" not in said[0]
    texts = {path.read_text() for path in kept}
    assert "# 0\n" not in texts and f"# {MAX_BACKUPS + 4}\n" in texts  # the oldest went
    big = "#" * (900 << 10)
    for _number in range(30):
        assert client.post("/api/kata/03/set-aside", headers=OWN, json={"text": big}).status_code == 200
    assert sum(path.stat().st_size for path in folder.iterdir()) <= MAX_BACKUP_BYTES
    for readme, newest, size in (("README.md", f"{MAX_BACKUPS} newest", f"{MAX_BACKUP_BYTES >> 20} MiB"),
                                 ("README.zh-CN.md", f"最新的 {MAX_BACKUPS} 个", f"{MAX_BACKUP_BYTES >> 20} MiB")):
        text = " ".join((REPO_ROOT / readme).read_text(encoding="utf-8").split())
        assert newest in text and size in text, readme  # the READMEs say the bounds


def test_the_pad_at_0_00_is_saved_then_handed_in_and_graded(root):
    """Defect 4: at 0:00 the page saves the editor, then hands in; the server had handed the
    mock in at the start of that save (grading the skeleton)."""
    now = [1_750_000_000.0]
    client = TestClient(server.create_app(root, TOKEN, port=PORT, grader=stand_in_grader,
                                          clock=lambda: now[0]), base_url=f"http://127.0.0.1:{PORT}")
    client.post("/api/mock/start", headers=OWN, json={"kata": "01", "minutes": 1})
    page = opened(client)
    now[0] += 62  # the page's clock ran out; its save and hand-in follow at once
    saved = client.post("/api/kata/01/save", headers=OWN, json={"text": SOLUTION, "base": page["sha"]})
    assert saved.status_code == 200 and learner_file(root).read_text() == SOLUTION
    submitted = client.post("/api/mock/submit", headers=OWN, json={}).json()
    assert submitted["record"]["outcome"] == "time ran out"
    assert submitted["record"]["status"] == "all passed" and submitted["verdict"]["passed"], submitted
    assert "graded as it stood: all passed" in submitted["message"]


def test_a_review_started_of_a_kata_not_due_has_a_reason_and_the_next_one_is_said(client, root):
    """Defect 6: a review of a kata not due had no reason ("2026-12-01: "), home never said
    "under way", and nothing when no review was due (kata review: "Next: ... on ...")."""
    assert client.post("/api/review/start", headers=OWN, json={"kata": "05"}).status_code == 200
    home = client.get("/api/home", headers=OWN).json()
    started = [r for r in home["reviews_due"] if r["id"] == "05"]
    assert started and started[0]["why"] == "started by you" and started[0]["started"], home["reviews_due"]
    zh = client.get("/api/home", headers=OWN, params={"lang": "zh-CN"}).json()["reviews_due"][0]["why"]
    assert re.search(r"[\u4e00-\u9fff]", zh), zh
    state = json.loads((root / ".kata" / "state.json").read_text())
    state["reviews"]["05_positional_encoding"].update(started=None, due="2999-01-01")
    (root / ".kata" / "state.json").write_text(json.dumps(state))
    home = client.get("/api/home", headers=OWN).json()
    assert not home["reviews_due"]
    assert home["review_next"] == "Nothing is due for review today. Next: 05_positional_encoding on 2999-01-01."


def test_run_is_offered_only_where_the_readme_has_an_example(client):
    assert opened(client, "01")["has_example"] is True
    assert opened(client, "07")["has_example"] is False


def test_the_redirect_file_goes_once_read_and_on_sigterm_and_no_browser_makes_no_folder(root, tmp_path):
    """Problem 4: after SIGTERM the redirect file (with the dead token) was left behind, every
    --no-browser room made an empty kata-serve-* folder, and the file stayed while the room ran."""
    import signal
    import time
    import urllib.request

    fake = tmp_path / "fakebrowser"
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$1" > "$RECORD"\n')
    fake.chmod(0o755)
    for browser in (True, False):
        temporary = tmp_path / f"tmp-{browser}"
        temporary.mkdir()
        record = tmp_path / f"opened-{browser}"
        process = subprocess.Popen([sys.executable, "-m", "graders.frontends.cli", "serve", "--port", "0",
                                    *([] if browser else ["--no-browser"])],
                                   cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True,
                                   env={**os.environ, "KATA_ROOT": str(root), "BROWSER": f"{fake} %s",
                                        "RECORD": str(record), "TMPDIR": str(temporary)})
        try:
            url = re.search(r"http://\S+", process.stdout.readline()).group(0)
            if browser:
                deadline = time.monotonic() + 60
                while not record.exists() and time.monotonic() < deadline:
                    time.sleep(0.1)
                time.sleep(0.2)
                redirect = Path(record.read_text().strip().removeprefix("file://"))
                assert redirect.is_file()
                with urllib.request.urlopen(url, timeout=30) as answer:  # the browser follows it
                    assert answer.status == 200
                assert not redirect.exists(), "the token file outlived the browser's visit"
            else:
                time.sleep(1)
                assert not list(temporary.glob("kata-serve-*")), list(temporary.iterdir())
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        assert not list(temporary.glob("kata-serve-*")), list(temporary.iterdir())


def test_a_sigterm_removes_a_redirect_file_the_browser_never_read(root, tmp_path):
    import signal
    import time

    fake = tmp_path / "fakebrowser"
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$1" > "$RECORD"\n')
    fake.chmod(0o755)
    record, temporary = tmp_path / "opened", tmp_path / "tmp"
    temporary.mkdir()
    process = subprocess.Popen([sys.executable, "-m", "graders.frontends.cli", "serve", "--port", "0"],
                               cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "KATA_ROOT": str(root), "BROWSER": f"{fake} %s",
                                    "RECORD": str(record), "TMPDIR": str(temporary)})
    try:
        process.stdout.readline()
        deadline = time.monotonic() + 60
        while not record.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert list(temporary.glob("kata-serve-*/open-the-practice-room.html"))
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert not list(temporary.glob("kata-serve-*"))
