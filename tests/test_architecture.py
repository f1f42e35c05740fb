"""Self-tests of the front ends' floors (issue 24, step 1): the room of `kata serve` works
through the practice service (graders.practice) and imports nothing from the CLI; the
service prints nothing and imports no front end's package; the learner's state file has one
owner, its path one home (graders.core.statefile)."""

from __future__ import annotations

import ast
import subprocess
import sys

from graders.core.registry import REPO_ROOT

GRADERS = REPO_ROOT / "graders"


def _imports(path) -> set[str]:
    """Every module ``path`` imports, at its top or inside a function (``from . import x``
    resolved against the package)."""
    package = ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts[:-1])
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


def _walk(start: str) -> dict[str, set[str]]:
    """The graders modules reachable from module ``start`` by its imports: module -> the
    graders modules it imports."""
    seen: dict[str, set[str]] = {}
    todo = [start]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        parts = name.split(".")
        file = REPO_ROOT.joinpath(*parts).with_suffix(".py")
        package = REPO_ROOT.joinpath(*parts, "__init__.py")
        path = file if file.is_file() else package if package.is_file() else None
        if path is None:
            continue
        ours = {module for module in _imports(path) if module.split(".")[0] == "graders"}
        seen[name] = ours
        todo += sorted(ours)
    return seen


def _serve_modules() -> list[str]:
    folder = GRADERS / "frontends" / "serve"
    return [f"graders.frontends.serve.{path.stem}" for path in sorted(folder.glob("*.py"))]


def test_serve_imports_nothing_from_the_cli():
    for start in _serve_modules():
        graph = _walk(start)
        cli = {(module, imported) for module, imports in graph.items() for imported in imports
               if imported == "graders.frontends.cli" or imported.startswith("graders.frontends.cli.")}
        assert not cli, f"{start} reaches the CLI: " + ", ".join(f"{m} imports {i}" for m, i in sorted(cli))


def test_serve_imports_no_cli_module_at_run_time():
    code = ("import sys; import graders.frontends.serve.server, graders.frontends.serve.grading; "
            "print(sorted(m for m in sys.modules if m.startswith('graders.frontends.cli')))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_practice_service_imports_no_front_end_package_and_prints_nothing():
    for path in sorted((GRADERS / "practice").glob("*.py")):
        front_ends = {m for m in _imports(path)
                      if m.startswith(("graders.frontends.cli", "graders.frontends.serve"))}
        assert not front_ends, f"{path.relative_to(REPO_ROOT)} imports {sorted(front_ends)}"
        calls = {node.func.id for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                 if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
        assert "print" not in calls, f"{path.relative_to(REPO_ROOT)} prints"
        assert "rich" not in {m.split(".")[0] for m in _imports(path)}, path


def test_the_state_file_has_one_path_and_one_owner():
    """Only graders.core.statefile names state.json; the engine reads the running mock
    through it, and only graders.practice.state writes the file."""
    named = [path.relative_to(REPO_ROOT).as_posix() for path in sorted(GRADERS.rglob("*.py"))
             if '"state.json"' in path.read_text(encoding="utf-8")]
    assert named == ["graders/core/statefile.py"], named
    assert "graders.core.statefile" in _imports(GRADERS / "core" / "interview.py")
    writers = [path.relative_to(REPO_ROOT).as_posix() for path in sorted(GRADERS.rglob("*.py"))
               if "StateStore(" in path.read_text(encoding="utf-8")]
    assert writers == ["graders/practice/workspace.py"], writers
