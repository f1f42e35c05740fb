"""kata report: a self-assessment of the learner's practice, in markdown or JSON
(the practice service builds it; this prints)."""

from __future__ import annotations

import argparse
import json

from rich.console import Console

from graders.frontends import layout
from graders.frontends.cli.app import App


def cmd_report(app: App, args: argparse.Namespace) -> int:
    notes = Console(stderr=True, highlight=False)  # keep stdout the report alone
    report = app.report(lambda note: notes.print(note, style="dim", markup=False))
    text = (json.dumps(report, indent=2, ensure_ascii=False) if args.json
            else app.report_markdown(report))
    if args.json or app.plain:  # data, or a markdown file (kata report > me.md): as it is
        app.console.print(text, markup=False, highlight=False, soft_wrap=True)
    else:
        layout.print_markdown(app.console, text)
    return 0
