"""kata serve: the practice room in the browser (graders.frontends.serve), on this copy's
files and state."""

from __future__ import annotations

import argparse

from graders.frontends.cli.app import App


def cmd_serve(app: App, args: argparse.Namespace) -> int:
    from graders.frontends.serve.launch import serve  # starlette and uvicorn: only now

    return serve(app.root, port=args.port, open_browser=not args.no_browser,
                 announce=lambda line: app.print(line, markup=False))
