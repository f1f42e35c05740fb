"""Who may use `kata serve`: the learner alone.

The server binds to 127.0.0.1 only. Every request to the API carries the secret token made
at start (the page gets it from the URL `kata serve` opens, as Jupyter does, and sends it
as the ``X-Kata-Token`` header); the page itself needs it in its URL. A request whose Host
is not the server's own (DNS rebinding), or whose Origin is another site (a cross-site
request), is refused before any route runs. Files: a route names a kata, never a path; the
kata's file is used only if it is a plain file inside that kata's folder of this checkout
(real paths compared; no symlink, no hard link, no symlinked folder), and backups only in
plain folders. Every refusal carries the same policy headers as an answer. Request bodies
are bounded (MAX_BODY).
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat
from pathlib import Path

from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from graders.core import i18n
from graders.core.i18n import _

TOKEN_HEADER = "x-kata-token"
# Defence in depth for every response: the page runs only its own scripts (CodeMirror's
# styles and the heatmaps' colours are inline styles), is never framed, and sends no
# Referer (the token is in its URL).
POLICY_HEADERS = [
    (b"content-security-policy", b"default-src 'self'; script-src 'self'; style-src 'self' "
                                 b"'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
]
LOOPBACK = "127.0.0.1"
MAX_BODY = 1 << 20  # bytes: a kata's file is a few kB; a request past 1 MiB gets a 413


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_matches(given: str | None, token: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


class Guard:
    """ASGI middleware: Host, Origin and token checks (see the module docstring).
    ``hosts``: the Host values that are this server ("127.0.0.1:8765", "localhost:8765")."""

    def __init__(self, app: ASGIApp, *, token: str, hosts: set[str]):
        self.app, self.token, self.hosts = app, token, hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        query = scope.get("query_string", b"").decode("latin-1")
        with i18n.speaking_here(page_language(query)):  # the refusal in the page's language
            refusal = self.refusal(scope["path"], headers, query)
        if refusal is not None:
            status, text = refusal
            response = PlainTextResponse(text, status_code=status)
            response.raw_headers.extend(POLICY_HEADERS)
            return await response(scope, receive, send)

        async def send_with_policy(message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + POLICY_HEADERS
            await send(message)

        await self.app(scope, receive, send_with_policy)

    def refusal(self, path: str, headers: dict[str, str], query: str) -> tuple[int, str] | None:
        if not headers.get("content-length", "0").strip().isdigit():
            return 400, _("refused: a bad Content-Length")
        if int(headers.get("content-length", "0")) > MAX_BODY:
            return 413, _("refused: a request larger than {size} MiB", size=MAX_BODY >> 20)
        if headers.get("host", "") not in self.hosts:
            return 403, _("refused: this server answers only to its own address")
        origin = headers.get("origin")
        if origin is not None and origin.removeprefix("http://") not in self.hosts:
            return 403, _("refused: a request from another site")
        if path.startswith("/static/"):
            return None  # the page's own scripts and styles: no learner file, no state
        given = headers.get(TOKEN_HEADER)
        if given is None and path == "/":
            from urllib.parse import parse_qs

            given = (parse_qs(query).get("token") or [None])[0]
            if given is None:
                return None  # the page alone, which holds no secret: reloaded once it dropped
                # the token from its address (it keeps it in the tab's sessionStorage)
        if not token_matches(given, self.token):
            return 401, _("refused: this page does not hold the room's token. The room was "
                          "restarted, or this address is from an older room: open the address "
                          "kata serve printed in its terminal (it carries the room's token).")
        return None


def page_language(query: str) -> str:
    """The language a request's ``lang`` asks for (English when none, or none known)."""
    from urllib.parse import parse_qs

    language = (parse_qs(query).get("lang") or [i18n.ENGLISH])[0]
    return language if i18n.resolve(language) is not None else i18n.ENGLISH


def own_file(path: Path, folder: Path) -> bool:
    """Whether ``path`` may be read or written as a kata's file (or README): ``folder`` is
    the checkout's ``katas/NN_name``, itself no symlink, and ``path`` lies directly inside
    it, real paths compared; ``path`` is no symlink and, when it exists, a plain file with
    no other name (a hard link to a file elsewhere is refused: st_nlink 1)."""
    try:
        katas = folder.parent.resolve(strict=True)
        if folder.is_symlink() or folder.resolve(strict=True) != katas / folder.name:
            return False
        if path.parent.resolve(strict=True) != katas / folder.name or path.name in ("", ".", ".."):
            return False
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return True  # a missing file may be written (reset makes it again)
    except (OSError, ValueError, RuntimeError):
        return False
    return plain(info)


def plain(info: os.stat_result) -> bool:
    return stat.S_ISREG(info.st_mode) and info.st_nlink == 1


def plain_file(path: Path) -> bool:
    """A plain file, not a symlink nor a hard link (a backup kept by the room)."""
    try:
        return plain(os.lstat(path))
    except (OSError, ValueError):
        return False


def own_folders(root: Path, *parts: str) -> bool:
    """Whether the folders ``root/parts[0]/parts[1]/...`` that exist are folders, no
    symlink among them (the backups' ``.kata/backups/NN_name``)."""
    here = root
    for part in parts:
        here = here / part
        try:
            info = os.lstat(here)
        except FileNotFoundError:
            return True
        except (OSError, ValueError):
            return False
        if not stat.S_ISDIR(info.st_mode):
            return False
    return True
