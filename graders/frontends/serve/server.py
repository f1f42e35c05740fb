"""`kata serve`: the practice room in the browser, a Starlette app served by uvicorn.

Every route works through the `kata` command's own functions: the App (state, files,
backups, grading and recording), the commands' functions (cmd_reset, cmd_restore,
cmd_solution, cmd_mock, submit_mock, cmd_report) with their printed words captured, and
the hint ladder's reveal_next_hint. Only the grading differs in where it runs: in a
subprocess with a time limit (graders.frontends.serve.grading), so that an endless loop or a
crash in the learner's code gives a verdict and leaves the server running.

One learner, one server: the routes run one at a time (a lock), each in the language the
page asks for (``lang``). Security: graders.frontends.serve.security.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import random
import threading
import time
from pathlib import Path
from typing import Callable

from rich.console import Console
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from graders.core import i18n, registry
from graders.core.i18n import _, translate
from graders.core.registry import HINT_LEVELS, Kata
from graders.frontends import quiz as quiz_engine
from graders.frontends.cli.app import App
from graders.frontends.cli.common import (TIME_RAN_OUT, Refused, UsageError, countdown,
                                          difficulty_word, outcome_word,
                                          hint_level, hint_level_word, last_attempt,
                                          progress_line, progress_words, resolve, tracks)
from graders.frontends.serve import security, verdicts
from graders.frontends.serve.grading import grade_in_subprocess

STATIC = Path(__file__).with_name("static")


class Failure(Exception):
    """A request that cannot be done: answered with ``status`` and ``message``."""

    def __init__(self, status: int, message: str, **extra):
        super().__init__(message)
        self.status, self.message, self.extra = status, message, extra


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Room:
    """The server's state: the repository copy, the token, the lock; ``grader`` grades a
    kata's file (a subprocess by default)."""

    def __init__(self, root: Path, token: str, *, grader: Callable | None = None,
                 clock: Callable[[], float] = time.time):
        self.root, self.token, self.clock = root, token, clock
        self.grader = grader or grade_in_subprocess
        self.lock = threading.Lock()

    def app(self, output: io.StringIO | None = None) -> App:
        console = Console(file=output or io.StringIO(), width=100, no_color=True,
                          force_terminal=False, highlight=False)
        return App(root=self.root, console=console, clock=self.clock, rng=random.Random(),
                   grader=self.grader)

    def run_command(self, command, **arguments) -> str:
        """Run a `kata` command's function with ``arguments``; its printed words, or a
        Failure (409 refused, 400 a usage error)."""
        output = io.StringIO()
        try:
            command(self.app(output), argparse.Namespace(**arguments))
        except Refused as refusal:
            raise Failure(409, str(refusal)) from None
        except UsageError as error:
            raise Failure(400, str(error)) from None
        return output.getvalue().strip()

    def kata_file(self, app: App, kata: Kata) -> Path:
        path = app.learner_file(kata)
        if not security.own_file(path, self.root / "katas" / kata.name):
            raise Failure(403, _("refused: {file} is not a plain file in its kata's folder",
                                 file=app.show_path(path)))
        return path

    def read_file(self, app: App, kata: Kata) -> dict:
        path = self.kata_file(app, kata)
        data = path.read_bytes() if path.is_file() else b""
        return {"text": data.decode("utf-8", errors="replace"), "sha": sha(data),
                "exists": path.is_file()}

    def save(self, app: App, kata: Kata, body: dict) -> dict:
        """Write the editor's text to the kata's file, unless the file changed on disk since
        the editor loaded it (``base``: its sha then) and ``force`` is not set: a 409 with the
        text on disk, so that the page offers it and loses neither."""
        from graders.frontends.cli.state import write_atomically

        path = self.kata_file(app, kata)
        text = body.get("text")
        if not isinstance(text, str):
            raise Failure(400, "text missing")
        current = self.read_file(app, kata)
        if current["sha"] != body.get("base") and not body.get("force") and current["exists"]:
            raise Failure(409, _("{file} was changed on disk by another editor since the room "
                                 "loaded it", file=app.show_path(path)), disk=current)
        data = text.encode("utf-8")
        if data != path.read_bytes() if path.is_file() else True:
            write_atomically(path, data)
        return {"sha": sha(data)}


def kata_summary(app: App, state: dict, kata: Kata, status: str) -> dict:
    return {"id": kata.id, "name": kata.name, "title": translate(kata.title), "status": status,
            "status_text": progress_words(status), "difficulty": difficulty_word(kata.difficulty),
            "minutes": kata.target_minutes, "hints": f"{hint_level(state, kata)}/{len(kata.hints)}"}


def mock_view(app: App, now: float) -> dict | None:
    mock = app.store.read()["mock"]
    if mock is None:
        return None
    kata = registry.get(mock["kata"])
    return {"kata": kata.name, "id": kata.id, "deadline": mock["deadline"], "now": now,
            "left_s": max(0.0, mock["deadline"] - now), "minutes": mock["minutes"],
            "left": countdown(mock["deadline"] - now)}


def create_app(root: Path, token: str, *, port: int = 8765, grader: Callable | None = None,
               clock: Callable[[], float] = time.time, extra_hosts: tuple[str, ...] = ()) -> Starlette:
    """The room's web app for the repository copy at ``root``. ``extra_hosts``: further Host
    values to accept (the test client's "testserver")."""
    from graders.frontends.cli.mock import cmd_mock, questions_only, settle_expired_mock, submit_mock
    from graders.frontends.cli.report import cmd_report
    from graders.frontends.cli.reset import cmd_reset, cmd_restore, cmd_solution
    from graders.frontends.cli.hint import reveal_next_hint
    from graders.core.catalogue import MISTAKES

    room = Room(root, token, grader=grader, clock=clock)

    def endpoint(handler):
        async def route(request: Request) -> Response:
            body = {}
            if request.method == "POST":
                try:
                    body = await request.json()
                except ValueError:
                    body = {}
                body = body if isinstance(body, dict) else {}
            language = request.query_params.get("lang") or i18n.ENGLISH
            if i18n.resolve(language) is None:
                language = i18n.ENGLISH

            def work():
                with room.lock, i18n.speaking(language):
                    app = room.app()
                    try:
                        settle_expired_mock(app, app.console)
                        kata = None
                        if "key" in request.path_params:
                            try:
                                kata = resolve(request.path_params["key"])
                            except UsageError as error:
                                raise Failure(404, str(error)) from None
                        return JSONResponse(handler(app, kata, body, request))
                    except Failure as failure:
                        return JSONResponse({"error": failure.message, **failure.extra},
                                            status_code=failure.status)

            from starlette.concurrency import run_in_threadpool

            return await run_in_threadpool(work)
        return route

    def home(app: App, _kata, _body, _request) -> dict:
        state = app.store.read()
        statuses, groups = {}, []
        for title, members in tracks(registry.KATAS):
            rows = []
            for kata in members:
                status, _result = app.status_now(state, kata, "list", lambda note: None)
                statuses[kata.name] = status
                rows.append(kata_summary(app, state, kata, status))
            groups.append({"title": title, "katas": rows})
        upcoming = next((k.id for k in registry.KATAS if statuses[k.name] != "all passed"), None)
        return {"tracks": groups, "progress": progress_line(statuses), "next": upcoming,
                "mock": mock_view(app, room.clock())}

    def texts(app: App, _kata, _body, _request) -> dict:
        return {"texts": verdicts.page_texts(), "mock": mock_view(app, room.clock())}

    def kata_page(app: App, kata: Kata, _body, _request) -> dict:
        state = app.store.read()
        mock = mock_view(app, room.clock())
        readme = app.readme(kata)
        source = readme.read_text(encoding="utf-8") if readme.is_file() else ""
        if mock and mock["kata"] == kata.name:
            source = questions_only(source)
        return {**kata_summary(app, state, kata, app.known_status(state, kata) or ""),
                "file": app.show_path(app.learner_file(kata)), "readme": verdicts.markdown(source),
                "hints_total": len(kata.hints), "hints_used": hint_level(state, kata),
                "backups": len(app.backups(kata)), "mock": mock, **room.read_file(app, kata)}

    def file_now(app: App, kata: Kata, _body, _request) -> dict:
        return room.read_file(app, kata)

    def save(app: App, kata: Kata, body: dict, _request) -> dict:
        return room.save(app, kata, body)

    def set_aside(app: App, kata: Kata, body: dict, _request) -> dict:
        """Keep the editor's text as a backup of the kata (before the page loads the file
        another editor changed): Restore, or kata restore, brings it back."""
        text = body.get("text")
        if not isinstance(text, str):
            raise Failure(400, "text missing")
        room.kata_file(app, kata)
        backup = app.backup(kata, text.encode("utf-8"))
        return {"message": _("the editor's text is backed up as {backup} (Restore brings it back)",
                             backup=app.show_path(backup))}

    def check(app: App, kata: Kata, body: dict, _request) -> dict:
        saved = room.save(app, kata, body)
        result = app.grade(kata, "check")
        mock = mock_view(app, room.clock())
        return {**saved, "verdict": verdicts.verdict(result, hidden=bool(mock and mock["kata"] == kata.name))}

    def hint(app: App, kata: Kata, _body, _request) -> dict:
        app.refuse_during_mock(_("a mock interview of {kata} is running: hints must wait until "
                                 "you hand it in."))
        level, exhausted = reveal_next_hint(app, kata)
        rung = HINT_LEVELS[level - 1]
        answer = {"level": level, "total": len(kata.hints), "exhausted": exhausted,
                  "heading": _("hint {number}/{total} ({level}) - {kata}", number=level,
                               total=len(kata.hints), level=hint_level_word(rung), kata=kata.name),
                  "text": translate(kata.hints[level - 1]), "code": rung == "near-code"}
        latest = last_attempt(app.store.read(), kata)
        if latest and latest.get("slugs") and latest["slugs"][0] in MISTAKES:
            mistake = MISTAKES[latest["slugs"][0]]
            answer["mistake"] = {"slug": latest["slugs"][0], "explanation": translate(mistake.explanation),
                                 "hint": translate(mistake.hint)}
        return answer

    def guarded(function):
        def handler(app: App, kata: Kata, body: dict, request) -> dict:
            try:
                return function(app, kata, body, request)
            except Refused as refusal:
                raise Failure(409, str(refusal)) from None
        return handler

    def reset(app: App, kata: Kata, _body, _request) -> dict:
        message = room.run_command(cmd_reset, kata=kata.id, yes=True)
        return {"message": message, **room.read_file(app, kata)}

    def restore(app: App, kata: Kata, _body, _request) -> dict:
        message = room.run_command(cmd_restore, kata=kata.id, backup=None, list=False)
        return {"message": message, **room.read_file(app, kata)}

    def solution(app: App, kata: Kata, _body, _request) -> dict:
        room.run_command(cmd_solution, kata=kata.id, yes=True)
        return {"solution": kata.solution_path.read_text(encoding="utf-8"),
                "message": _("Now close it and write it yourself: Reset, or a mock of {kata}.",
                             kata=kata.id)}

    def quiz_questions(app: App, kata: Kata, _body, _request) -> dict:
        app.refuse_during_mock(_("a mock interview of {kata} is running: the quiz must wait "
                                 "until you hand it in."))
        return {"questions": [{"number": n, "prompt": verdicts.markdown(translate(q.prompt)),
                               "choices": [translate(c) for c in q.choices],
                               "format": q.answer_format}
                              for n, q in enumerate(quiz_engine.questions(kata.id), start=1)]}

    def quiz_mark(app: App, kata: Kata, body: dict, _request) -> dict:
        quiz_questions(app, kata, body, _request)
        answers = body.get("answers") if isinstance(body.get("answers"), dict) else {}
        marks = []
        for number, question in enumerate(quiz_engine.questions(kata.id), start=1):
            outcome, text = quiz_engine.marked(number, question, answers.get(str(number)))
            marks.append({"number": number, "outcome": outcome, "text": text})
        score = sum(m["outcome"] == quiz_engine.CORRECT for m in marks)
        return {"marks": marks, "score": quiz_engine.score_line(
            quiz_engine.QuizResult(kata.name, tuple(m["outcome"] for m in marks))), "correct": score}

    def mock_state(app: App, _kata, _body, _request) -> dict:
        return {"mock": mock_view(app, room.clock())}

    def mock_start(app: App, _kata, body: dict, _request) -> dict:
        minutes = body.get("minutes")
        message = room.run_command(
            cmd_mock, kata=body.get("kata") or None, random=bool(body.get("random")),
            minutes=float(minutes) if isinstance(minutes, (int, float)) else None,
            yes=True, submit=False, abort=False)
        return {"message": message, "mock": mock_view(app, room.clock())}

    def mock_submit(app: App, _kata, _body, _request) -> dict:
        state = app.store.read()
        output = io.StringIO()
        if state["mock"] is not None:
            console = Console(file=output, width=100, no_color=True, force_terminal=False)
            submit_mock(app, console)
        elif not (state["mocks"] and state["mocks"][-1].get("outcome") == TIME_RAN_OUT):
            raise Failure(400, _("no mock interview is running: start one with kata mock"))
        else:  # its time ran out, and this request (or one before it) handed it in
            last = state["mocks"][-1]
            output.write(_("mock interview of {kata}: {outcome} after {minutes} min", kata=last["kata"],
                           outcome=outcome_word(TIME_RAN_OUT), minutes=f"{last['minutes']:g}"))
        record = app.store.read()["mocks"][-1]
        result = app.cached_result(app.store.read(), registry.get(record["kata"]))
        return {"message": output.getvalue().strip().splitlines()[-1], "record": record,
                "verdict": verdicts.verdict(result) if result else None}

    def mock_abort(app: App, _kata, _body, _request) -> dict:
        from graders.frontends.cli.mock import abort_mock

        try:
            output = io.StringIO()
            abort_mock(room.app(output))
        except UsageError as error:
            raise Failure(400, str(error)) from None
        return {"message": output.getvalue().strip()}

    def report(app: App, _kata, _body, _request) -> dict:
        text = room.run_command(cmd_report, json=False)
        return {"markdown": text, "html": verdicts.markdown(text)}

    def page(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    def api(path: str, handler, methods=("GET",)) -> Route:
        return Route(path, endpoint(guarded(handler)), methods=list(methods))

    routes = [
        Route("/", page),
        api("/api/home", home),
        api("/api/texts", texts),
        api("/api/kata/{key}", kata_page),
        api("/api/kata/{key}/file", file_now),
        api("/api/kata/{key}/save", save, ("POST",)),
        api("/api/kata/{key}/check", check, ("POST",)),
        api("/api/kata/{key}/set-aside", set_aside, ("POST",)),
        api("/api/kata/{key}/hint", hint, ("POST",)),
        api("/api/kata/{key}/reset", reset, ("POST",)),
        api("/api/kata/{key}/restore", restore, ("POST",)),
        api("/api/kata/{key}/solution", solution, ("POST",)),
        api("/api/kata/{key}/quiz", quiz_questions),
        api("/api/kata/{key}/quiz", quiz_mark, ("POST",)),
        api("/api/mock", mock_state),
        api("/api/mock/start", mock_start, ("POST",)),
        api("/api/mock/submit", mock_submit, ("POST",)),
        api("/api/mock/abort", mock_abort, ("POST",)),
        api("/api/report", report),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    hosts = {f"{security.LOOPBACK}:{port}", f"localhost:{port}", *extra_hosts}
    app = Starlette(routes=routes)
    app.add_middleware(security.Guard, token=token, hosts=hosts)
    return app


def serve(root: Path, *, port: int, open_browser: bool, announce: Callable[[str], None]) -> int:
    """Start the room on 127.0.0.1:``port`` and open it; Ctrl-C stops it."""
    import socket
    import webbrowser

    import uvicorn

    token = security.new_token()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a quick restart; never a second listener (Linux)
    try:
        listener.bind((security.LOOPBACK, port))  # loopback only: nobody else on the network
    except OSError as error:
        listener.close()
        raise Refused(_("cannot listen on {address}:{port} ({error}): choose another port with "
                        "kata serve --port N (0: any free one)", address=security.LOOPBACK,
                        port=port, error=error.strerror or error)) from None
    listener.listen(128)  # connections wait for uvicorn from here on: the address works once printed
    port = listener.getsockname()[1]
    url = f"http://{security.LOOPBACK}:{port}/?token={token}"
    app = create_app(root, token, port=port)
    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    announce(_("The practice room is open at {url} (Ctrl-C stops it)", url=url))
    if open_browser:
        threading.Timer(0.5, lambda: webbrowser.open(url)).start()
    try:
        server.run(sockets=[listener])
    except KeyboardInterrupt:
        pass
    return 0
