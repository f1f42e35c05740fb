"""Self-tests: a kata is one place (graders/<module>/), and the registry is one list.

- every package under graders/ (but core/, twins/, practice/, frontends/ and tools/) is a kata
  of the registry, with __init__.py, checks.py, meta.py and its pristine skeleton.py, and its
  thin test imports its checks; the skeleton is data: outside the graders' fingerprint, never
  collected;
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
NOT_KATAS = {"core", "frontends", "locales", "practice", "tools", "twins", "__pycache__"}


def test_every_kata_package_is_in_the_registry_and_complete():
    packages = sorted(p.name for p in GRADERS.iterdir() if p.is_dir() and p.name not in NOT_KATAS)
    assert packages == sorted(registry.KATA_MODULES)
    for kata in KATAS:
        folder = GRADERS / kata.module
        assert {"__init__.py", "checks.py", "meta.py", registry.PRISTINE_SKELETON} <= {
            p.name for p in folder.iterdir()}, kata
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


def test_a_katas_own_wording_is_of_a_shared_mistake_it_names():
    for (kata_id, slug), words in catalogue.WORDINGS.items():
        kata = registry.get(kata_id)
        shared = {m.slug: m for m in catalogue.SHARED}
        assert slug in shared and slug in kata.mistakes, (kata.name, slug)
        assert catalogue.mistake(slug, kata_id) is words
    # the other katas keep the catalogue's words: kata 11's and 23's causal-mask-offset
    offset = next(m for m in catalogue.SHARED if m.slug == "causal-mask-offset")
    assert catalogue.mistake("causal-mask-offset", "11") is offset
    assert catalogue.mistake("causal-mask-offset", "23") is offset
    assert catalogue.mistake("causal-mask-offset") is offset  # no kata being graded


def test_reading_every_meta_imports_no_torch():
    code = ("import sys; from graders.core import catalogue, registry; "
            "from graders.frontends import quiz; "
            "[quiz.questions(k.id) for k in registry.KATAS]; print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_the_pristine_skeleton_is_data_not_grading_code(tmp_path, monkeypatch):
    """graders/<module>/skeleton.py changes no cached result (the fingerprint leaves it out,
    as it does the front ends and tools), and pytest never collects it as a test module."""
    from graders.practice import common

    for name, text in (("core/engine.py", "A = 1\n"), ("demo/checks.py", "B = 1\n"),
                       ("demo/skeleton.py", "C = 1\n"), ("tools/texts.py", "D = 1\n")):
        (tmp_path / "graders" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "graders" / name).write_text(text)
    monkeypatch.setattr(registry, "REPO_ROOT", tmp_path)

    def fingerprint() -> str:
        common.graders_fingerprint.cache_clear()
        return common.graders_fingerprint()

    before = fingerprint()
    (tmp_path / "graders" / "demo" / "skeleton.py").write_text("C = 2\n")
    (tmp_path / "graders" / "tools" / "texts.py").write_text("D = 2\n")
    assert fingerprint() == before
    (tmp_path / "graders" / "demo" / "checks.py").write_text("B = 2\n")
    assert fingerprint() != before
    common.graders_fingerprint.cache_clear()

    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly",
         str(KATAS[0].pristine_skeleton_path), str(KATAS[0].folder)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert "skeleton.py::" not in collected.stdout, collected.stdout
    assert f"test_{KATAS[0].file}::" in collected.stdout, collected.stdout


def _import_graph() -> dict[str, set[str]]:
    """Every module under graders/ (dotted, a package by its own name) -> the graders modules
    it imports, at top level or inside a function (a lazy import is an arrow too)."""
    modules = {}
    for path in GRADERS.rglob("*.py"):
        parts = path.relative_to(GRADERS.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def module_of(name: str) -> str | None:  # graders.core.i18n._ -> graders.core.i18n
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # from . import x, from ..core import y
                    up = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [f"{base}.{alias.name}" for alias in node.names] or [base]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            found |= {module_of(t) for t in targets if t.startswith("graders")} - {None}
        graph[name] = found - {name}
    return graph


def test_graders_have_no_import_cycle():
    """No module under graders/ reaches itself through the modules it imports: the practice
    service, its review schedule and the front ends included, function-level imports too."""
    graph = _import_graph()
    assert {"graders.core.plugin", "graders.practice.service", "graders.practice.review",
            "graders.frontends.cli.app", "graders.mha.checks"} <= set(graph)  # the walk sees all
    assert "graders.practice.review" in graph["graders.practice.service"]  # and its arrows
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        if name in path:
            cycle = path[path.index(name):] + [name]
            raise AssertionError("import cycle in graders/: " + " -> ".join(cycle))
        if name not in done:
            for imported in sorted(graph[name]):
                visit(imported, path + [name])
            done.add(name)

    for name in sorted(graph):
        visit(name, [])


def test_the_layers_import_downwards_only():
    """The engine (graders/core) imports neither the practice service, the front ends nor the
    contributors' tools; the tools import no front end (they sit above the engine, beside
    the front ends): what a layer needs from another lives in the lower one."""
    graph = _import_graph()
    above = {"core": ("graders.practice", "graders.frontends", "graders.tools"),
             "tools": ("graders.frontends",)}
    for layer, forbidden in above.items():
        for name, imported in graph.items():
            if name.startswith(f"graders.{layer}"):
                wrong = sorted(i for i in imported if i.startswith(forbidden))
                assert not wrong, f"{name} imports {', '.join(wrong)}"
