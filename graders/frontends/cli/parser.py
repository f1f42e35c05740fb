"""The ``kata`` command line: its parser and help, in the learner's language."""

from __future__ import annotations

import argparse

from graders.core import i18n
from graders.core.i18n import _

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
        "    kata hint [KATA]          the next hint: a nudge, then the key idea, then near-code\n"
        "    kata watch [KATA]         re-grade on every save\n"
        "    kata reset KATA           back to the skeleton (your file is backed up first)\n"
        "    kata restore KATA [N]     bring a backup back (the latest; --list shows them all)\n"
        "    kata solution KATA        show the reference solution (your report will say so)\n"
        "    kata review [KATA]        what is due for review today; KATA starts one (--mock)\n"
        "    kata mock [KATA]          a timed mock interview (KATA or --random); --submit, --abort\n"
        "    kata quiz [KATA]          the interviewer follow-up questions, marked\n"
        "    kata report               a self-assessment in markdown (--json for machines)\n"
        "    kata serve                the practice room in the browser (--port, --no-browser)\n\n"
        "KATA is an id (03_mha), a number (3 or 03), a short name (mha) or a unique part of one\n"
        "(flash).\n\n"
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

    def format_help(self) -> str:
        """argparse ends each heading with ":"; the learner's language may use another colon."""
        text = super().format_help()
        for heading in (_("positional arguments"), _("options")):
            text = text.replace(f"\n{heading}:\n", "\n" + _("{heading}:", heading=heading) + "\n")
        return text


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
    p.add_argument("--show-prints", action="store_true",
                   help=_("show what your code printed while graded (its first lines)"))
    p = command("hint", _("The next hint for a kata."),
                _("Each kata has three hints, one more per call: a nudge, the key idea, then\n"
                  "near-code. If your last attempt made a recognised mistake, its hint follows.\n"
                  "Refused while a mock interview runs."))
    p.add_argument("kata", nargs="?", help=_("the kata: {kata_help}; default: the first not passed",
                                             kata_help=kata_text))
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
    p = command("review", _("Katas due for review, and a review started."),
                _("A kata comes back for review when it passed only after hints or the solution,\n"
                  "when a mistake recurred in it, or when a mock of it ran out of time. A bare\n"
                  "`kata review` lists what is due today and the mistakes you made in several\n"
                  "katas; `kata review KATA` starts one: the kata's file back to the skeleton\n"
                  "(yours backed up first), or a timed mock with --mock. Passing it without hints\n"
                  "or the solution spaces the next review out (1, 3, 7, then 21 days); passing\n"
                  "it with help starts again at 1 day."))
    p.add_argument("kata", nargs="?", help=_("the kata to review: {kata_help}", kata_help=kata_text))
    p.add_argument("--mock", action="store_true", help=_("review it as a timed mock interview"))
    p.add_argument("--minutes", type=float, default=None,
                   help=_("with --mock: time allowed (default: the kata's target time)"))
    p.add_argument("--yes", "-y", action="store_true",
                   help=_("reset a file with work in it without asking"))
    p = command("solution", _("Print a kata's reference solution."),
                _("Asks first; once shown, `kata report` says you saw it. Refused while a mock\n"
                  "interview runs."))
    p.add_argument("kata", help=kata_text)
    p.add_argument("--yes", "-y", action="store_true", help=_("do not ask for confirmation"))
    p = command("mock", _("A timed mock interview."),
                _("`kata mock KATA` (or `kata mock --random`, a kata not passed yet) starts one:\n"
                  "resets the kata's file to the skeleton (backing yours up), shows the task\n"
                  "and its interviewer follow-ups (without their answers) and starts the clock:\n"
                  "the kata's target time (kata list shows it) unless --minutes says otherwise.\n"
                  "A bare `kata mock` starts nothing: it shows the running mock and its time\n"
                  "left, or how to start one. While a mock runs, hints, the solution, the quiz and\n"
                  "restoring the kata's backups are refused, and verdicts leave out mistake names\n"
                  "and hints. Hand it in with `kata mock --submit`, or end it with\n"
                  "`kata mock --abort` (recorded as aborted); past the deadline, any kata command\n"
                  "hands it in as it stands, recorded as \"time ran out\"."))
    p.add_argument("kata", nargs="?", help=_("the kata: {kata_help}", kata_help=kata_text))
    p.add_argument("--random", action="store_true",
                   help=_("start a mock of a random kata not passed yet"))
    p.add_argument("--abort", action="store_true",
                   help=_("end the running mock without grading it (recorded as aborted)"))
    p.add_argument("--minutes", type=float, default=None,
                   help=_("time allowed (default: the kata's target time)"))
    p.add_argument("--submit", action="store_true",
                   help=_("hand in the running mock: grade and record it"))
    p.add_argument("--yes", "-y", action="store_true",
                   help=_("reset a file with work in it without asking"))
    p = command("quiz", _("A kata's interviewer follow-up questions, marked."),
                _("The questions of the kata's notebook quiz, one at a time, each answer marked\n"
                  "at once with its reasoning: a number, or a letter for a choice; Enter skips a\n"
                  "question. Answers are read from the terminal, or one per line from a pipe:\n\n"
                  "  printf '64\\nB\\n' | kata quiz 01\n\n"
                  "Nothing is recorded. Exit status 0 when every answer is right. Refused while\n"
                  "a mock interview runs."))
    p.add_argument("kata", nargs="?", help=_("the kata: {kata_help}; default: the first not passed",
                                             kata_help=kata_text))
    p = command("report", _("A self-assessment of your practice."),
                _("Progress as kata list counts it; per kata, by track: status now, best status,\n"
                  "attempts, time spent, hints used, whether you saw the solution, mistakes that\n"
                  "came back in two or more attempts; your mock interviews; and what to practise\n"
                  "next. Markdown, or JSON with --json."))
    p.add_argument("--json", action="store_true", help=_("JSON for machines instead of markdown"))
    p = command("serve", _("The practice room in the browser."),
                _("Starts a local web app on 127.0.0.1 and opens it: the katas, an editor holding\n"
                  "the kata's file, Check, Hint, Reset, Restore, Solution, Quiz and mock\n"
                  "interviews, on the same files and state as the kata command. The address\n"
                  "it prints carries a secret token: only that address gets in. Ctrl-C stops it."))
    p.add_argument("--port", type=int, default=8765, help=_("the port (default 8765; 0: any free one)"))
    p.add_argument("--no-browser", action="store_true", help=_("do not open a browser"))
    from graders.frontends.cli import dev  # contributors' `kata dev`, left out of the list above

    dev.add_parser(sub)
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
