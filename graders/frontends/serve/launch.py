"""`kata serve` started: the room's listener on 127.0.0.1, its warm grader, the browser
opened on a private redirect file, and everything it made removed when it stops — by
Ctrl-C or SIGTERM alike (graders.frontends.serve.server is the app itself)."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
from pathlib import Path
from typing import Callable

from graders.core.i18n import _
from graders.frontends.serve import security
from graders.frontends.serve.server import create_app
from graders.practice import Refused

# A redirect file the browser never opened is removed after this long anyway (it holds the
# token): the address kata serve printed still works.
REDIRECT_KEPT_S = 300.0


class RedirectFile:
    """The file the browser is started on (``open()``: it redirects to the tokened address),
    in a folder of its own, removed once the browser has followed it (the first request
    that carries the token), after REDIRECT_KEPT_S, or when the room stops."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._lock = threading.Lock()
        self.folder: Path | None = None
        self.path: Path | None = None

    def open(self) -> Path:
        with self._lock:
            self.folder = Path(tempfile.mkdtemp(prefix="kata-serve-"))  # 0700: the learner's alone
            self.path = redirect_file(self.folder, self.url)
            return self.path

    def remove(self) -> None:
        with self._lock:
            if self.folder is not None:
                shutil.rmtree(self.folder, ignore_errors=True)
                self.folder = None


class Stopped(Exception):
    """SIGTERM: the room stops as on Ctrl-C (its files removed, its grader ended)."""


def serve(root: Path, *, port: int, open_browser: bool, announce: Callable[[str], None]) -> int:
    """Start the room on 127.0.0.1:``port`` and open it; Ctrl-C (or SIGTERM) stops it."""
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
    from graders.frontends.serve.warm import WarmGrader

    warm = WarmGrader()  # checks forked from a process that has torch imported already
    threading.Thread(target=warm.start, daemon=True).start()
    redirect = RedirectFile(url)
    app = create_app(root, token, port=port, grader=warm, visited=redirect.remove)
    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    announce(_("The practice room is open at {url} (Ctrl-C stops it)", url=url))

    def stop(_signal, _frame):
        raise Stopped()

    # uvicorn stops gracefully on SIGTERM, then raises it again with the handler found
    # before it started: this one, so that the clean-up below runs (the default would end
    # the process at once, the redirect file left behind).
    previous = signal.signal(signal.SIGTERM, stop)
    timers: list[threading.Timer] = []
    try:
        if open_browser:
            # The browser is started on a file that redirects to the address, never on the
            # address itself: a command line is visible to every user of the machine (ps),
            # the file to the learner alone (as Jupyter does).
            page = redirect.open()
            timers = [threading.Timer(0.5, lambda: webbrowser.open(page.as_uri())),
                      threading.Timer(REDIRECT_KEPT_S, redirect.remove)]
            for timer in timers:
                timer.daemon = True
                timer.start()
        try:
            server.run(sockets=[listener])
        except (KeyboardInterrupt, Stopped):
            pass
    finally:
        for timer in timers:
            timer.cancel()
        warm.close()
        redirect.remove()
        signal.signal(signal.SIGTERM, previous)
    return 0


def redirect_file(folder: Path, url: str) -> Path:
    """An HTML file in ``folder``, readable by the learner alone (0600), that sends the
    browser on to ``url`` (which carries the token)."""
    import html

    path = folder / "open-the-practice-room.html"
    quoted = html.escape(url, quote=True)
    page = (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8">\n'
            f'<meta http-equiv="refresh" content="0;url={quoted}">\n'
            f'<title>kata serve</title></head>\n<body><p><a href="{quoted}">{quoted}</a></p>'
            f'</body></html>\n')
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(page)
    return path
