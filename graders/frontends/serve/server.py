"""`kata serve`: the practice room in the browser, a Starlette app served by uvicorn.

Every route works through the practice service (graders.practice: state, files, backups,
grading and recording, reset, restore, solution, mocks, hints, quizzes, the report), as the
`kata` command does, and serializes what it returns; its messages and refusals are worded
in the room's own words (graders.frontends.serve.words). Only the grading differs in where
it runs: in a subprocess with a time limit (graders.frontends.serve.grading), so that an
endless loop or a crash in the learner's code gives a verdict and leaves the server running.

One learner, one server, several tabs: a route that writes a kata's file holds that
kata's lock (a check of one kata never waits for another's, and hints, reads and the home
page hold none); the mock's routes hold the room's lock. Each route runs in its own thread,
in the language the page asks for (``lang``, for that thread alone). Security:
graders.frontends.serve.security.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import re
import threading
import time
from pathlib import Path
from typing import Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from graders.core import i18n, registry
from graders.core.i18n import _, sentences, translate
from graders.core.registry import Kata
from graders.core.results import FAILING
from graders.frontends.serve import running, security, verdicts, words
from graders.practice import (FILE_MISSING, MINUTES_RANGE, TIME_RAN_OUT, Practice, Refused,
                              UsageError, clock_time, countdown, difficulty_word, dropped_words,
                              hint_level, hint_level_word, last_attempt, minutes_allowed,
                              mock_readme, outcome_word, progress_line, progress_words, resolve,
                              review_reason_word, tracks)
from graders.frontends.serve.grading import grade_in_subprocess

STATIC = Path(__file__).with_name("static")


class Failure(Exception):
    """A request that cannot be done: answered with ``status`` and ``message``."""

    def __init__(self, status: int, message: str, **extra):
        super().__init__(message)
        self.status, self.message, self.extra = status, message, extra


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# A kata key as a request names it ("01", "1", "attention", "01_attention"): nothing else
# reaches registry.get, and never the file system.
KATA_KEY = re.compile(r"\s*[A-Za-z0-9_-]{1,40}\s*")
# Seconds past a mock's deadline before a request hands it in itself: the page's hand-in at
# 0:00 saves what is in the editor, then hands in (recorded as "time ran out", graded).
MOCK_GRACE_S = 15.0


class RoomApp(Practice):
    """The practice service as the room uses it: a kata's file, README and backups only where they are
    this checkout's own (graders.frontends.serve.security): a symlinked or hard-linked file,
    a symlinked kata folder or backups folder is refused (403) before anything is read or
    written, in every route (reset, restore and mocks use these too)."""

    def learner_file(self, kata: Kata) -> Path:
        path = super().learner_file(kata)
        if not security.own_file(path, self.root / "katas" / kata.name):
            raise Failure(403, _("refused: {file} is not a plain file in its kata's folder",
                                 file=self.show_path(path)))
        return path

    def readme(self, kata: Kata) -> Path:
        path = super().readme(kata)
        folder = self.root / "katas" / kata.name
        if path.parent == folder and not security.own_file(path, folder):
            raise Failure(403, _("refused: {file} is not a plain file in its kata's folder",
                                 file=self.show_path(path)))
        return path

    def status_now(self, state: dict, kata: Kata, source: str, announce) -> tuple:
        """As App.status_now, but a kata whose file a route holds (a check grades it now) is
        not graded a second time, nor waited for: its last known status (the home page and
        the report answer at once)."""
        lock = self.room.kata_lock(kata)
        if not lock.acquire(blocking=False):
            latest = last_attempt(state, kata)
            return self.known_status(state, kata) or (latest or {}).get("status", FAILING), None
        try:
            return super().status_now(state, kata, source, announce)
        finally:
            lock.release()

    def _own_backups(self, kata: Kata) -> None:
        if not security.own_folders(self.root, ".kata", "backups", kata.name):
            raise Failure(403, _("refused: {folder} is not a plain folder of this checkout",
                                 folder=f".kata/backups/{kata.name}"))

    def backup(self, kata: Kata, data: bytes | None = None) -> Path:
        self._own_backups(kata)
        return super().backup(kata, data)

    def backups(self, kata: Kata) -> list[Path]:
        self._own_backups(kata)
        return [path for path in super().backups(kata) if security.plain_file(path)]


class Room:
    """The server's state: the repository copy, the token, the locks; ``grader`` grades a
    kata's file (a subprocess by default)."""

    def __init__(self, root: Path, token: str, *, grader: Callable | None = None,
                 clock: Callable[[], float] = time.time):
        self.root, self.token, self.clock = root, token, clock
        self.grader = grader or grade_in_subprocess
        self.lock = threading.RLock()  # the room's: the mock's routes
        self._kata_locks: dict[str, threading.Lock] = {}
        self._locks_lock = threading.Lock()

    def kata_lock(self, kata: Kata) -> threading.Lock:
        """The lock of ``kata``'s file: held by the routes that write it (never wanted while
        holding it: the room's lock comes first)."""
        with self._locks_lock:
            return self._kata_locks.setdefault(kata.name, threading.Lock())

    def app(self) -> RoomApp:
        app = RoomApp(root=self.root, clock=self.clock, rng=random.Random(), grader=self.grader,
                      front_end="room")
        app.room = self
        return app

    def kata_file(self, app: Practice, kata: Kata) -> Path:
        path = app.learner_file(kata)
        if not security.own_file(path, self.root / "katas" / kata.name):
            raise Failure(403, _("refused: {file} is not a plain file in its kata's folder",
                                 file=app.show_path(path)))
        return path

    def read_file(self, app: Practice, kata: Kata) -> dict:
        path = self.kata_file(app, kata)
        data = path.read_bytes() if path.is_file() else b""
        return {"text": data.decode("utf-8", errors="replace"), "sha": sha(data),
                "exists": path.is_file()}

    def save(self, app: Practice, kata: Kata, body: dict) -> dict:
        """Write the editor's text to the kata's file, unless the file changed on disk since
        the editor loaded it (``base``: its sha then) and ``force`` is not set: a 409 with the
        text on disk, so that the page offers it and loses neither."""
        path = self.kata_file(app, kata)
        data = editor_bytes(body)
        current = self.read_file(app, kata)
        if current["sha"] != body.get("base") and not body.get("force") and current["exists"]:
            raise Failure(409, _("{file} was changed on disk by another editor since the room "
                                 "loaded it", file=app.show_path(path)), disk=current)
        if data != path.read_bytes() if path.is_file() else True:
            app.write_file(kata, data)
        return {"sha": sha(data)}


def editor_bytes(body: dict) -> bytes:
    """The editor's text a request carries (``text``), as the UTF-8 bytes to write; a 400
    when there is none, or when it holds a lone surrogate (JSON's "\\ud800", which no file
    can hold)."""
    text = body.get("text")
    if not isinstance(text, str):
        raise Failure(400, _("refused: the request carries no editor text"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as error:
        line = text.count("\n", 0, error.start) + 1
        raise Failure(400, _("refused: the editor's text holds a character that is not valid "
                             "Unicode (a lone surrogate, on line {line}): nothing was saved",
                             line=line)) from None


def kata_summary(app: Practice, state: dict, kata: Kata, status: str) -> dict:
    return {"id": kata.id, "name": kata.name, "title": translate(kata.title), "status": status,
            "status_text": progress_words(status), "difficulty": difficulty_word(kata.difficulty),
            "minutes": kata.target_minutes, "hints": f"{hint_level(state, kata)}/{len(kata.hints)}"}


def mock_view(app: Practice, now: float) -> dict | None:
    mock = app.running_mock()
    if mock is None:
        return None
    kata = registry.get(mock["kata"])
    return {"kata": kata.name, "id": kata.id, "deadline": mock["deadline"], "now": now,
            "left_s": max(0.0, mock["deadline"] - now), "minutes": mock["minutes"],
            "left": countdown(mock["deadline"] - now)}


def create_app(root: Path, token: str, *, port: int = 8765, grader: Callable | None = None,
               clock: Callable[[], float] = time.time, extra_hosts: tuple[str, ...] = (),
               visited: Callable[[], None] = lambda: None) -> Starlette:
    """The room's web app for the repository copy at ``root``. ``extra_hosts``: further Host
    values to accept (the test client's "testserver"). ``visited``: called on every request
    that carried the token (the browser has followed the redirect file: it goes)."""
    room = Room(root, token, grader=grader, clock=clock)

    def endpoint(handler, lock: str | None = None):
        """``handler`` as a route. ``lock``: "kata" (the route writes the kata's file: its
        kata's lock), "room" (the mock's routes: the room's lock), None (none)."""
        async def route(request: Request) -> Response:
            language = request.query_params.get("lang") or i18n.ENGLISH
            if i18n.resolve(language) is None:
                language = i18n.ENGLISH
            try:
                body = await read_body(request, language) if request.method == "POST" else {}
            except Failure as failure:
                return JSONResponse({"error": failure.message}, status_code=failure.status)

            visited()

            def work():
                with i18n.speaking_here(language):
                    app = room.app()
                    try:
                        kata = None
                        if "key" in request.path_params:
                            kata = kata_named(request.path_params["key"])
                        settle(app)
                        held = (room.kata_lock(kata) if lock == "kata" and kata is not None
                                else room.lock if lock == "room" else contextlib.nullcontext())
                        with held:
                            return JSONResponse(handler(app, kata, body, request))
                    except Failure as failure:
                        return JSONResponse({"error": failure.message, **failure.extra},
                                            status_code=failure.status)
                    except Exception as error:  # noqa: BLE001 - a sentence, never a bare 500
                        import traceback

                        traceback.print_exc()  # the details, in the terminal kata serve runs in
                        return JSONResponse({"error": _(
                            "the room failed on this request ({error}); nothing more was done. "
                            "The terminal kata serve runs in shows the details.",
                            error=type(error).__name__)}, status_code=500)

            from starlette.concurrency import run_in_threadpool

            return await run_in_threadpool(work)
        return route

    async def read_body(request: Request, language: str) -> dict:
        """The request's JSON object: at most security.MAX_BODY bytes (a 413 past it, by its
        Content-Length or as it streams), no NaN or Infinity, no nesting too deep to parse
        (a 400); {} for an empty body or a JSON value that is no object."""
        with i18n.speaking_here(language):
            too_large = Failure(413, _("refused: a request larger than {size} MiB",
                                       size=security.MAX_BODY >> 20))
            not_json = Failure(400, _("refused: the request is not JSON"))
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > security.MAX_BODY:
                raise too_large
            chunks.append(chunk)
        raw = b"".join(chunks)
        if not raw.strip():
            return {}

        def no_constants(name: str):
            raise ValueError(name)

        try:
            body = json.loads(raw, parse_constant=no_constants)
        except (ValueError, RecursionError):
            raise not_json from None
        return body if isinstance(body, dict) else {}

    def kata_named(key: str) -> Kata:
        """The kata a request's key names; a 404 for anything else, the file system never
        asked (a NUL, a path, an unknown name)."""
        if not KATA_KEY.fullmatch(key):
            raise Failure(404, _("no kata called {name}", name=repr(key)))
        try:
            return resolve(key, paths=False)
        except UsageError as error:
            raise Failure(404, words.text(error)) from None

    def settle(app: Practice) -> None:
        """A mock past its deadline (and MOCK_GRACE_S: the page's own hand-in at 0:00 saves
        the editor first, and that save must land before) is handed in (graded) by the
        first request after it, under the room's lock; the others see it handed in."""
        mock = app.expired_mock(grace=MOCK_GRACE_S)
        if mock is None:
            return
        with room.lock, room.kata_lock(registry.get(mock["kata"])):
            if app.expired_mock(grace=MOCK_GRACE_S) is not None:  # not handed in before this one
                app.submit_mock()

    def home(app: Practice, _kata, _body, _request) -> dict:
        state = app.store.read()
        statuses, groups = {}, []
        for title, members in tracks(registry.KATAS):
            rows = []
            for kata in members:
                try:
                    status, _result = app.status_now(state, kata, "list", lambda note: None)
                except Failure:  # a symlinked file, say: not the room's to grade
                    status = FILE_MISSING
                statuses[kata.name] = status
                rows.append(kata_summary(app, state, kata, status))
            groups.append({"title": title, "katas": rows})
        upcoming = next((k.id for k in registry.KATAS if statuses[k.name] != "all passed"), None)
        state = app.store.read()  # with what was just graded
        today = app.today()
        return {"tracks": groups, "progress": progress_line(statuses), "next": upcoming,
                "mock": mock_view(app, room.clock()),
                # the same reviews `kata review` lists (graders.practice.review decides)
                "reviews_due": [{"id": r.kata.id, "name": r.kata.name, "due": r.due.isoformat(),
                                 "why": ", ".join(review_reason_word(w) for w in r.reasons),
                                 "started": r.started} for r in app.reviews_due(state, today)],
                "review_next": review_next(app, state, today),
                "recurring": [{"slug": r.slug, "katas": [k.id for k in r.katas],
                               "lesson": r.lesson} for r in app.recurring_mistakes(state)]}

    def review_next(app: Practice, state: dict, today) -> str | None:
        """When nothing is due today: the next review, as `kata review` says it (None when
        none is scheduled, or when one is due)."""
        upcoming = app.review_schedule(state)
        if not upcoming or upcoming[0].is_due(today):
            return None
        return _("Nothing is due for review today.") + " " + _(
            "Next: {kata} on {date}.", kata=upcoming[0].kata.name, date=upcoming[0].due.isoformat())

    def review_start(app: Practice, _kata, body: dict, _request) -> dict:
        """A review of the kata the body names: its file to the skeleton (backed up first),
        or a timed mock of it (``mock``)."""
        key = body.get("kata")
        if not isinstance(key, str):
            raise Failure(400, _("no kata called {name}", name=repr(key)))
        kata = kata_named(key)
        running = app.running_mock()
        if running is not None:
            raise Failure(409, words.text(UsageError(key="mock.running", kata=running["kata"])))
        app.learner_file(kata)  # its own file, or a 403 before anything is backed up
        with room.kata_lock(kata):
            outcome = app.start_review(kata, as_mock=bool(body.get("mock")))
        return {"message": "\n".join(words.text(said) for said in outcome.messages),
                "id": kata.id, "mock": mock_view(app, room.clock())}

    def texts(app: Practice, _kata, _body, _request) -> dict:
        return {"texts": verdicts.page_texts(), "mock": mock_view(app, room.clock())}

    def kata_page(app: Practice, kata: Kata, _body, _request) -> dict:
        state = app.store.read()
        mock = mock_view(app, room.clock())
        readme = app.readme(kata)
        source = readme.read_text(encoding="utf-8") if readme.is_file() else ""
        if mock and mock["kata"] == kata.name:
            source = mock_readme(source)
        return {**kata_summary(app, state, kata, app.known_status(state, kata) or ""),
                "file": app.show_path(app.learner_file(kata)), "readme": verdicts.markdown(source),
                "hints_total": len(kata.hints), "hints_used": hint_level(state, kata),
                "has_example": bool(running.example(source)),
                "backups": backups_count(app, kata), "mock": mock, **room.read_file(app, kata)}

    def backups_count(app: Practice, kata: Kata) -> int:
        try:
            return len(app.backups(kata))
        except Failure:  # a symlinked backups folder: none the room will use
            return 0

    def file_now(app: Practice, kata: Kata, _body, _request) -> dict:
        return room.read_file(app, kata)

    def save(app: Practice, kata: Kata, body: dict, _request) -> dict:
        return room.save(app, kata, body)

    def set_aside(app: Practice, kata: Kata, body: dict, _request) -> dict:
        """Keep the editor's text as a backup of the kata (before the page loads the file
        another editor changed): Restore, or kata restore, brings it back."""
        data = editor_bytes(body)
        room.kata_file(app, kata)
        backup = app.backup(kata, data)
        return {"message": _("the editor's text is backed up as {backup} (Restore brings it back)",
                             backup=app.show_path(backup)) + dropped_words(app.dropped_backups)}

    def check(app: Practice, kata: Kata, body: dict, _request) -> dict:
        saved = room.save(app, kata, body)
        result = app.grade(kata, "check")
        mock = mock_view(app, room.clock())
        return {**saved, "verdict": verdicts.verdict(result, hidden=bool(mock and mock["kata"] == kata.name))}

    def run(app: Practice, kata: Kata, body: dict, _request) -> dict:
        """The README's example against the editor's text (saved first, as Check does)."""
        saved = room.save(app, kata, body)
        return {**saved, "run": running.run_example(
            kata, room.kata_file(app, kata), app.readme(kata).read_text(encoding="utf-8"))}

    def hint(app: Practice, kata: Kata, _body, _request) -> dict:
        level, exhausted = app.reveal_next_hint(kata)
        rung = app.hint_rung(kata, level)
        answer = {"level": level, "total": rung["total"], "exhausted": exhausted,
                  "heading": _("hint {number}/{total} ({level}) - {kata}", number=level,
                               total=rung["total"], level=hint_level_word(rung["level"]),
                               kata=kata.name),
                  "text": rung["text"], "code": rung["code"]}
        mistake = app.last_mistake(kata)
        if mistake is not None:
            answer["mistake"] = {key: mistake[key] for key in ("slug", "explanation", "hint")}
        return answer

    def guarded(function):
        def handler(app: Practice, kata: Kata, body: dict, request) -> dict:
            try:
                return function(app, kata, body, request)
            except Refused as refusal:  # the room's own words for it
                raise Failure(409, words.text(refusal)) from None
            except UsageError as error:
                raise Failure(words.STATUS.get(error.key, 400), words.text(error)) from None
        return handler

    def reset(app: Practice, kata: Kata, _body, _request) -> dict:
        room.kata_file(app, kata)
        untouched = app.already_skeleton(kata)
        message = words.text(untouched) if untouched else words.lines(app.reset(kata).messages)
        return {"message": message, **room.read_file(app, kata)}

    def restore(app: Practice, kata: Kata, _body, _request) -> dict:
        room.kata_file(app, kata)
        message = words.lines(app.restore(kata).messages)  # the latest backup
        return {"message": message, **room.read_file(app, kata)}

    def solution(app: Practice, kata: Kata, _body, _request) -> dict:
        return {"solution": app.reveal_solution(kata),
                "message": _("Now close it and write it yourself: Reset, or a mock of {kata}.",
                             kata=kata.id)}

    def quiz_questions(app: Practice, kata: Kata, _body, _request) -> dict:
        return {"questions": [{**question, "prompt": verdicts.markdown(question["prompt"])}
                              for question in app.quiz_questions(kata)]}

    def quiz_mark(app: Practice, kata: Kata, body: dict, _request) -> dict:
        answers = body.get("answers") if isinstance(body.get("answers"), dict) else {}
        return app.quiz_mark(kata, answers)

    def mock_state(app: Practice, _kata, _body, _request) -> dict:
        return {"mock": mock_view(app, room.clock())}

    def mock_start(app: Practice, _kata, body: dict, _request) -> dict:
        """A mock of the kata the body names (or a random one), in the room's words."""
        minutes = body.get("minutes")
        if minutes is not None and not minutes_allowed(minutes):
            raise Failure(400, _("a mock interview takes {low} to {high} minutes",
                                 low=MINUTES_RANGE[0], high=MINUTES_RANGE[1]))
        key = body.get("kata")
        if key is not None and not isinstance(key, str):
            raise Failure(400, _("no kata called {name}", name=repr(key)))
        kata = kata_named(key) if key else None
        if kata is None and not body.get("random"):
            raise Failure(400, _("choose a kata for the mock interview, or a random one"))
        running = app.running_mock()
        if running is not None and (kata is None or kata.name != running["kata"]):
            raise Failure(409, words.text(UsageError(key="mock.running", kata=running["kata"])))
        if kata is not None:
            app.learner_file(kata)  # its own file, or a 403 before anything is backed up
        if running is None:  # a mock of the kata running already: shown, not started again
            with room.kata_lock(kata) if kata is not None else contextlib.nullcontext():
                chosen = app.choose_mock_kata(kata, random=True)
                app.start_mock(chosen, float(minutes) if minutes is not None else None)
        mock = mock_view(app, room.clock())
        return {"message": _("mock interview of {kata}: {time} (until {clock}). Edit the file, "
                             "then press Hand in; no hints and no solution until then.",
                             kata=mock["kata"], time=mock["left"],
                             clock=clock_time(mock["deadline"])) if mock else "",
                "mock": mock}

    def mock_submit(app: Practice, _kata, _body, _request) -> dict:
        state = app.store.read()
        if state["mock"] is not None:
            with room.kata_lock(registry.get(state["mock"]["kata"])):
                message = words.text(app.submit_mock().messages[-1])
        elif not (state["mocks"] and state["mocks"][-1].get("outcome") == TIME_RAN_OUT):
            raise Failure(400, words.text(UsageError(key="mock.none_to_submit")))
        else:  # its time ran out, and this request (or one before it) handed it in
            last = state["mocks"][-1]
            message = _("mock interview of {kata}: {outcome} after {minutes} min", kata=last["kata"],
                        outcome=outcome_word(TIME_RAN_OUT), minutes=f"{last['minutes']:g}")
        record = app.store.read()["mocks"][-1]
        result = app.cached_result(app.store.read(), registry.get(record["kata"]))
        return {"message": message, "record": record,
                "verdict": verdicts.verdict(result) if result else None}

    def mock_abort(app: Practice, _kata, _body, _request) -> dict:
        return {"message": sentences(*(words.text(said) for said in app.abort_mock().messages))}

    def report(app: Practice, _kata, _body, _request) -> dict:
        text = app.report_markdown(app.report(lambda note: None)).strip()
        return {"markdown": text, "html": verdicts.markdown(text)}

    def page(request: Request) -> Response:
        if "token" in request.query_params:  # the Guard let it in: the browser has the token
            visited()
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    def api(path: str, handler, methods=("GET",), lock: str | None = None) -> Route:
        return Route(path, endpoint(guarded(handler), lock), methods=list(methods))

    routes = [
        Route("/", page),
        api("/api/home", home),
        api("/api/texts", texts),
        api("/api/kata/{key}", kata_page),
        api("/api/kata/{key}/file", file_now),
        api("/api/kata/{key}/save", save, ("POST",), "kata"),
        api("/api/kata/{key}/check", check, ("POST",), "kata"),
        api("/api/kata/{key}/run", run, ("POST",), "kata"),
        api("/api/kata/{key}/set-aside", set_aside, ("POST",)),
        api("/api/kata/{key}/hint", hint, ("POST",)),
        api("/api/kata/{key}/reset", reset, ("POST",), "kata"),
        api("/api/kata/{key}/restore", restore, ("POST",), "kata"),
        api("/api/kata/{key}/solution", solution, ("POST",)),
        api("/api/kata/{key}/quiz", quiz_questions),
        api("/api/kata/{key}/quiz", quiz_mark, ("POST",)),
        api("/api/review/start", review_start, ("POST",), "room"),
        api("/api/mock", mock_state),
        api("/api/mock/start", mock_start, ("POST",), "room"),
        api("/api/mock/submit", mock_submit, ("POST",), "room"),
        api("/api/mock/abort", mock_abort, ("POST",), "room"),
        api("/api/report", report),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    hosts = {f"{security.LOOPBACK}:{port}", f"localhost:{port}", *extra_hosts}
    app = Starlette(routes=routes)
    app.add_middleware(security.Guard, token=token, hosts=hosts)
    return app
