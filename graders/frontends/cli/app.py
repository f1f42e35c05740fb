"""The CLI's App: the practice service (graders.practice.Practice) with a terminal - how
its answers are printed, the questions asked, the file watcher and stdin."""

from __future__ import annotations

import dataclasses
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from rich.console import Console
from rich.markup import escape

from graders.frontends import layout
from graders.core.i18n import _
from graders.core.results import KataResult
from graders.practice import Message, Practice, Said


def watch_file(path: Path) -> Iterable:
    """Batches of changes to ``path``, from watchfiles. The folder is watched, not the file:
    editors that save by writing a new file and renaming it would end a watch on the file."""
    from watchfiles import watch

    return watch(path.parent, recursive=False,
                 watch_filter=lambda change, changed: Path(changed).name == path.name)


@dataclass
class App(Practice):
    console: Console = None  # type: ignore[assignment]  (always given: main makes one)
    file_changes: Callable[[Path], Iterable] = watch_file
    interactive: bool = False  # stdin is a terminal: watch may ask questions

    # -- output --
    def print(self, text: str = "", **options) -> None:
        """Prose: wrapped to a terminal's width, never inside a slug, code or a shape;
        unwrapped where the output is not a terminal (see graders.frontends.layout)."""
        layout.print_prose(self.console, text, **options)

    def warn(self, text: str) -> None:
        self.console.print(f"[yellow]{escape(text)}[/]", highlight=False, soft_wrap=True)

    @property
    def plain(self) -> bool:
        """Output that is not a terminal (`kata list | cat`, a file): no box drawing."""
        return not self.console.is_terminal

    def heading(self, title: str = "", style: str = "dim") -> None:
        """A rule with ``title`` on a terminal; the title alone on a line otherwise."""
        if self.plain:
            if title:
                self.print(title, style=style, markup=False)
        else:
            self.console.rule(escape(title), align="left", style=style)

    def code(self, source: str) -> None:
        """Print Python code as code: highlighted on a terminal, never wrapped nor cut - a
        long line stays one line, which the terminal soft-wraps and a copy keeps whole."""
        from rich.syntax import Syntax

        text = Syntax(source, "python", theme="ansi_dark", background_color="default").highlight(source)
        text.rstrip()
        self.console.print(text, soft_wrap=True)

    def markdown(self, source: str) -> None:
        """Print markdown: laid out on a terminal (graders.frontends.layout: no markers, never a
        slug or code span split), its code blocks printed as code; as it is, unwrapped, when
        not on a terminal."""
        if self.plain:
            self.console.print(source, markup=False, highlight=False, soft_wrap=True)
            return
        pieces = re.split(r"^```[^\n]*\n(.*?)^```[ \t]*$", source, flags=re.S | re.M)
        for number, piece in enumerate(pieces):
            if number % 2:  # inside a fence
                self.code(textwrap.indent(piece, "    "))
            elif piece.strip():
                layout.print_markdown(self.console, piece)

    def say(self, message: Message | Said, **options) -> None:
        """Print what the service returned (or refused), in the CLI's words."""
        from graders.frontends.cli.words import text

        self.print(text(message), **options)

    # -- questions --
    def confirm(self, question: str, assume_yes: bool = False) -> bool:
        """y/N from stdin (piped input works too); end of input or no stdin means no."""
        if assume_yes:
            return True
        try:
            choices = _("[y/N]")
            answer = self.console.input(f"{escape(question)} {escape(choices)} ")
        except (EOFError, OSError, RuntimeError):  # RuntimeError: no stdin at all
            answer = ""
            self.print()
        return answer.strip().lower() in ("y", "yes", "是")

    def render(self, result: KataResult, console: Console | None = None, *,
               show_prints: bool = False) -> None:
        """Show a grading result; while a mock interview of its kata runs, without mistake
        names and hints: what failed, but not what the mistake is nor how to fix it (they
        come with the verdict of kata mock --submit). ``show_prints``: what the learner's
        code printed, its first lines, instead of a note saying how much it printed."""
        from graders.core import interview
        from graders.frontends import rendering

        console = console or self.console
        if interview.hides(result.kata, self.root):
            result = interview.without_mistakes(result)
            layout.print_prose(console, interview.notice(), style="dim", markup=False)
        printed = result.printed if show_prints else ""
        if printed:
            result = dataclasses.replace(result, note="")
        rendering.render(result, console, plain=not console.is_terminal)
        if printed:
            console.print("\n" + printed, markup=False, highlight=False, soft_wrap=True)
        elif show_prints and not result.error:
            console.print(_("(your code printed nothing while it was graded)"), style="dim",
                          markup=False, highlight=False)
