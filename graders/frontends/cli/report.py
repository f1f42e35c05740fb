"""kata report: a self-assessment of the learner's practice, in markdown or JSON
(graders.practice.report builds it; this prints)."""

from __future__ import annotations

import argparse
import json

from rich.console import Console

from graders.frontends import layout
from graders.frontends.cli.app import App
from graders.practice.report import build_report, kata_summary, practise_next, report_markdown  # noqa: F401


def cmd_report(app: App, args: argparse.Namespace) -> int:
    notes = Console(stderr=True, highlight=False)  # keep stdout the report alone
    report = build_report(app, lambda note: notes.print(note, style="dim", markup=False))
    text = (json.dumps(report, indent=2, ensure_ascii=False) if args.json
            else report_markdown(report, room=app.front_end == "room"))
    if args.json or app.plain:  # data, or a markdown file (kata report > me.md): as it is
        app.console.print(text, markup=False, highlight=False, soft_wrap=True)
    else:
        layout.print_markdown(app.console, text)
    return 0
