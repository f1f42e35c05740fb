"""``kata dev new`` and ``kata dev check``: a new kata made by one command, and its
completeness self-tests run for it alone (as rustlings' ``dev new`` / ``dev check``).

``new(root, "26", "cross_entropy", track="training", api=["contract"], ...)`` writes every
stub a kata needs into the copy of the repository at ``root`` — the learner's folder
(skeleton, thin test, README in each language), the hidden reference, the grader package
(``__init__``, ``twin``, ``checks``, ``meta``, the pristine ``skeleton``), the lesson, the
mutants' list and the styles' folder — each named after the kata's API (the signatures
its CONTRACT.md section starts its bullets with, or given one by one), adds the registry
line (and the track, if it is new), runs the catalog update and the notebook build of that
copy, and returns every file it wrote or changed. Without an API the stubs are the
placeholder task ``NAME(x) -> x``, a kata that grades as it stands. :data:`BY_HAND` is what
no command can write; the stubs' texts are graders.tools.stubs'.

``check(root, "26")`` runs the self-tests that say whether a kata is complete, for that
kata, in that copy (each in its own pytest process, so a kata added since this process
started is seen), and returns one line per part. :func:`sync_skeleton` derives the pristine
skeleton from the learner's while it is the scaffold's stub.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from graders.core.kata import DIFFICULTIES, GRADERS_DIR, KATAS_DIR, PRISTINE_SKELETON, REPO_ROOT
from graders.tools import stubs as texts
from graders.tools.stubs import Api, ApiError, contract_api, parse_api  # noqa: F401

# What only a person can write, in the order a contributor meets it.
BY_HAND = (
    "CONTRACT.md: the kata's section first (signatures, layouts, tolerances, allowed, not "
    "graded, tiers, a '- Slugs:' line); `kata dev new NN name --api` names every stub after "
    "the signatures its bullets start with",
    "katas/{name}/README.md: the problem (keep 'Edit `{file}` in this folder' and the "
    "'## Check your work' block of pytest commands)",
    "katas/{name}/{file}: the skeleton (signatures, docstrings with shapes, "
    "NotImplementedError); `kata dev check` derives graders/{module}/skeleton.py from it while "
    "that copy is the scaffold's stub, and fails when the two differ after that",
    "solutions/{name}/{file}: the reference solution",
    "graders/{module}/twin.py: the reference with one switch per mistake (MISTAKE_OF: switch -> "
    "slug); graders/{module}/checks.py: the core and follow-up checks, each naming mistakes by "
    "computing the twin's switches on the same input",
    "graders/{module}/: the kata's package imports only graders.core and graders.twins (what "
    "two katas share moves to graders/twins/, as kata 15's block did for 28)",
    "graders/{module}/meta.py: prerequisites (katas that exist), mistakes (own ones in MISTAKES; a slug another "
    "kata declares is never declared again: it moves to graders/core/catalogue.py's SHARED, "
    "or the kata words it in WORDINGS), forbidden calls, the hint ladder (the third rung is "
    "near-code on two lines or more, and compiles as Python), the quiz (answers computed by "
    "running code; a NUMBER answer needs rel_tolerance); difficulty and target time come from "
    "--difficulty and --minutes; a kata that forbids calls has a forbidden-builtin mutant, and "
    "a shared slug it words in WORDINGS is in its KATA.mistakes",
    "tests/mutants/{name}.py: one mutant per catalogued mistake; tests/styles/{name}/: correct "
    "solutions in other styles (one as public code writes it)",
    "notebooks/lessons/{name}.py: the lesson (keep the '# kata: exercise' and '# kata: quiz' "
    "cells; its code repeats no line of the reference of 30 characters or more)",
    "katas/{name}/README.zh-CN.md: its title too, every code block line for line as in the "
    "English, the same inline code spans, every number in digits as in the English (2, not "
    "两, and no digit the English lacks); the zh msgstr of every "
    "new entry of graders/locales/zh_CN/LC_MESSAGES/kata_{name}.po (and of mistakes.po or "
    "messages.po for a shared text): python -m graders.tools.texts update, then export "
    "--catalog kata_{name} / import; graders/locales/zh_CN/GLOSSARY.md first; the skeleton's "
    "translated docstring points to README.zh-CN.md; a zh verdict holds no English word "
    "outside code (names such as Schulman or NumPy go in backticks or in Chinese); a hint "
    "that ends in code takes no full stop; rebuild the notebooks after every catalog or "
    "README change",
    "README.md and README.zh-CN.md: its row in the katas' table (a new track: its table, and "
    "its title in graders/practice/common.py's track_title so that it is translated), and "
    "its rows in the two speed tables (python benchmarks/grader_speed.py --kata {id}; python "
    "benchmarks/verdict_speed.py --kata {id})",
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
    api: tuple[Api, ...] = ()  # its public functions and classes; () = the placeholder task
    placeholder: str = ""  # the placeholder task's function name (default: the module's)

    @property
    def name(self) -> str:
        return f"{self.id}_{self.slug}"

    @property
    def module(self) -> str:
        return self.file.removesuffix(".py")

    @property
    def function(self) -> str:
        """The placeholder task's function: ``--function NAME``, else the module's name."""
        return self.placeholder or self.module

    @property
    def items(self) -> tuple[Api, ...]:
        """What the stubs are named after: the API, or the placeholder task ``module(x)``."""
        return self.api or (Api("def", self.function, "x: torch.Tensor", "a tensor like x"),)

    def fields(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name, "file": self.file, "module": self.module,
                "title": self.title, "track": self.track}


def stubs(kata: NewKata) -> dict[str, str]:
    """Path relative to the repository -> the stub's text."""
    api = kata.items
    skeleton = texts.skeleton(kata, api)
    return {
        f"katas/{kata.name}/{kata.file}": skeleton,
        f"katas/{kata.name}/test_{kata.file}": texts.thin_test(kata),
        f"katas/{kata.name}/README.md": texts.readme(kata, api),
        f"katas/{kata.name}/README.zh-CN.md": texts.readme(kata, api, chinese=True),
        f"solutions/{kata.name}/{kata.file}": texts.solution(kata, api),
        f"graders/{kata.module}/__init__.py": texts.package_init(kata),
        f"graders/{kata.module}/twin.py": texts.twin(kata, api),
        f"graders/{kata.module}/checks.py": texts.checks(kata, api),
        f"graders/{kata.module}/meta.py": texts.meta(kata, api),
        f"graders/{kata.module}/skeleton.py": skeleton,
        f"notebooks/lessons/{kata.name}.py": texts.lesson(kata),
        f"tests/mutants/{kata.name}.py": texts.mutants(kata),
        f"tests/styles/{kata.name}/README.md": texts.styles_readme(kata),
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
        difficulty: str = "medium", minutes: int = 15, api: list[str] | None = None,
        function: str | None = None, log=print) -> list[str]:
    """Write kata ``number``'s stubs into the copy at ``root``, register it, update the
    catalogs and build its notebooks. ``api``: signatures to name the stubs after (see
    graders.tools.stubs.parse_api); the single item ``"contract"`` reads them from the
    kata's section of CONTRACT.md. Returns every path written or changed (relative to
    ``root``): the stubs, the registry, the catalogs and the notebooks. ``function``: the
    placeholder task's name when there is no API (default: the module's)."""
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
    try:
        if api == ["contract"]:
            items = contract_api((root / "CONTRACT.md").read_text(), f"{number}_{slug}")
        else:
            items = tuple(parse_api(signature) for signature in api or ())
    except ApiError as error:
        raise ScaffoldError(str(error)) from None
    if function is not None and not re.fullmatch(r"[A-Za-z_]\w*", function):
        raise ScaffoldError(f"the function's name is a Python name, not {function!r}")
    if function and items:
        raise ScaffoldError("--function names the placeholder task; with --api the stubs are "
                            "named after the API")
    kata = NewKata(number, slug, file, title or slug.replace("_", " ").capitalize(), track,
                   difficulty, minutes, items, function or "")
    taken = [p.name for p in (root / "katas").iterdir() if p.name.startswith(f"{number}_")
             or p.name[3:] == slug]
    if taken or (root / "graders" / kata.module).exists():
        raise ScaffoldError(f"kata {number} or {slug} exists already: "
                            f"{', '.join(taken) or 'graders/' + kata.module}")
    registry_path = root / REGISTRY
    registry_text = add_to_registry(registry_path.read_text(), kata, track_title)
    before = _generated_files(root)
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
            log("  " + line)
        if done.returncode != 0:
            raise ScaffoldError(f"python {' '.join(step)} failed (exit {done.returncode})")
    after = _generated_files(root)
    return written + sorted(path for path, stamp in after.items() if before.get(path) != stamp)


# What the catalog update and the notebook build write.
GENERATED = ("graders/locales", "notebooks")


def _generated_files(root: Path) -> dict[str, str]:
    """Each file under GENERATED (lessons aside) -> its content's digest (the catalog update
    rewrites every catalog: only those whose content changed were written)."""
    found = {}
    for top in GENERATED:
        for path in (root / top).rglob("*"):
            if path.is_file() and "lessons" not in path.parts and "__pycache__" not in path.parts:
                found[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def to_do(number: str, slug: str, file: str | None = None) -> list[str]:
    """What is left to do by hand for the kata ``new`` made."""
    kata = NewKata(f"{int(number):02d}", slug, file or f"{slug}.py", "", "")
    return [item.format(**kata.fields()) for item in BY_HAND]


def sync_skeleton(root: Path, name: str, file: str) -> str | None:
    """Derive kata ``name``'s pristine copy (graders/<module>/skeleton.py, the module being
    ``file``'s stem) from the learner's skeleton katas/<name>/<file> while that copy is still
    the scaffold's stub and the skeleton still raises NotImplementedError (a solution tried in
    place is never copied); returns what was done, or None. After that the two are compared
    by the self-tests, never overwritten."""
    root = Path(root)
    learner = root / KATAS_DIR.relative_to(REPO_ROOT) / name / file
    pristine = (root / GRADERS_DIR.relative_to(REPO_ROOT) / file.removesuffix(".py")
                / PRISTINE_SKELETON)
    if not (pristine.is_file() and learner.is_file()):
        return None
    stub, mine = pristine.read_bytes(), learner.read_bytes()
    still_stub = b"the stub's placeholder task" in stub or b"TODO: what it computes" in stub
    if still_stub and stub != mine and b"NotImplementedError" in mine:
        pristine.write_bytes(mine)
        return f"derived {pristine.relative_to(root).as_posix()} from {learner.relative_to(root).as_posix()}"
    return None


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
                                            "speed_tables or every_case_is_covered"]),
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
    for what, arguments in CHECKS:  # (sync_skeleton runs first: the CLI says what it did)
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
