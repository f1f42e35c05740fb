"""graders.core.fast_start: a grading process imports torch with the garbage collector
paused and freezes what the import made; the collector still works afterwards, and a
process that imported torch itself keeps all of its objects collectable."""

from __future__ import annotations

import subprocess
import sys

from graders.core import registry


def run_python(code: str) -> str:
    result = subprocess.run([sys.executable, "-c", code], cwd=registry.REPO_ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip()


def test_grading_process_freezes_torch_and_still_collects():
    out = run_python(
        "import gc; import graders.core.plugin\n"
        "frozen, enabled = gc.get_freeze_count(), gc.isenabled()\n"
        "class Node: pass\n"
        "a, b = Node(), Node(); a.other, b.other = b, a; del a, b\n"
        "print(frozen > 100_000, enabled, gc.collect() >= 2)")
    assert out == "True True True"


def test_torch_imported_earlier_is_left_alone():
    out = run_python(
        "import gc, torch\n"
        "from graders.core import fast_start; fast_start.import_torch()\n"
        "print(gc.get_freeze_count(), gc.isenabled())")
    assert out == "0 True"


def test_collector_left_disabled_stays_disabled():
    out = run_python(
        "import gc; gc.disable()\n"
        "from graders.core import fast_start; fast_start.import_torch()\n"
        "print(gc.get_freeze_count() > 0, gc.isenabled())")
    assert out == "True False"
