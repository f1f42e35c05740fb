"""Who may use `kata serve`: the learner alone.

The server binds to 127.0.0.1 only. Every request to the API carries the secret token made
at start (the page gets it from the URL `kata serve` opens, as Jupyter does, and sends it
as the ``X-Kata-Token`` header); the page itself needs it in its URL. A request whose Host
is not the server's own (DNS rebinding), or whose Origin is another site (a cross-site
request), is refused before any route runs. Files: a route names a kata, never a path; the
kata's file is used only if it is a plain file inside that kata's folder (no symlink).
"""

from __future__ import annotations

import hmac
import secrets
from pathlib import Path

from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

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
        refusal = self.refusal(scope["path"], headers, scope.get("query_string", b"").decode())
        if refusal is not None:
            status, text = refusal
            return await PlainTextResponse(text, status_code=status)(scope, receive, send)

        async def send_with_policy(message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + POLICY_HEADERS
            await send(message)

        await self.app(scope, receive, send_with_policy)

    def refusal(self, path: str, headers: dict[str, str], query: str) -> tuple[int, str] | None:
        if headers.get("host", "") not in self.hosts:
            return 403, "refused: this server answers only to its own address"
        origin = headers.get("origin")
        if origin is not None and origin.removeprefix("http://") not in self.hosts:
            return 403, "refused: a request from another site"
        if path.startswith("/static/"):
            return None  # the page's own scripts and styles: no learner file, no state
        given = headers.get(TOKEN_HEADER)
        if given is None and path == "/":
            from urllib.parse import parse_qs

            given = (parse_qs(query).get("token") or [None])[0]
        if not token_matches(given, self.token):
            return 401, "refused: open the address kata serve printed (it carries the token)"
        return None


def own_file(path: Path, folder: Path) -> bool:
    """Whether ``path`` may be read or written as a kata's file: directly inside ``folder``
    (the kata's folder), not a symlink, and (when it exists) a plain file."""
    try:
        inside = path.parent.resolve() == folder.resolve() and path.name == path.name.strip("/")
    except OSError:
        return False
    return inside and not path.is_symlink() and (not path.exists() or path.is_file())
