"""The kata command: practice as a loop - see where you are, try, get a precise verdict,
get a hint, try again.

    kata list                 every kata by track, with its status, a progress line, what next
    kata check [KATA]         grade a kata (default: the first one not passed yet)
    kata hint KATA            the next hint: a nudge, then the key idea, then near-code
    kata watch [KATA]         re-grade on every save
    kata reset KATA           back to the skeleton (your file is backed up first)
    kata restore KATA [N]     bring a backup back (the latest; --list shows them all)
    kata solution KATA        show the reference solution (your report will say so)
    kata mock [KATA]          a timed mock interview; hand it in with `kata mock --submit`
    kata report               a self-assessment in markdown (--json for machines)

KATA is an id (03_mha), a number (3 or 03) or a short name (mha).

Which copy of the repository: the one the current directory is in (searched upwards for a
folder with katas/ and graders/core/registry.py), else the copy this command was
installed from - said in one line, as is KATA_ROOT=DIR, which points the command at
another copy. That copy's katas/ are the learner's files and its .kata/ their progress.
Design: the copy's files are graded by the graders of *this* installation (the learner's
file is handed to the grader as ``--impl PATH``, exactly as ``kata check --impl`` does),
not by re-running the command from the other copy's own graders/. A copy of this project
has the same katas and skeletons; one command, one set of graders and one environment
keep the cached results (keyed by the graders' fingerprint) and the verdicts consistent,
and nothing from the other copy is imported into this process.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import functools
import hashlib
import itertools
import json
import os
import random
import re
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from graders.core import i18n, registry
from graders.core.catalogue import MISTAKES
from graders.core.i18n import _, translate
from graders.core.registry import HINT_LEVELS, Kata
from graders.core.report import is_hint_line
from graders.core.results import ALL_PASSED, CORE_PASSED, FAILING, NOT_STARTED, KataResult, shown

ROOT_ENV_VAR = "KATA_ROOT"
INSTALLED_ROOT = registry.REPO_ROOT  # the copy this command was installed from
STATE_DIR = ".kata"  # ignored by git: state.json and backups/
IDLE_GAP_S = 20 * 60  # a longer pause between two actions on a kata counts as a break
TIME_RAN_OUT = "time ran out"
WIDE_ENOUGH_FOR_TITLES = 110  # `kata list` leaves the titles out of narrower terminals
STATUS_RANK = {NOT_STARTED: 0, FAILING: 1, CORE_PASSED: 2, ALL_PASSED: 3}
STATUS_STYLE = {NOT_STARTED: "dim", FAILING: "red", CORE_PASSED: "yellow", ALL_PASSED: "green"}
FILE_MISSING = "file missing"  # a status of the file now, never of a graded attempt
# The order in which the progress line counts each status now (the counts add up to the
# number of katas); see progress_words for the words.
PROGRESS_ORDER = (ALL_PASSED, CORE_PASSED, FAILING, NOT_STARTED, FILE_MISSING)
# A kata README's questions for a mock, in each language's edition (see the glossary).
FOLLOW_UPS_HEADING = "## Interviewer follow-ups"
FOLLOW_UPS_HEADINGS = (FOLLOW_UPS_HEADING, "## 面试官追问")
BACKUP_STAMP = re.compile(r"-(\d{8}-\d{6})(?:-(\d+))?$")  # heads-20250615-103000-2.py


class UsageError(Exception):
    """A mistake in how the command was called: printed, exit status 2."""


class Refused(Exception):
    """A command that may not run now, e.g. a hint during a mock interview: printed, exit
    status 1."""


# --------------------------------------------------------------------------------------
# Learner state: .kata/state.json
# --------------------------------------------------------------------------------------

def fresh_state() -> dict:
    return {
        "version": 1,
        "hints": {},  # kata name -> hint levels revealed (0-3)
        "attempts": [],  # one per graded version of a kata's file, oldest first
        "cache": {},  # kata name -> {"key": content key, "result": KataResult.to_dict()}
        "revealed": {},  # kata name -> {"at": ISO time, "t": epoch} of the first reveal
        "time": {},  # kata name -> {"last": epoch, "total_s": ..., "since_attempt_s": ...}
        "mock": None,  # the running mock: {"kata", "started", "deadline", "minutes"}
        "mocks": [],  # finished mocks, oldest first
    }


_SECTION_TYPES = {"hints": dict, "attempts": list, "cache": dict, "revealed": dict,
                  "time": dict, "mock": (dict, type(None)), "mocks": list}


def _well_formed(raw: Any) -> dict | None:
    """The state in ``raw`` with malformed entries dropped, or None when it is not a state."""
    if not isinstance(raw, dict):
        return None
    state = fresh_state()
    for section, kinds in _SECTION_TYPES.items():
        if section in raw:
            if not isinstance(raw[section], kinds):
                return None
            state[section] = raw[section]
    state["hints"] = {k: v for k, v in state["hints"].items() if isinstance(v, int)}
    state["attempts"] = [a for a in state["attempts"] if isinstance(a, dict)
                         and isinstance(a.get("kata"), str) and a.get("status") in STATUS_RANK]
    state["mocks"] = [m for m in state["mocks"] if isinstance(m, dict) and isinstance(m.get("kata"), str)]
    state["time"] = {k: v for k, v in state["time"].items() if isinstance(v, dict)}
    mock = state["mock"]
    if mock is not None and not (isinstance(mock.get("kata"), str)
                                 and all(isinstance(mock.get(k), (int, float))
                                         for k in ("started", "deadline", "minutes"))):
        state["mock"] = None
    return state


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` in one step: readers see the old file or the new one,
    never half of one (a temporary file in the same folder, then os.replace)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp",
                                         delete=False)
    try:
        with handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise


class StateStore:
    """The learner's state file. Every change re-reads the file first, so two ``kata``
    commands running at once (a watch and a hint, say) do not undo each other's writes."""

    def __init__(self, folder: Path, warn: Callable[[str], None]):
        self.folder = folder
        self.path = folder / "state.json"
        self.warn = warn

    def read(self) -> dict:
        """The state; a fresh one when the file is missing, or unreadable (set aside, with a
        one-line warning: a broken state file must never stop the learner)."""
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return fresh_state()
        except (OSError, ValueError) as exc:
            self._set_aside(_("unreadable ({error})", error=type(exc).__name__))
            return fresh_state()
        state = _well_formed(raw)
        if state is None:
            self._set_aside(_("not a kata state file"))
            return fresh_state()
        return state

    def update(self, change: Callable[[dict], Any]) -> Any:
        """Apply ``change`` to the current state, save it, and return what ``change`` returned."""
        state = self.read()
        outcome = change(state)
        write_atomically(self.path, json.dumps(state, indent=1).encode("utf-8"))
        return outcome

    def _set_aside(self, reason: str) -> None:
        kept = self.path.with_name("state.json.corrupt")
        try:
            os.replace(self.path, kept)
        except OSError:
            kept = None
        state_file = f"{STATE_DIR}/state.json"
        if kept:
            self.warn(_("warning: {file} was {reason} (kept as {kept}); starting a fresh one",
                        file=state_file, reason=reason, kept=kept.name))
        else:
            self.warn(_("warning: {file} was {reason}; starting a fresh one", file=state_file,
                        reason=reason))


# --------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------

def make_console() -> Console:
    """A console for the terminal: colours when it is one, plain text when it is not or when
    NO_COLOR is set (no escape codes at all, not even bold)."""
    no_color = bool(os.environ.get("NO_COLOR"))
    return Console(highlight=False, no_color=no_color, color_system=None if no_color else "auto")


def _normalised(data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n")  # a Windows checkout of the skeleton is still untouched


@functools.lru_cache(maxsize=1)
def graders_fingerprint() -> str:
    """A hash of the grading code: a cached result is only reused if the graders are the same."""
    digest = hashlib.sha256()
    graders_dir = registry.REPO_ROOT / "graders"
    for path in sorted(graders_dir.rglob("*.py")):
        relative = path.relative_to(graders_dir)
        if relative.parts[0] not in ("frontends", "skeletons"):
            digest.update(str(relative).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def iso(t: float) -> str:
    return datetime.datetime.fromtimestamp(t).isoformat(timespec="seconds")


def clock_time(t: float) -> str:
    return datetime.datetime.fromtimestamp(t).strftime("%H:%M")


def countdown(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


def duration(seconds: float) -> str:
    """Human time for a report: "-", "<1 min", "12 min", "1 h 05 min"."""
    if seconds <= 0:
        return "-"
    minutes = round(seconds / 60)
    if minutes < 1:
        return _("<1 min")
    if minutes < 60:
        return _("{minutes} min", minutes=minutes)
    return _("{hours} h {minutes} min", hours=minutes // 60, minutes=f"{minutes % 60:02d}")


def resolve(key: str) -> Kata:
    try:
        return registry.get(key)
    except KeyError:
        known = ", ".join(f"{kata.name} ({int(kata.id)}, {kata.name[3:]})" for kata in registry.KATAS)
        raise UsageError(_("no kata called {name}; the katas are: {katas}", name=repr(key),
                           katas=known)) from None


def progress_words(status: str) -> str:
    """How the progress line names a status now, in the learner's language."""
    if status == CORE_PASSED:
        return _("core passed (follow-ups left)")
    if status == FILE_MISSING:
        return _("file missing")
    return shown(status)


def outcome_word(outcome: str) -> str:
    """A mock interview's outcome (a status, or "time ran out") in the learner's language."""
    return _("time ran out") if outcome == TIME_RAN_OUT else shown(outcome)


def difficulty_word(difficulty: str) -> str:
    """A registry difficulty (easy, medium, hard) in the learner's language."""
    return {"easy": _("easy"), "medium": _("medium"), "hard": _("hard")}.get(difficulty, difficulty)


def hint_level_word(level: str) -> str:
    """A hint rung's name (registry.HINT_LEVELS) in the learner's language."""
    return {"nudge": _("nudge"), "the key idea": _("the key idea"),
            "near-code": _("near-code")}.get(level, level)


def track_title(key: str) -> str:
    """A track's title (registry.TRACKS) in the learner's language."""
    title = registry.TRACKS.get(key, key)
    translated = {"Foundations": _("Foundations"),
                  "Full models and modern inference": _("Full models and modern inference"),
                  "Decoder-only LLMs": _("Decoder-only LLMs")}
    return translated.get(title, title)


def progress_line(statuses: dict[str, str]) -> str:
    """Where the learner stands, from every kata's status now (``statuses``: kata name ->
    status), one count per status so that the counts add up to the number of katas, e.g.
    "7 katas: 2 all passed, 1 core passed (follow-ups left), 4 not started; next: 03_mha".
    `kata list` and `kata report` both print it."""
    counts = collections.Counter(statuses.values())
    separator = _(", ")  # a list's comma, in the learner's language
    parts = separator.join(_("{count} {status}", count=counts[status], status=progress_words(status))
                           for status in PROGRESS_ORDER if counts[status] or status == ALL_PASSED)
    upcoming = next((k.name for k in registry.KATAS if statuses.get(k.name) != ALL_PASSED), None)
    if upcoming:
        return _("{count} katas: {counts}; next: {kata}", count=len(statuses), counts=parts,
                 kata=upcoming)
    return _("{count} katas: {counts}; every kata passes", count=len(statuses), counts=parts)


def tracks(katas: Iterable[Kata]) -> list[tuple[str, list[Kata]]]:
    """``katas`` grouped by track, in the order of registry.TRACKS: (track title in the
    learner's language, katas)."""
    katas = list(katas)
    groups = [(track_title(key), [k for k in katas if k.track == key]) for key in registry.TRACKS]
    strays = [k for k in katas if k.track not in registry.TRACKS]  # never in a sound registry
    return [(title, members) for title, members in groups + [(_("Other"), strays)] if members]


def track_heading(title: str, members: list[Kata]) -> str:
    """E.g. "Foundations (01-07)"."""
    span = members[0].id if len(members) == 1 else f"{members[0].id}-{members[-1].id}"
    return _("{title} ({span})", title=title, span=span)


def is_checkout(folder: Path) -> bool:
    """Whether ``folder`` is a copy of this project: katas/ and the registry of the graders."""
    return (folder / "katas").is_dir() and (folder / "graders" / "core" / "registry.py").is_file()


def locate_repository(cwd: Path, environ: Mapping[str, str]) -> tuple[Path, str | None]:
    """The copy of the repository to work on, and a line saying which one when it is not
    the current directory's (None when it is): KATA_ROOT if set; else the nearest copy at or
    above ``cwd``; else the copy this command was installed from."""
    cwd = cwd.resolve()
    here = next((folder for folder in (cwd, *cwd.parents) if is_checkout(folder)), None)
    if environ.get(ROOT_ENV_VAR):
        root = Path(environ[ROOT_ENV_VAR]).expanduser().resolve()
        return root, None if root == here else _("kata: working on {root} ({variable})",
                                                 root=root, variable=ROOT_ENV_VAR)
    if here is not None:
        return here, None
    return INSTALLED_ROOT, _("kata: the current directory is in no copy of attention-katas; "
                             "working on the installed one, {root}", root=INSTALLED_ROOT)


def _without_parentheses(text: str) -> str:
    """``text`` less its parenthesised remarks (those outside `code`), spaces tidied."""
    kept, depth, in_code = [], 0, False
    for char in text:
        if char == "`":
            in_code = not in_code
        elif not in_code and char == "(":
            depth += 1
            continue
        elif not in_code and char == ")" and depth:
            depth -= 1
            continue
        if depth == 0:
            kept.append(char)
    return re.sub(r"\s+([?.,;:!])", r"\1", re.sub(r"\s+", " ", "".join(kept))).strip()


def questions_only(readme: str) -> str:
    """A kata README with its interviewer follow-ups reduced to the questions, for a mock
    interview: the answers the README gives in parentheses (e.g. "Why divide by
    `sqrt(d_k)`? (Dot products ... vanish.)") or in <details> blocks are left out."""
    lines = readme.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(FOLLOW_UPS_HEADINGS)), None)
    if start is None:
        return readme
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    section = re.sub(r"<details>.*?</details>", "", "\n".join(lines[start + 1:end]),
                     flags=re.S | re.I)
    blocks: list[list[str]] = []  # [marker, text]: a list item ("-", "1.") or a paragraph ("")
    open_block = False  # whether the next indented or plain line continues the last block
    for line in section.splitlines():
        item = re.match(r"\s*([-*+]|\d+[.)])\s+(.*)", line)
        if item:
            blocks.append([item.group(1), item.group(2)])
        elif line.strip() and open_block:
            blocks[-1][1] += " " + line.strip()
        elif line.strip():
            blocks.append(["", line.strip()])
        open_block = bool(line.strip())
    questions: list[str] = []
    for marker, text in blocks:
        text = _without_parentheses(text)
        if text and marker:
            questions.append(f"{marker} {text}")
        elif text:
            questions += ["", text, ""]
    body = re.sub(r"\n{3,}", "\n\n", "\n".join(["", "", *questions, ""]))
    return "\n".join(lines[:start + 1]) + body + "\n" + "\n".join(lines[end:])


def best_status(state: dict, kata: Kata) -> str:
    """The best status any graded attempt of ``kata`` reached."""
    statuses = [a["status"] for a in state["attempts"] if a["kata"] == kata.name]
    return max(statuses, key=STATUS_RANK.__getitem__, default=NOT_STARTED)


def last_attempt(state: dict, kata: Kata) -> dict | None:
    return next((a for a in reversed(state["attempts"]) if a["kata"] == kata.name), None)


def hint_level(state: dict, kata: Kata) -> int:
    return max(0, min(state["hints"].get(kata.name, 0), len(kata.hints)))


def styled(status: str) -> str:
    """A status for a table cell: coloured, in the learner's language."""
    return f"[{STATUS_STYLE.get(status, 'bold red')}]{escape(progress_words(status))}[/]"


def watch_file(path: Path) -> Iterable:
    """Batches of changes to ``path``, from watchfiles. The folder is watched, not the file:
    editors that save by writing a new file and renaming it would end a watch on the file."""
    from watchfiles import watch

    return watch(path.parent, recursive=False,
                 watch_filter=lambda change, changed: Path(changed).name == path.name)


def without_hints(result: KataResult) -> KataResult:
    """``result`` with the catalogue's hints left out: no slug to look a hint up by (the
    verdict still names the mistake and explains it), no "hint: ..." line in the verdicts."""
    checks = [dataclasses.replace(check, slug=None, verdict="\n".join(
        line for line in check.verdict.splitlines() if not is_hint_line(line)))
        for check in result.checks]
    return KataResult(result.kata, checks=checks, error=result.error)


# --------------------------------------------------------------------------------------
# The application: where the learner's files and state are, and how it is clocked
# --------------------------------------------------------------------------------------

@dataclass
class App:
    root: Path  # the repository copy whose katas/ and .kata/ are the learner's
    console: Console
    clock: Callable[[], float] = time.time
    rng: random.Random = field(default_factory=random.Random)
    file_changes: Callable[[Path], Iterable] = watch_file
    interactive: bool = False  # stdin is a terminal: watch may ask questions

    def __post_init__(self) -> None:
        self.store = StateStore(self.root / STATE_DIR, self.warn)

    # -- output --
    def print(self, text: str = "", **options) -> None:
        self.console.print(text, highlight=False, **options)

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

    def table(self, title: str | None = None) -> Table:
        from rich import box

        return Table(title=title, title_justify="left", box=None if self.plain else box.HEAVY_HEAD)

    def code(self, source: str) -> None:
        """Print Python code as code: highlighted on a terminal, never wrapped nor cut - a
        long line stays one line, which the terminal soft-wraps and a copy keeps whole."""
        from rich.syntax import Syntax

        text = Syntax(source, "python", theme="ansi_dark", background_color="default").highlight(source)
        text.rstrip()
        self.console.print(text, soft_wrap=True)

    def markdown(self, source: str) -> None:
        """Print markdown: rendered on a terminal, its code blocks printed as code (rich
        would wrap them mid-expression); as it is, unwrapped, when not on a terminal."""
        if self.plain:
            self.console.print(source, markup=False, highlight=False, soft_wrap=True)
            return
        from rich.markdown import Markdown

        pieces = re.split(r"^```[^\n]*\n(.*?)^```[ \t]*$", source, flags=re.S | re.M)
        for number, piece in enumerate(pieces):
            if number % 2:  # inside a fence
                self.code(textwrap.indent(piece, "    "))
            elif piece.strip():
                self.console.print(Markdown(piece))

    def show_path(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

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

    # -- files --
    def learner_file(self, kata: Kata) -> Path:
        return self.root / "katas" / kata.name / kata.file

    def readme(self, kata: Kata) -> Path:
        """The kata's README in the learner's copy (the installed one if it has none), in
        the learner's language where it has that edition (README.zh-CN.md)."""
        mine = self.root / "katas" / kata.name / "README.md"
        english = mine if mine.is_file() else kata.readme_path
        language = i18n.current()
        edition = english.with_name(i18n.readme_name(language))
        return edition if language != i18n.ENGLISH and edition.is_file() else english

    def is_untouched(self, kata: Kata) -> bool:
        path = self.learner_file(kata)
        return path.is_file() and (_normalised(path.read_bytes())
                                   == _normalised(kata.pristine_skeleton_path.read_bytes()))

    def content_key(self, path: Path) -> str:
        """Names one version of a file as graded by one version of the graders."""
        return hashlib.sha256(graders_fingerprint().encode() + path.read_bytes()).hexdigest()

    def backup(self, kata: Kata) -> Path:
        """Copy the learner's file to .kata/backups/NN_name/, stamped with the time."""
        source = self.learner_file(kata)
        stamp = datetime.datetime.fromtimestamp(self.clock()).strftime("%Y%m%d-%H%M%S")
        folder = self.root / STATE_DIR / "backups" / kata.name
        folder.mkdir(parents=True, exist_ok=True)
        target, number = folder / f"{source.stem}-{stamp}{source.suffix}", 1
        while target.exists():
            number += 1
            target = folder / f"{source.stem}-{stamp}-{number}{source.suffix}"
        target.write_bytes(source.read_bytes())
        return target

    def backups(self, kata: Kata) -> list[Path]:
        """The kata's backups in .kata/backups/NN_name/, newest first (by the time stamped
        in their names, then their number within that second)."""
        folder = self.root / STATE_DIR / "backups" / kata.name
        if not folder.is_dir():
            return []

        def when(path: Path) -> tuple:
            stamp = BACKUP_STAMP.search(path.stem)
            return (stamp.group(1), int(stamp.group(2) or 1)) if stamp else ("", 0)

        return sorted((p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")),
                      key=lambda p: (when(p), p.stat().st_mtime_ns, p.name), reverse=True)

    def restore_skeleton(self, kata: Kata) -> None:
        write_atomically(self.learner_file(kata), kata.pristine_skeleton_path.read_bytes())

    # -- statuses --
    def cached_result(self, state: dict, kata: Kata, language: str | None = None
                      ) -> KataResult | None:
        """The stored result for the file as it is now, if it was graded by these graders
        (and, when ``language`` is given, its verdicts written in that language)."""
        path = self.learner_file(kata)
        entry = state["cache"].get(kata.name)
        if not path.is_file() or not isinstance(entry, dict) or entry.get("key") != self.content_key(path):
            return None
        if language is not None and entry.get("language", i18n.ENGLISH) != language:
            return None
        try:
            return KataResult.from_dict(entry["result"])
        except (KeyError, TypeError):
            return None

    def known_status(self, state: dict, kata: Kata) -> str | None:
        """The kata's status without grading it, or None when it would take grading."""
        if self.is_untouched(kata):
            return NOT_STARTED
        cached = self.cached_result(state, kata)
        return cached.status if cached else None

    def status_now(self, state: dict, kata: Kata, source: str,
                   announce: Callable[[str], None]) -> tuple[str, KataResult | None]:
        """``kata``'s status as its file stands now, with the result it comes from (None for
        a missing file or an untouched skeleton). A file changed since it was last graded is
        graded (and recorded, as from command ``source``), ``announce`` saying so first.
        `kata list` and `kata report` both count progress from this."""
        if not self.learner_file(kata).is_file():
            return FILE_MISSING, None
        if self.is_untouched(kata):
            return NOT_STARTED, None
        result = self.cached_result(state, kata)
        if result is None:
            announce(_("grading {kata}: changed since it was last graded", kata=kata.name))
            result = self.grade(kata, source)
        return result.status, result

    def first_unfinished(self, state: dict, after: Kata | None = None) -> Kata | None:
        """The first kata (after ``after``, wrapping round) not known to pass completely."""
        order = list(registry.KATAS)
        if after is not None:
            start = order.index(after) + 1
            order = order[start:] + order[:start - 1]
        return next((k for k in order if self.known_status(state, k) != ALL_PASSED), None)

    # -- time --
    def touch(self, state: dict, kata: Kata, cap: float = IDLE_GAP_S) -> None:
        """Count the time since the last action on ``kata`` as work (up to ``cap``)."""
        now = self.clock()
        record = state["time"].setdefault(kata.name, {})
        last = record.get("last")
        gap = min(max(0.0, now - last), cap) if isinstance(last, (int, float)) else 0.0
        record["total_s"] = float(record.get("total_s", 0)) + gap
        record["since_attempt_s"] = float(record.get("since_attempt_s", 0)) + gap
        record["last"] = now

    # -- grading --
    def grade(self, kata: Kata, source: str, *, use_cache: bool = False,
              time_cap: float = IDLE_GAP_S) -> KataResult:
        """Grade the learner's file of ``kata`` and record it: the cache, and an attempt when
        this version of the file was not graded before. ``source`` names the command."""
        path = self.learner_file(kata)
        key = self.content_key(path)
        language = i18n.current()  # the verdicts' language: a cached result must share it
        cached = self.cached_result(self.store.read(), kata, language) if use_cache else None
        if cached is not None:
            result = cached
        else:
            from graders.core import session  # imports pytest; torch follows on the first grade

            result = session.grade(kata.id, path)

        def record(state: dict) -> None:
            state["cache"][kata.name] = {"key": key, "result": result.to_dict(),
                                         "language": language}
            self.touch(state, kata, cap=time_cap)
            previous = last_attempt(state, kata)
            if result.status == NOT_STARTED or (previous is not None and previous.get("key") == key):
                return  # an untouched skeleton, or the same file graded again: no new attempt
            now = self.clock()
            spent = state["time"][kata.name]
            state["attempts"].append({
                "kata": kata.name, "at": iso(now), "t": now, "source": source,
                "status": result.status, "slugs": result.slugs, "key": key,
                "duration_s": round(spent.get("since_attempt_s", 0.0), 1),
            })
            spent["since_attempt_s"] = 0.0

        self.store.update(record)
        return result

    def render(self, result: KataResult, console: Console | None = None) -> None:
        """Show a grading result; while a mock interview of its kata runs, without hints: what
        failed and why, but not how to fix it (they come with the verdict of kata mock --submit)."""
        from graders.core import session

        console = console or self.console
        mock = self.running_mock()
        if mock is not None and mock["kata"] == result.kata:
            result = without_hints(result)
            console.print(_("(a mock interview is running: no hints until you hand it in)"),
                          style="dim", highlight=False)
        session.render(result, console, plain=not console.is_terminal)

    def running_mock(self) -> dict | None:
        return self.store.read()["mock"]

    def refuse_during_mock(self, message: str) -> None:
        """A mock interview is an interview: no hints, no solution, no backups brought back
        until it is handed in (one past its deadline was handed in before any command).
        ``message``: the refusal, translated, with ``{kata}`` for the mock's kata."""
        mock = self.running_mock()
        if mock is not None:
            raise Refused(message.format(kata=mock["kata"]))


# --------------------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------------------

def cmd_list(app: App, args: argparse.Namespace) -> int:
    state = app.store.read()
    statuses: dict[str, str] = {}
    rows: dict[str, list[str]] = {}  # kata name -> its cells, plain text
    for kata in registry.KATAS:
        status, result = app.status_now(state, kata, "list", lambda note: app.print(note, style="dim"))
        statuses[kata.name] = status
        mistake = f"kata reset {kata.id}" if status == FILE_MISSING else ""
        if result is not None and result.slugs:
            mistake = f"[{result.slugs[0]}]"
        if result is not None and result.error:
            mistake = _("grader error: kata check {kata}", kata=kata.id)
        level = _("{difficulty}, {minutes} min", difficulty=difficulty_word(kata.difficulty),
                  minutes=kata.target_minutes)
        rows[kata.name] = [kata.name, progress_words(status), mistake,
                           f"{hint_level(state, kata)}/{len(kata.hints)}", level,
                           translate(kata.title)]
    # level: difficulty, mock target
    columns = [_("kata"), _("status"), _("mistake"), _("hints"), _("level")]
    if app.console.width >= WIDE_ENOUGH_FOR_TITLES:
        columns.append(_("title"))
    # One width per column across the tracks' tables, so that they line up (in terminal
    # columns: a Chinese character takes two).
    widths = [max(i18n.display_width(name), *(i18n.display_width(cells[n]) for cells in rows.values()))
              for n, name in enumerate(columns)]
    wrapping = (2, 5)  # mistake and title may wrap
    for title, members in tracks(registry.KATAS):
        table = app.table(track_heading(title, members))
        for n, (name, width) in enumerate(zip(columns, widths)):
            table.add_column(name, min_width=min(width, 30) if n == 2 else width,
                             no_wrap=n not in wrapping, overflow="fold")
        for kata in members:
            cells = rows[kata.name][:len(columns)]
            cells[1] = styled(statuses[kata.name])
            table.add_row(*(cell if n == 1 else escape(cell) for n, cell in enumerate(cells)))
        app.console.print(table)
    app.print(progress_line(statuses), style="bold")
    upcoming = next((k for k in registry.KATAS if statuses[k.name] != ALL_PASSED), None)
    if upcoming is None:
        app.print(_("Time yourself on one: kata mock"))
    else:
        app.print(_("Next: read {readme}, edit {file}, then kata check {kata} (or kata watch "
                    "{kata})", readme=app.show_path(app.readme(upcoming)),
                    file=app.show_path(app.learner_file(upcoming)), kata=upcoming.id))
    return 0


def cmd_check(app: App, args: argparse.Namespace) -> int:
    if args.impl:
        # Any file, graded as it is: nothing about it is recorded in the learner's state.
        if not args.kata:
            raise UsageError(_("--impl needs the kata to grade it as: kata check 03 --impl PATH"))
        kata = resolve(args.kata)
        from graders.core import session

        result = session.grade(kata.id, args.impl)
        app.render(result)
        return 0 if result.passed else 1
    state = app.store.read()
    if args.kata:
        kata = resolve(args.kata)
    else:
        kata = app.first_unfinished(state)
        if kata is None:
            app.print(_("Every kata passes. Re-check one with kata check KATA, or try kata mock."))
            return 0
        app.print(_("checking {kata}, the first kata not passed yet", kata=kata.name), style="dim")
    path = app.learner_file(kata)
    if not path.is_file():
        app.print(_("{file} is missing: kata reset {kata} restores the skeleton.",
                    file=app.show_path(path), kata=kata.id))
        return 1
    result = app.grade(kata, "check")
    app.render(result)
    state = app.store.read()
    if result.passed:
        upcoming = app.first_unfinished(state, after=kata)
        if upcoming:
            text = _("{kata} passes. Next: kata check {next}", kata=kata.name, next=upcoming.id)
        else:
            text = _("{kata} passes. Every kata passes.", kata=kata.name)
        app.print("\n" + text, style="green")
    elif state["mock"] is not None:
        app.print("\n" + _("Still in the mock interview: fix it, then kata mock --submit"))
    elif hint_level(state, kata) < len(kata.hints):
        app.print("\n" + _("Stuck? kata hint {kata} ({used}/{total} hints used)", kata=kata.id,
                           used=hint_level(state, kata), total=len(kata.hints)))
    return 0 if result.passed else 1


def cmd_hint(app: App, args: argparse.Namespace) -> int:
    kata = resolve(args.kata)
    app.refuse_during_mock(_("a mock interview of {kata} is running: hints must wait until you "
                             "hand it in (kata mock --submit)."))
    top = len(kata.hints)

    def reveal_next(state: dict) -> tuple[int, bool]:
        level = hint_level(state, kata)
        state["hints"][kata.name] = min(level + 1, top)
        app.touch(state, kata)
        return min(level + 1, top), level == top

    if args.all:
        state = app.store.read()
        level, exhausted = hint_level(state, kata), False
        if level == 0:
            app.print(_("No hints revealed for {kata} yet: kata hint {id} shows the first.",
                        kata=kata.name, id=kata.id))
        shown = range(1, level + 1)
    else:
        level, exhausted = app.store.update(reveal_next)
        state = app.store.read()
        shown = range(level, level + 1)
    for number in shown:
        app.heading(_("hint {number}/{total} ({level}) - {kata}", number=number, total=top,
                      level=hint_level_word(HINT_LEVELS[number - 1]), kata=kata.name))
        text = translate(kata.hints[number - 1])
        if HINT_LEVELS[number - 1] == "near-code":
            app.code(textwrap.indent(text, "    "))  # code: never wrapped mid-expression
        else:
            app.print(text, markup=False)  # prose: wrapped to the terminal
    if exhausted:
        app.print("\n" + _("That was the last hint. Still stuck? kata solution {kata} (your "
                           "report will show it).", kata=kata.id))
    latest = last_attempt(state, kata)
    if latest and latest.get("slugs"):
        slug = latest["slugs"][0]
        if slug in MISTAKES:
            app.print("\n" + _("Your last attempt ({at}) made the mistake [{slug}]: {explanation}",
                               at=latest["at"], slug=slug,
                               explanation=translate(MISTAKES[slug].explanation)), markup=False)
            app.print(_("hint: {hint}", hint=translate(MISTAKES[slug].hint)), markup=False)
    return 0


def watch_kata(app: App, kata: Kata) -> Kata | None:
    """Grade ``kata`` now and after each change to its file; returns the kata to watch next
    when the learner accepts to move on, None when the changes end."""
    path = app.learner_file(kata)
    for _change in itertools.chain([None], app.file_changes(path)):  # None: grade before any save
        app.console.clear()
        if not app.console.is_terminal:
            app.heading(time.strftime("%H:%M:%S", time.localtime(app.clock())))
        if not path.is_file():
            app.print(_("{file} is missing (kata reset {kata} restores it)",
                        file=app.show_path(path), kata=kata.id))
            continue
        result = app.grade(kata, "watch", use_cache=True)
        app.render(result)
        app.print("\n" + _("watching {file}: save to re-grade, Ctrl-C to stop",
                           file=app.show_path(path)), style="dim")
        if result.passed:
            upcoming = app.first_unfinished(app.store.read(), after=kata)
            if upcoming is None:
                app.print(_("Every kata passes."), style="green")
            elif app.interactive and app.confirm(_("{kata} passes: move on to {next}?",
                                                   kata=kata.name, next=upcoming.name)):
                return upcoming
            elif not app.interactive:
                app.print(_("{kata} passes. Next: kata watch {next}", kata=kata.name,
                            next=upcoming.id), style="green")
    return None


def cmd_watch(app: App, args: argparse.Namespace) -> int:
    kata = resolve(args.kata) if args.kata else app.first_unfinished(app.store.read())
    if kata is None:
        app.print(_("Every kata passes: name one to watch, e.g. kata watch 03"))
        return 0
    try:
        while kata is not None:
            kata = watch_kata(app, kata)
    except KeyboardInterrupt:
        app.print("\n" + _("stopped watching."))
    return 0


def cmd_reset(app: App, args: argparse.Namespace) -> int:
    kata = resolve(args.kata)
    path = app.learner_file(kata)
    if app.is_untouched(kata):
        app.print(_("{file} is already the untouched skeleton.", file=app.show_path(path)))
        return 0
    if not app.confirm(_("Replace {file} with the skeleton? (your file is backed up first)",
                         file=app.show_path(path)), args.yes):
        app.print(_("Nothing changed."))
        return 1
    if path.is_file():
        app.print(_("your file is backed up as {backup}", backup=app.show_path(app.backup(kata))))
    app.restore_skeleton(kata)
    app.print(_("{file} is the skeleton again.", file=app.show_path(path)))
    return 0


def backup_time(path: Path) -> str:
    """When a backup was made, from the stamp in its name (its file time otherwise)."""
    stamp = BACKUP_STAMP.search(path.stem)
    if stamp:
        return datetime.datetime.strptime(stamp.group(1), "%Y%m%d-%H%M%S").strftime("%Y-%m-%d %H:%M:%S")
    return iso(path.stat().st_mtime).replace("T", " ")


def cmd_restore(app: App, args: argparse.Namespace) -> int:
    kata = resolve(args.kata)
    mock = app.running_mock()
    if mock is not None and mock["kata"] == kata.name:
        app.refuse_during_mock(_("a mock interview of {kata} is running: bringing back a backup "
                                 "of {kata} must wait until you hand it in (kata mock --submit)."))
    path = app.learner_file(kata)
    backups = app.backups(kata)
    if not backups:
        app.print(_("{kata} has no backups yet: kata reset and kata mock make one before they "
                    "replace your file.", kata=kata.name))
        return 1
    current = path.read_bytes() if path.is_file() else None
    if args.list:
        app.print(_("backups of {file}, newest first (kata restore {kata} N brings number N "
                    "back):", file=app.show_path(path), kata=kata.id))
        for number, backup in enumerate(backups, start=1):
            notes = [_("latest")] if number == 1 else []
            if current is not None and backup.read_bytes() == current:
                notes.append(_("same as your file"))
            lines = _("{count} lines", count=f"{len(backup.read_bytes().splitlines()):>4}")
            app.print(f"  {number:>2}  {backup_time(backup)}  {lines}  "
                      f"{app.show_path(backup)}" + (f"  ({', '.join(notes)})" if notes else ""),
                      markup=False)
        return 0
    choice = args.backup or "1"
    if choice.isdigit() and 1 <= int(choice) <= len(backups):
        chosen = backups[int(choice) - 1]
    else:
        named = [b for b in backups if choice in (b.name, b.stem)]
        if not named:
            raise UsageError(_("{kata} has no backup {choice}: its backups are numbered 1 to "
                               "{count} (kata restore {id} --list shows them)", kata=kata.name,
                               choice=repr(choice), count=len(backups), id=kata.id))
        chosen = named[0]
    if current is not None and chosen.read_bytes() == current:
        app.print(_("{file} is already the same as {backup}.", file=app.show_path(path),
                    backup=app.show_path(chosen)))
        return 0
    if current is not None and not app.is_untouched(kata):
        app.print(_("your file is backed up as {backup}", backup=app.show_path(app.backup(kata))))
    write_atomically(path, chosen.read_bytes())

    def record(state: dict) -> None:
        app.touch(state, kata)

    app.store.update(record)
    app.print(_("{file} is back to the backup of {time} ({backup}).", file=app.show_path(path),
                time=backup_time(chosen), backup=app.show_path(chosen)))
    return 0


def cmd_solution(app: App, args: argparse.Namespace) -> int:
    kata = resolve(args.kata)
    app.refuse_during_mock(_("a mock interview of {kata} is running: the solution must wait "
                             "until you hand it in (kata mock --submit)."))
    if not app.confirm(_("Show the reference solution of {kata}? Your report will say you saw "
                         "it.", kata=kata.name), args.yes):
        app.print(_("Not shown."))
        return 1

    def record(state: dict) -> None:
        now = app.clock()
        state["revealed"].setdefault(kata.name, {"at": iso(now), "t": now})
        app.touch(state, kata)

    app.store.update(record)
    app.code(kata.solution_path.read_text(encoding="utf-8"))
    app.print("\n" + _("Now close it and write it yourself: kata reset {kata}, or kata mock "
                       "{kata}.", kata=kata.id))
    return 0


def cmd_mock(app: App, args: argparse.Namespace) -> int:
    if args.submit:
        return submit_mock(app)
    state = app.store.read()
    running = state["mock"]
    if running is not None:
        kata = registry.get(running["kata"])
        if args.kata and resolve(args.kata) != kata:
            raise UsageError(_("a mock interview of {kata} is running: hand it in first "
                               "(kata mock --submit)", kata=kata.name))
        show_running_mock(app, running)
        return 0
    if args.minutes is not None and args.minutes <= 0:
        raise UsageError(_("--minutes must be a positive number"))
    if args.kata:
        kata = resolve(args.kata)
    else:
        not_passed = [k for k in registry.KATAS if best_status(state, k) != ALL_PASSED]
        kata = app.rng.choice(not_passed or list(registry.KATAS))
    minutes = kata.target_minutes if args.minutes is None else args.minutes
    path = app.learner_file(kata)
    if not app.is_untouched(kata):
        if not app.confirm(_("A mock starts from the skeleton: back up {file} and reset it?",
                             file=app.show_path(path)), args.yes):
            app.print(_("No mock started."))
            return 1
        if path.is_file():
            app.print(_("your file is backed up as {backup}", backup=app.show_path(app.backup(kata))))
        app.restore_skeleton(kata)

    def start(state: dict) -> dict:
        now = app.clock()
        state["mock"] = {"kata": kata.name, "started": now, "deadline": now + minutes * 60,
                         "minutes": minutes}
        app.touch(state, kata)
        return state["mock"]

    mock = app.store.update(start)
    app.heading(_("mock interview: {kata} - {title}", kata=kata.name, title=translate(kata.title)),
                style="bold")
    readme = app.readme(kata)
    if readme.is_file():
        app.markdown(questions_only(readme.read_text(encoding="utf-8")))
    else:
        app.print(_("{title}: {readme} is missing; the skeleton's docstrings state the task.",
                    title=translate(kata.title), readme=app.show_path(readme)))
    app.heading(style="bold")
    app.print(_("You have {time} (until {clock}). Edit {file}, then hand it in with kata mock "
                "--submit. It is an interview: no hints and no solution until you hand it in; "
                "answer the interviewer follow-ups aloud.",
                time=countdown(mock["deadline"] - mock["started"]),
                clock=clock_time(mock["deadline"]), file=app.show_path(path)), style="bold")
    return 0


def show_running_mock(app: App, mock: dict) -> None:
    kata = registry.get(mock["kata"])
    left = mock["deadline"] - app.clock()
    app.print(_("mock interview of {kata}: {time} left (until {clock}); edit {file}, then kata "
                "mock --submit", kata=kata.name, time=countdown(left),
                clock=clock_time(mock["deadline"]), file=app.show_path(app.learner_file(kata))),
              style="bold")


def submit_mock(app: App, console: Console | None = None) -> int:
    """Grade the running mock as it stands and record it; after the deadline it is recorded
    as "time ran out". Exit status 0 only when it passes in time."""
    console = console or app.console
    mock = app.store.read()["mock"]
    if mock is None:
        raise UsageError(_("no mock interview is running: start one with kata mock"))
    kata = registry.get(mock["kata"])
    now = app.clock()
    late = now > mock["deadline"]
    taken = min(now, mock["deadline"]) - mock["started"]
    if app.learner_file(kata).is_file():
        result = app.grade(kata, "mock", time_cap=mock["minutes"] * 60)
    else:
        result = KataResult(kata.name, error=_("{file} is missing",
                                               file=app.show_path(app.learner_file(kata))))
    outcome = TIME_RAN_OUT if late else result.status

    def finish(state: dict) -> None:
        state["mock"] = None
        state["mocks"].append({"kata": kata.name, "started": iso(mock["started"]),
                               "minutes": mock["minutes"], "taken_s": round(taken, 1),
                               "status": result.status, "outcome": outcome,
                               "slugs": result.slugs})

    app.store.update(finish)
    app.render(result, console)
    if late:
        verdict = _("mock interview of {kata}: {outcome} after {minutes} min (graded as it "
                    "stood: {status})", kata=kata.name, outcome=outcome_word(outcome),
                    minutes=f"{mock['minutes']:g}", status=shown(result.status))
    else:
        verdict = _("mock interview of {kata}: {outcome} in {taken} of {allowed}", kata=kata.name,
                    outcome=outcome_word(outcome), taken=countdown(taken),
                    allowed=countdown(mock["minutes"] * 60))
    console.print(f"\n{verdict}", style="bold", highlight=False)
    return 0 if result.passed and not late else 1


def settle_expired_mock(app: App, console: Console) -> bool:
    """A running mock past its deadline is handed in as it stands, whatever command runs.
    Returns whether there was one."""
    mock = app.store.read()["mock"]
    if mock is None or app.clock() <= mock["deadline"]:
        return False
    console.print(_("Time ran out for the mock interview of {kata}: grading it as it stands.",
                    kata=mock["kata"]), style="bold", highlight=False)
    submit_mock(app, console)
    console.print()
    return True


# --------------------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------------------

def kata_summary(state: dict, kata: Kata, status_now: str) -> dict:
    attempts = [a for a in state["attempts"] if a["kata"] == kata.name]
    seen = collections.Counter(slug for a in attempts for slug in dict.fromkeys(a.get("slugs") or []))
    revealed = state["revealed"].get(kata.name)
    return {
        "kata": kata.name,
        "title": kata.title,
        "track": kata.track,
        "status": status_now,  # the file as it stands: what `kata list` shows
        "best_status": best_status(state, kata),  # the best any graded attempt reached
        "attempts": len(attempts),
        "time_s": round(float(state["time"].get(kata.name, {}).get("total_s", 0.0)), 1),
        "hints_used": hint_level(state, kata),
        "hints_total": len(kata.hints),
        "solution_revealed": revealed["at"] if isinstance(revealed, dict) else None,
        "mistakes": dict(seen.most_common()),
        "recurring_mistakes": [slug for slug, count in seen.most_common() if count >= 2],
    }


def practise_next(summaries: list[dict], state: dict) -> list[dict]:
    """What to work on, most useful first: mistakes that keep coming back, katas still
    failing, solutions seen but not yet written alone, follow-ups left, then new katas.
    No hint for the kata of a running mock interview."""
    passed_mocks = {m["kata"] for m in state["mocks"] if m.get("outcome") == ALL_PASSED}
    in_mock = (state["mock"] or {}).get("kata")
    buckets: list[list[dict]] = [[] for _bucket in range(5)]
    for s in summaries:
        status, recurring = s["best_status"], s["recurring_mistakes"]
        if status != ALL_PASSED and recurring:
            slug = recurring[0]
            hint = MISTAKES[slug].hint if slug in MISTAKES and s["kata"] != in_mock else ""
            reason = _("{status}, and [{slug}] keeps coming back ({count} attempts).",
                       status=shown(status), slug=slug, count=s["mistakes"][slug])
            buckets[0].append({"kata": s["kata"], "reason": f"{reason} {translate(hint)}".strip()})
        elif status == FAILING:
            buckets[1].append({"kata": s["kata"], "reason": _("failing: kata hint may help")})
        elif s["solution_revealed"] and s["kata"] not in passed_mocks:
            buckets[2].append({"kata": s["kata"], "reason": _(
                "you saw the solution: write it alone, timed (kata mock {id})", id=s["kata"][:2])})
        elif status == CORE_PASSED:
            buckets[3].append({"kata": s["kata"], "reason": _("core passed: the follow-ups are left")})
        elif status == NOT_STARTED:
            buckets[4].append({"kata": s["kata"], "reason": shown(NOT_STARTED)})
    return [item for bucket in buckets for item in bucket]


def build_report(app: App, announce: Callable[[str], None]) -> dict:
    """The self-assessment as data. Progress counts every kata's status now, exactly as
    `kata list` does (a file changed since it was last graded is graded, ``announce``
    saying so); each kata's best status over all its attempts is reported beside it."""
    state = app.store.read()
    now = {kata.name: app.status_now(state, kata, "report", announce)[0] for kata in registry.KATAS}
    state = app.store.read()  # with the attempts just graded
    summaries = [kata_summary(state, kata, now[kata.name]) for kata in registry.KATAS]
    return {
        "generated": iso(app.clock()),
        "progress": progress_line(now),
        "tracks": [{"track": key, "title": title,
                    "katas": [k.name for k in registry.KATAS if k.track == key]}
                   for key, title in registry.TRACKS.items()],
        "katas": summaries,
        "mocks": state["mocks"],
        "practise_next": practise_next(summaries, state),
    }


def report_markdown(report: dict) -> str:
    lines = [_("# Attention katas: self-assessment ({time})",
               time=report["generated"].replace("T", " ")), "",
             _("{progress}.", progress=report["progress"]), "",
             _("_Status now: your file as it stands (as in `kata list`); best: the best any of "
               "your graded attempts reached._")]
    summaries = {s["kata"]: s for s in report["katas"]}
    for title, members in tracks(k for k in registry.KATAS if k.name in summaries):
        lines += ["", f"## {track_heading(title, members)}", "",
                  _("| kata | status now | best | attempts | time | hints | solution seen | "
                    "recurring mistakes |"),
                  "|---|---|---|---|---|---|---|---|"]
        for s in (summaries[k.name] for k in members):
            recurring = ", ".join(f"`{slug}` ×{s['mistakes'][slug]}" for slug in s["recurring_mistakes"])
            seen = _("yes") if s["solution_revealed"] else _("no")
            lines.append(f"| {s['kata']} | {progress_words(s['status'])} | "
                         f"{shown(s['best_status'])} | {s['attempts']} "
                         f"| {duration(s['time_s'])} | {s['hints_used']}/{s['hints_total']} | "
                         f"{seen} | {recurring or '-'} |")
    if report["mocks"]:
        lines += ["", _("## Mock interviews"), "",
                  _("| kata | started | time taken | result |"), "|---|---|---|---|"]
        for m in report["mocks"]:
            taken = _("{taken} of {allowed}", taken=countdown(m["taken_s"]),
                      allowed=countdown(m["minutes"] * 60))
            lines.append(f"| {m['kata']} | {m['started'].replace('T', ' ')} | {taken} | "
                         f"{outcome_word(m['outcome'])} |")
    lines += ["", _("## What to practise next"), ""]
    if report["practise_next"]:
        lines += [f"{n}. **{item['kata']}**: {item['reason']}"
                  for n, item in enumerate(report["practise_next"], start=1)]
    else:
        lines.append(_("Every kata passes. Keep them fresh with timed mocks: `kata mock`."))
    lines.append("")
    lines.append(_("_Time counts the minutes between your actions on a kata; a pause of more than "
                   "{minutes} minutes counts as a break._", minutes=IDLE_GAP_S // 60))
    return "\n".join(lines)


def cmd_report(app: App, args: argparse.Namespace) -> int:
    notes = Console(stderr=True, highlight=False)  # keep stdout the report alone
    report = build_report(app, lambda note: notes.print(note, style="dim", markup=False))
    text = json.dumps(report, indent=2, ensure_ascii=False) if args.json else report_markdown(report)
    app.console.print(text, markup=False, highlight=False, soft_wrap=True)
    return 0


# --------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------

COMMANDS = {"list": cmd_list, "check": cmd_check, "hint": cmd_hint, "watch": cmd_watch,
            "reset": cmd_reset, "restore": cmd_restore, "solution": cmd_solution, "mock": cmd_mock,
            "report": cmd_report}
LANGUAGE_OPTION = "--lang"


def kata_help() -> str:
    return _("an id (03_mha), number (3, 03) or short name (mha)")


def overview() -> str:
    """The command's description for ``kata --help``, in the learner's language."""
    return _(
        "The kata command: practice as a loop - see where you are, try, get a precise verdict,\n"
        "get a hint, try again.\n\n"
        "    kata list                 every kata by track, with its status, a progress line, what next\n"
        "    kata check [KATA]         grade a kata (default: the first one not passed yet)\n"
        "    kata hint KATA            the next hint: a nudge, then the key idea, then near-code\n"
        "    kata watch [KATA]         re-grade on every save\n"
        "    kata reset KATA           back to the skeleton (your file is backed up first)\n"
        "    kata restore KATA [N]     bring a backup back (the latest; --list shows them all)\n"
        "    kata solution KATA        show the reference solution (your report will say so)\n"
        "    kata mock [KATA]          a timed mock interview; hand it in with `kata mock --submit`\n"
        "    kata report               a self-assessment in markdown (--json for machines)\n\n"
        "KATA is an id (03_mha), a number (3 or 03) or a short name (mha).\n\n"
        "Language: --lang LANG (before or after the command), else KATA_LANG, else a zh locale\n"
        "(LC_ALL, LC_MESSAGES, LANG) selects Chinese; English otherwise. Languages: {languages}.\n\n"
        "Which copy of the repository: the one the current directory is in (searched upwards for a\n"
        "folder with katas/ and graders/core/registry.py), else the copy this command was\n"
        "installed from - said in one line, as is KATA_ROOT=DIR, which points the command at\n"
        "another copy. That copy's katas/ are the learner's files and its .kata/ their progress.",
        languages=", ".join(i18n.languages()))


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """argparse's help layout, its "usage: " in the learner's language."""

    def add_usage(self, usage, actions, groups, prefix=None):
        return super().add_usage(usage, actions, groups, _("usage: ") if prefix is None else prefix)


def localised(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``parser`` with argparse's own headings and ``--help`` text in the learner's language."""
    parser._positionals.title = _("positional arguments")
    parser._optionals.title = _("options")
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            action.help = _("show this help message and exit")
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The command line, its help in the learner's language (chosen before it is built)."""
    parser = localised(argparse.ArgumentParser(prog="kata", description=overview(),
                                               formatter_class=HelpFormatter))
    language_help = _("the language to read: {languages} (default: KATA_LANG, else the locale)",
                      languages=", ".join(i18n.languages()))
    parser.add_argument(LANGUAGE_OPTION, metavar="LANG", help=language_help)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    kata_text = kata_help()

    def command(name: str, summary: str, details: str) -> argparse.ArgumentParser:
        """``summary``: one line, already a sentence; ``details``: the rest of the help."""
        p = localised(sub.add_parser(name, help=summary, description=f"{summary}\n\n{details}",
                                     formatter_class=HelpFormatter))
        # Also after the command (kata list --lang zh-CN); main() reads it before parsing.
        p.add_argument(LANGUAGE_OPTION, metavar="LANG", default=argparse.SUPPRESS,
                       help=language_help)
        return p

    command("list", _("Every kata with its status, and what to do next."),
            _("Katas in two tracks: foundations, then full models and modern inference; each\n"
              "with its difficulty and the target time of a mock interview. Statuses, of your\n"
              "file as it stands: not started (skeleton untouched), failing (with the first\n"
              "mistake the grader recognised), core passed (follow-ups left), all passed.\n"
              "Only files changed since they were last graded are graded again."))
    p = command("check", _("Grade a kata and show the report."),
                _("Runs the same checks as `pytest katas/NN_name`: core checks, then follow-ups,\n"
                  "with the mistakes recognised and their hints. Exit status 0 only when every\n"
                  "check passes, 1 when one fails, 2 on a usage error.\n\n"
                  "  kata check           the first kata not passed yet\n"
                  "  kata check mha       katas/03_mha/mha.py\n"
                  "  kata check 3 --impl ~/my_mha.py   grade another file (nothing recorded)"))
    p.add_argument("kata", nargs="?", help=_("the kata: {kata_help}; default: the first not passed",
                                             kata_help=kata_text))
    p.add_argument("--impl", metavar="PATH", help=_("grade the file at PATH instead of the kata's file"))
    p = command("hint", _("The next hint for a kata."),
                _("Each kata has three hints, one more per call: a nudge, the key idea, then\n"
                  "near-code. If your last attempt made a recognised mistake, its hint follows.\n"
                  "Refused while a mock interview runs."))
    p.add_argument("kata", help=kata_text)
    p.add_argument("--all", action="store_true",
                   help=_("show the hints revealed so far, revealing no new one"))
    p = command("watch", _("Re-grade a kata every time its file is saved."),
                _("Clears the screen and shows the report after each save; when the kata passes,\n"
                  "offers to move on to the next one. Ctrl-C stops."))
    p.add_argument("kata", nargs="?", help=_("the kata: {kata_help}; default: the first not passed",
                                             kata_help=kata_text))
    p = command("reset", _("Restore a kata's skeleton."),
                _("Your file is first copied to .kata/backups/NN_name/ (the path is printed)."))
    p.add_argument("kata", help=kata_text)
    p.add_argument("--yes", "-y", action="store_true", help=_("do not ask for confirmation"))
    p = command("restore", _("Bring back a backup of a kata's file."),
                _("kata reset and kata mock back your file up in .kata/backups/NN_name/ before\n"
                  "replacing it. This brings the latest backup back, or backup N of the list;\n"
                  "what it replaces is backed up first.\n\n"
                  "  kata restore 3 --list   the backups of 03_mha, newest first\n"
                  "  kata restore 3          the latest\n"
                  "  kata restore 3 2        number 2 of the list"))
    p.add_argument("kata", help=kata_text)
    p.add_argument("backup", nargs="?",
                   help=_("number N of --list, or a backup's file name (default: 1, the latest)"))
    p.add_argument("--list", action="store_true", help=_("list the backups, restoring nothing"))
    p = command("solution", _("Print a kata's reference solution."),
                _("Asks first; once shown, `kata report` says you saw it. Refused while a mock\n"
                  "interview runs."))
    p.add_argument("kata", help=kata_text)
    p.add_argument("--yes", "-y", action="store_true", help=_("do not ask for confirmation"))
    p = command("mock", _("A timed mock interview."),
                _("Starts one: picks a kata (default: a random one not passed yet), resets its file\n"
                  "to the skeleton (backing yours up), shows the task and its interviewer\n"
                  "follow-ups (without their answers) and starts the clock: the kata's target\n"
                  "time (kata list shows it) unless --minutes says otherwise. While it runs,\n"
                  "`kata mock` shows the time left, and hints, the solution and restoring the\n"
                  "kata's backups are refused. Hand it in with `kata mock --submit`; past the\n"
                  "deadline, any kata command hands it in as it stands, recorded as\n"
                  "\"time ran out\"."))
    p.add_argument("kata", nargs="?", help=_("the kata: {kata_help}; default: random, not passed yet",
                                             kata_help=kata_text))
    p.add_argument("--minutes", type=float, default=None,
                   help=_("time allowed (default: the kata's target time)"))
    p.add_argument("--submit", action="store_true",
                   help=_("hand in the running mock: grade and record it"))
    p.add_argument("--yes", "-y", action="store_true",
                   help=_("reset a file with work in it without asking"))
    p = command("report", _("A self-assessment of your practice."),
                _("Progress as kata list counts it; per kata, by track: status now, best status,\n"
                  "attempts, time spent, hints used, whether you saw the solution, mistakes that\n"
                  "came back in two or more attempts; your mock interviews; and what to practise\n"
                  "next. Markdown, or JSON with --json."))
    p.add_argument("--json", action="store_true", help=_("JSON for machines instead of markdown"))
    return parser


def language_argument(argv: list[str]) -> str | None:
    """The value of ``--lang`` anywhere on the command line (``--lang zh-CN`` or
    ``--lang=zh-CN``; the last one wins), or None. Read before the parser is built, so that
    the help and argparse's own messages are in that language too."""
    chosen = None
    for index, word in enumerate(argv):
        if word == "--":
            break
        if word == LANGUAGE_OPTION:
            chosen = argv[index + 1] if index + 1 < len(argv) else ""
        elif word.startswith(LANGUAGE_OPTION + "="):
            chosen = word.split("=", 1)[1]
    return chosen


def main(argv: list[str] | None = None, *, root: Path | str | None = None,
         console: Console | None = None, clock: Callable[[], float] | None = None,
         rng: random.Random | None = None, file_changes: Callable[[Path], Iterable] | None = None,
         interactive: bool | None = None) -> int:
    """Run the ``kata`` command; returns its exit status. The keyword arguments replace the
    real world for tests: the repository copy (instead of locate_repository), the console,
    the clock, the random choice of mock, the file watcher and whether stdin is a terminal."""
    argv = sys.argv[1:] if argv is None else list(argv)
    language = language_argument(argv)
    if language is not None:
        try:
            i18n.use(language)  # sets KATA_LANG: the grading in this process reads it too
        except ValueError:
            (console or make_console()).print(
                _("kata: no language {language}; available: {languages}", language=repr(language),
                  languages=", ".join(i18n.languages())), markup=False, highlight=False)
            return 2
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as stop:  # --help, or a usage error argparse has already explained
        return stop.code if isinstance(stop.code, int) else 0
    if root is not None:
        root, where = Path(root).resolve(), None
    else:
        root, where = locate_repository(Path.cwd(), os.environ)
    app = App(root=root, console=console or make_console(), clock=clock or time.time,
              rng=rng or random.Random(), file_changes=file_changes or watch_file,
              interactive=sys.stdin.isatty() if interactive is None else interactive)
    command = args.command or "list"
    quiet = command == "report" and args.json  # keep stdout pure JSON
    if where is not None:  # on stderr: `kata report > report.md` stays the report
        Console(stderr=True, highlight=False).print(where, style="dim", markup=False, soft_wrap=True)
    try:
        if not (command == "mock" and args.submit):
            settled = settle_expired_mock(app, Console(stderr=True, highlight=False) if quiet
                                          else app.console)
            if settled and command == "mock":
                app.print(_("Start another with kata mock."))  # not on the heels of the one that ended
                return 0
        if command in ("list", "check") and not getattr(args, "impl", None):
            mock = app.store.read()["mock"]
            if mock is not None:
                show_running_mock(app, mock)
        return COMMANDS[command](app, args)
    except UsageError as error:
        app.console.print(f"kata: {error}", markup=False, highlight=False)
        return 2
    except Refused as refusal:
        app.console.print(f"kata: {refusal}", markup=False, highlight=False, soft_wrap=True)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
