"""``kata dev new`` and ``kata dev check``: a new kata made by one command, and its
completeness self-tests run for it alone (as rustlings' ``dev new`` / ``dev check``).

``new(root, "20", "moe", file="moe.py", track="inference", title=...)`` writes every stub a
kata needs into the copy of the repository at ``root`` — the learner's folder (skeleton,
thin test, README in each language), the hidden reference, the grader package
(``__init__``, ``checks``, ``meta``, the pristine ``skeleton``), the lesson, the mutants'
list and the styles' folder — adds the registry line (and the track, if it is new), then
runs the catalog update and the notebook build of that copy. The stubs make a kata that
grades (a placeholder function, the identity) so that each hand-written part can be
replaced and checked one at a time; :data:`BY_HAND` is what no command can write.

``check(root, "20")`` runs the self-tests that say whether a kata is complete, for that
kata, in that copy (each in its own pytest process, so a kata added since this process
started is seen), and returns one line per part.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from graders.core.kata import DIFFICULTIES

# What only a person can write, in the order a contributor meets it.
BY_HAND = (
    "katas/{name}/README.md: the problem (keep 'Edit `{file}` in this folder' and the "
    "'## Check your work' block of pytest commands)",
    "katas/{name}/{file}: the skeleton (signatures, docstrings, NotImplementedError); copy it "
    "to graders/{module}/skeleton.py",
    "solutions/{name}/{file}: the reference solution",
    "graders/{module}/checks.py: the grader (the reference with one switch per mistake, the "
    "core and follow-up checks)",
    "graders/{module}/meta.py: prerequisites, mistakes (own ones in MISTAKES; a slug another "
    "kata declares moves to graders/core/catalogue.py's SHARED), forbidden calls, the hint "
    "ladder (the third rung is near-code on two lines or more), the quiz (answers computed by "
    "running code); difficulty and target time come from --difficulty and --minutes",
    "tests/mutants/{name}.py: one mutant per catalogued mistake; tests/styles/{name}/: correct "
    "solutions in other styles",
    "notebooks/lessons/{name}.py: the lesson (keep the '# kata: exercise' and '# kata: quiz' "
    "cells)",
    "katas/{name}/README.zh-CN.md (its title too; every number and code block as in the "
    "English) and the zh msgstr of every new catalog entry (python -m graders.tools.texts "
    "update / export / import; graders/locales/zh_CN/GLOSSARY.md first; a hint that ends in "
    "code takes no full stop)",
    "CONTRACT.md: the kata's section (signatures, layouts, slugs); README.md and "
    "README.zh-CN.md: its row in the katas' table (a new track: its table, and its title in "
    "graders/practice/common.py's track_title so that it is translated)",
    "tests/test_hostile.py: the kata's TARGETS entry (what the sabotage replaces)",
    "then: python -m graders.tools.texts update && python notebooks/build.py {id} && "
    "kata dev check {id}",
)


class ScaffoldError(ValueError):
    """A kata that cannot be made as asked (a taken id or name, a bad file name)."""


@dataclass(frozen=True)
class NewKata:
    id: str  # "20"
    slug: str  # "moe"
    file: str  # "moe.py"
    title: str
    track: str
    difficulty: str = "medium"  # one of graders.core.kata.DIFFICULTIES
    minutes: int = 15  # the mock interview's target time

    @property
    def name(self) -> str:
        return f"{self.id}_{self.slug}"

    @property
    def module(self) -> str:
        return self.file.removesuffix(".py")

    def fields(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name, "file": self.file, "module": self.module,
                "title": self.title, "track": self.track}


def _skeleton(kata: NewKata) -> str:
    return f'''"""Kata {kata.id}: {kata.title}.

Read README.md in this folder, fill in the function below, then run
    pytest katas/{kata.name}
"""

from __future__ import annotations

import torch


def {kata.module}(x: torch.Tensor) -> torch.Tensor:
    """Return a tensor of the shape of x (the stub's placeholder task: replace it)."""
    raise NotImplementedError("see katas/{kata.name}/README.md")
'''


def _solution(kata: NewKata) -> str:
    return f'''"""Reference solution for kata {kata.id}: {kata.title}."""

from __future__ import annotations

import torch


def {kata.module}(x: torch.Tensor) -> torch.Tensor:
    return x.clone()  # the stub's placeholder: replace with the reference
'''


def _thin_test(kata: NewKata) -> str:
    return (f'"""Grades {kata.file}. Run: pytest katas/{kata.name}  (--impl PATH grades another '
            f'file)."""\n\nfrom graders.{kata.module}.checks import *  # noqa: F401,F403  '
            "(the grading checks)\n")


def _readme(kata: NewKata) -> str:
    return f"""# Kata {kata.id} — {kata.title}

[简体中文](README.zh-CN.md)

Edit `{kata.file}` in this folder: the function `{kata.module}(x)` returns a tensor of the
shape of `x`.

## Check your work

```bash
pytest katas/{kata.name}                 # grades {kata.file} in this folder
pytest katas/{kata.name} --impl my.py    # grades any other file (or KATA_IMPL=my.py)
```
"""


def _readme_zh(kata: NewKata) -> str:
    return f"""# Kata {kata.id} — {kata.title}

[English](README.md)

编辑本文件夹中的 `{kata.file}`：函数 `{kata.module}(x)` 返回一个与 `x` 形状相同的张量。

## 检查你的答案

```bash
pytest katas/{kata.name}                 # 为本文件夹中的 {kata.file} 评分
pytest katas/{kata.name} --impl my.py    # 为任意其他文件评分（或者用 KATA_IMPL=my.py）
```
"""


def _package_init(kata: NewKata) -> str:
    return f'''"""Kata {kata.name} ({kata.title}).

``checks`` is its grader (what katas/{kata.name}/test_{kata.file} imports); ``meta`` its registry
entry, hint ladder, own mistakes and quiz; ``skeleton.py`` the pristine skeleton (data, never
imported). Nothing is imported here: reading ``meta`` must stay cheap (no torch).
"""
'''


def _checks(kata: NewKata) -> str:
    return f'''"""Grader for kata {kata.id}: {kata.title}.

:func:`reference` is the kata's reference with one switch per catalogued mistake; a check
compares the learner's output with it and, on a mismatch, tries each mistake's switch to
name the one the learner made.
"""

from __future__ import annotations

import pytest
import torch

from graders.core.compare import expect_close
from graders.core.i18n import N_, _
from graders.core.implementation import Implementation
from graders.core.mistakes import Suspect
from graders.core.report import describe_inputs, title

__all__ = ["test_{kata.module}"]

# A switch of the reference -> the catalogued mistake it reproduces.
MISTAKE_OF: dict[str, str] = {{}}


def reference(x: torch.Tensor, mistake: str | None = None) -> torch.Tensor:
    """The stub's placeholder task (the identity): replace it with the kata's reference."""
    return x.clone()


def suspects(x: torch.Tensor) -> list[Suspect]:
    return [Suspect(slug, lambda switch=switch: reference(x, switch))
            for switch, slug in MISTAKE_OF.items()]


@pytest.mark.core
@title(N_("{kata.module} against its reference"))
def test_{kata.module}(impl: Implementation) -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 3, dtype=torch.float64)
    on = describe_inputs(x=x)
    got = impl.call(impl.attr("{kata.module}"), x.clone(), what="{kata.module}", on=on)
    expect_close(got, reference(x), _("{{function}} against its reference", function="{kata.module}"),
                 on, suspects(x))
'''


def _meta(kata: NewKata) -> str:
    return f'''"""Kata {kata.name} ({kata.title}).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES) and its quiz (QUESTIONS). Imports
nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

from graders.core.kata import Kata, Mistake  # noqa: F401 (Mistake: for MISTAKES)
from graders.core.quizzes import CHOICE, INTEGER, Question

KATA = Kata(
    id="{kata.id}",
    name="{kata.name}",
    file="{kata.file}",
    title={json.dumps(kata.title)},
    track="{kata.track}",
    difficulty="{kata.difficulty}",
    target_minutes={kata.minutes},
    prerequisites=(),
    mistakes=(),
    forbidden=(),
    hints=(
        "Look at the shape of x.",
        "The output has the shape of x: the placeholder task returns x itself.",
        "def {kata.module}(x):\\n    return x.clone()",
    ),
)


# The mistakes only this kata's grader names (shared ones: graders.core.catalogue).
MISTAKES: tuple[Mistake, ...] = ()


QUESTIONS = (
    Question("How many elements has a tensor of shape (2, 3)?", 6, INTEGER,
             "2 rows of 3: 2 * 3 = 6."),
    Question("Which shape does the placeholder task return for x of shape (2, 3)?", "A", CHOICE,
             "It returns x itself.", choices=("(2, 3)", "(3, 2)")),
)
'''


def _lesson(kata: NewKata) -> str:
    return f"""# %% [markdown]
# ## 1. The idea
#
# The lesson derives the kata's idea step by step, with the shape of every tensor.

# %%
import torch

x = torch.arange(6.0).view(2, 3)
print("x has shape", tuple(x.shape))

# %%
# kata: exercise

# %%
# kata: quiz
"""


def _mutants(kata: NewKata) -> str:
    return f'''"""Kata {kata.id}'s mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant  # noqa: F401 (one Mutant per catalogued mistake)

MUTANTS: list = []
'''


def _styles_readme(kata: NewKata) -> str:
    return (f"Correct solutions of kata {kata.name} written in other styles: each `*.py` here "
            "must pass\nwith no mistake named (tests/test_katas.py).\n")


def stubs(kata: NewKata) -> dict[str, str]:
    """Path relative to the repository -> the stub's text."""
    skeleton = _skeleton(kata)
    return {
        f"katas/{kata.name}/{kata.file}": skeleton,
        f"katas/{kata.name}/test_{kata.file}": _thin_test(kata),
        f"katas/{kata.name}/README.md": _readme(kata),
        f"katas/{kata.name}/README.zh-CN.md": _readme_zh(kata),
        f"solutions/{kata.name}/{kata.file}": _solution(kata),
        f"graders/{kata.module}/__init__.py": _package_init(kata),
        f"graders/{kata.module}/checks.py": _checks(kata),
        f"graders/{kata.module}/meta.py": _meta(kata),
        f"graders/{kata.module}/skeleton.py": skeleton,
        f"notebooks/lessons/{kata.name}.py": _lesson(kata),
        f"tests/mutants/{kata.name}.py": _mutants(kata),
        f"tests/styles/{kata.name}/README.md": _styles_readme(kata),
    }


REGISTRY = "graders/core/registry.py"


def add_to_registry(text: str, kata: NewKata, track_title: str | None = None) -> str:
    """registry.py's text with ``kata``'s line in KATA_MODULES, in the order of the katas'
    numbers (a kata numbered into a gap goes before the first higher one), and its track in
    TRACKS when it is new."""
    modules = re.search(r"^KATA_MODULES = \(\n(.*?)^\)", text, re.M | re.S)
    if modules is None:
        raise ScaffoldError(f"{REGISTRY}: no KATA_MODULES list")
    if re.search(rf'^\s*"{re.escape(kata.module)}",', modules.group(1), re.M):
        raise ScaffoldError(f"{REGISTRY} already lists {kata.module}")
    line = f'    "{kata.module}",'.ljust(28) + f"# {kata.id}\n"
    at = modules.end(1)
    for listed in re.finditer(r"^.*# (\d+)\n", modules.group(1), re.M):
        if int(listed.group(1)) > int(kata.id):
            at = modules.start(1) + listed.start()
            break
    text = text[:at] + line + text[at:]
    tracks = re.search(r"^TRACKS = \{\n(.*?)^\}", text, re.M | re.S)
    if tracks is None:
        raise ScaffoldError(f"{REGISTRY}: no TRACKS")
    if not re.search(rf'^\s*"{re.escape(kata.track)}":', tracks.group(1), re.M):
        title = track_title or kata.track.replace("_", " ").capitalize()
        text = text[:tracks.end(1)] + f'    "{kata.track}": {json.dumps(title)},\n' + text[tracks.end(1):]
    return text


def _python(root: Path, *args: str, capture: bool = True) -> subprocess.CompletedProcess:
    """``python ARGS`` in the copy at ``root``, importing that copy's graders."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(root)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
    env.pop("KATA_IMPL", None)
    return subprocess.run([sys.executable, *args], cwd=root, env=env, text=True,
                          capture_output=capture, timeout=3600)


def new(root: Path, number: str, slug: str, *, file: str | None = None, title: str | None = None,
        track: str = "foundations", track_title: str | None = None,
        difficulty: str = "medium", minutes: int = 15, log=print) -> list[str]:
    """Write kata ``number``'s stubs into the copy at ``root``, register it, update the
    catalogs and build its notebooks. Returns the paths written (relative to ``root``)."""
    root = Path(root)
    if not number.isdigit():
        raise ScaffoldError(f"the kata's number is digits, not {number!r}")
    number = f"{int(number):02d}"
    if not re.fullmatch(r"[a-z][a-z0-9_]*", slug):
        raise ScaffoldError(f"the kata's name is lower-case letters, digits and _, not {slug!r}")
    file = file or f"{slug}.py"
    if not re.fullmatch(r"[a-z][a-z0-9_]*\.py", file):
        raise ScaffoldError(f"the kata's file is a module name ending in .py, not {file!r}")
    if difficulty not in DIFFICULTIES:
        raise ScaffoldError(f"the difficulty is one of {', '.join(DIFFICULTIES)}, not {difficulty!r}")
    if not 1 <= minutes <= 240:
        raise ScaffoldError(f"the target time is 1 to 240 minutes, not {minutes}")
    kata = NewKata(number, slug, file, title or slug.replace("_", " ").capitalize(), track,
                   difficulty, minutes)
    taken = [p.name for p in (root / "katas").iterdir() if p.name.startswith(f"{number}_")
             or p.name[3:] == slug]
    if taken or (root / "graders" / kata.module).exists():
        raise ScaffoldError(f"kata {number} or {slug} exists already: "
                            f"{', '.join(taken) or 'graders/' + kata.module}")
    registry_path = root / REGISTRY
    registry_text = add_to_registry(registry_path.read_text(), kata, track_title)
    written = []
    for relative, text in stubs(kata).items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(relative)
    registry_path.write_text(registry_text)
    written.append(REGISTRY)
    for step in (("-m", "graders.tools.texts", "update"), ("notebooks/build.py", kata.id)):
        log("$ python " + " ".join(step))
        done = _python(root, *step)
        for line in (done.stdout + done.stderr).splitlines():
            if "warning: Skipping f-string" not in line:
                log("  " + line)
        if done.returncode != 0:
            raise ScaffoldError(f"python {' '.join(step)} failed (exit {done.returncode})")
    return written


def to_do(number: str, slug: str, file: str | None = None) -> list[str]:
    """What is left to do by hand for the kata ``new`` made."""
    kata = NewKata(f"{int(number):02d}", slug, file or f"{slug}.py", "", "")
    return [item.format(**kata.fields()) for item in BY_HAND]


# The completeness self-tests, one line each: (what it proves, pytest arguments); "{name}"
# is the kata's folder name (a -k expression selects its parameters).
CHECKS = (
    ("packages complete and listed", ["tests/test_kata_packages.py"]),
    ("registry entry, pristine skeleton, hints", ["tests/test_hints.py", "tests/test_cli.py",
                                                  "tests/test_untrusted.py", "-k", "{name}"]),
    ("reference passes", ["tests/test_katas.py", "-k", "reference_solution_passes and {name}"]),
    ("skeleton fails \"not implemented yet\"", ["tests/test_katas.py",
                                                "-k", "untouched_skeleton and {name}"]),
    ("mutants named", ["tests/test_katas.py", "-k", "(mutant or every_kata_is_built) and {name}"]),
    ("styles pass", ["tests/test_katas.py", "-k", "correct_style and {name}"]),
    ("i18n complete", ["tests/test_i18n.py", "-k", "{name} or every_english_text or "
                       "catalogs_hold or fuzzy or keep_code or lesson_code_label or skeleton"]),
    ("notebooks build", ["tests/test_notebooks.py", "-k", "{name} and not runs_as_shipped"]),
    ("contract, README and hostile cases", ["tests/test_teaching.py", "tests/test_hostile.py",
                                            "-k", "contract_covers or kata_table or "
                                            "every_case_is_covered"]),
)


@dataclass(frozen=True)
class CheckLine:
    what: str
    ok: bool
    counts: str  # pytest's last line, e.g. "3 passed in 2.1s"
    output: str  # the whole output, for a failure


def check(root: Path, name: str, *, notebooks_in_kernel: bool = False) -> list[CheckLine]:
    """Run the completeness self-tests for kata ``name`` (its folder name) in the copy at
    ``root``; one line per part. ``notebooks_in_kernel``: also run its notebooks in Jupyter."""
    lines = []
    for what, arguments in CHECKS:
        arguments = [a.replace("{name}", name) for a in arguments]
        if notebooks_in_kernel and what == "notebooks build":
            arguments[-1] = name
        done = _python(Path(root), "-m", "pytest", *arguments, "-q", "-p", "no:randomly",
                       "-p", "no:xdist")
        tail = [line for line in done.stdout.splitlines() if line.strip()]
        counts = tail[-1].strip("= ") if tail else done.stderr.strip()[-200:]
        ok = done.returncode == 0 and "passed" in counts
        if done.returncode == 5 and what == "styles pass":  # none yet: nothing to fail
            ok, counts = True, "no styles yet"
        lines.append(CheckLine(what, ok, counts, done.stdout + done.stderr))
    return lines
