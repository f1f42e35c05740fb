"""Self-tests: a kata is one place (graders/<module>/), and the registry is one list.

- every package under graders/ (but core/, twins/ and frontends/) is a kata of the registry,
  with __init__.py, checks.py and meta.py, and its thin test imports its checks;
- a kata imports graders.core (the engine) and graders.twins (the domain layer: references
  several katas share), never another kata; core imports neither twins nor any kata;
- a mistake in a kata's meta.MISTAKES is named by that kata alone (a shared one lives in
  graders/core/catalogue.py), and no slug is declared twice;
- reading every meta (what `kata list` does) imports no torch.
"""

from __future__ import annotations

import ast
import subprocess
import sys

from graders.core import catalogue, registry
from graders.core.registry import KATAS, REPO_ROOT

GRADERS = REPO_ROOT / "graders"
NOT_KATAS = {"core", "twins", "frontends", "locales", "skeletons", "__pycache__"}


def test_every_kata_package_is_in_the_registry_and_complete():
    packages = sorted(p.name for p in GRADERS.iterdir() if p.is_dir() and p.name not in NOT_KATAS)
    assert packages == sorted(registry.KATA_MODULES)
    for kata in KATAS:
        folder = GRADERS / kata.module
        assert {"__init__.py", "checks.py", "meta.py"} <= {p.name for p in folder.iterdir()}, kata
        test = (kata.folder / f"test_{kata.file}").read_text()
        assert f"from {kata.grader_module} import *" in test, kata.name


def _imported_modules(path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


def _graders_packages(path) -> set[str]:
    """The graders.<package> names that the file at ``path`` imports."""
    return {name.split(".")[1] for name in _imported_modules(path)
            if name.split(".")[0] == "graders" and len(name.split(".")) > 1}


def test_a_kata_imports_core_and_twins_never_another_kata():
    for kata in KATAS:
        for path in (GRADERS / kata.module).glob("*.py"):
            others = _graders_packages(path) - {"core", "twins", kata.module}
            assert not others, f"{path.relative_to(REPO_ROOT)} imports graders.{sorted(others)}: " \
                               f"move the shared reference to graders/twins/"


def test_twins_import_core_and_core_imports_neither_twins_nor_a_kata():
    for path in (GRADERS / "twins").glob("*.py"):
        others = _graders_packages(path) - {"core", "twins"}
        assert not others, f"{path.relative_to(REPO_ROOT)} imports graders.{sorted(others)}"
    katas = set(registry.KATA_MODULES)
    for path in (GRADERS / "core").glob("*.py"):
        above = _graders_packages(path) & (katas | {"twins"})
        assert not above, f"{path.relative_to(REPO_ROOT)} imports graders.{sorted(above)}"


def test_a_katas_own_mistakes_are_named_by_it_alone():
    shared = {m.slug for m in catalogue.SHARED}
    declared = list(shared)
    for kata in KATAS:
        own = [m.slug for m in registry.meta(kata).MISTAKES]
        declared += own
        for slug in own:
            others = [k.name for k in KATAS if k != kata and slug in k.mistakes]
            assert not others, f"{slug} is named by {others} too: move it to catalogue.SHARED"
    assert len(declared) == len(set(declared)), "a slug is declared twice"
    assert set(declared) == set(catalogue.MISTAKES)


def test_reading_every_meta_imports_no_torch():
    code = ("import sys; from graders.core import catalogue, registry; "
            "from graders.frontends import quiz; "
            "[quiz.questions(k.id) for k in registry.KATAS]; print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
