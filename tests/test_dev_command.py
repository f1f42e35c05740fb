"""`kata dev new` / `kata dev check` (graders.tools.scaffold), in a scratch copy of the
repository: the stubs, the registry line, the catalogs and notebooks it makes, and the
completeness self-tests that pass before a word is written by hand."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from graders.core.registry import REPO_ROOT
from graders.frontends.cli import parser as cli_parser
from graders.tools import scaffold


def test_dev_is_left_out_of_the_learners_help():
    listed = cli_parser.build_parser().format_help()
    assert " dev " not in listed and "kata dev" not in listed
    assert "serve" in listed


def test_the_registry_line_and_a_new_track():
    text = (REPO_ROOT / scaffold.REGISTRY).read_text()
    kata = scaffold.NewKata("20", "moe", "moe.py", "Mixture of experts", "inference")
    added = scaffold.add_to_registry(text, kata, "Modern inference")
    assert '    "moe",                  # 20\n)' in added
    assert '    "inference": \'Modern inference\',\n}' in added
    with pytest.raises(scaffold.ScaffoldError):
        scaffold.add_to_registry(added, kata)


@pytest.mark.selftest_slow
def test_dev_new_in_a_scratch_copy_makes_a_kata_the_self_tests_accept(tmp_path):
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                           cwd=REPO_ROOT, capture_output=True, text=True)
    if files.returncode != 0:
        pytest.skip("not a git checkout")
    for relative in filter(None, files.stdout.split("\0")):
        source = REPO_ROOT / relative
        if source.is_file():
            (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / relative).write_bytes(source.read_bytes())
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    env.pop("KATA_IMPL", None)

    def kata(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "graders.frontends.cli", *args], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=1200)

    made = kata("dev", "new", "20", "demo", "--track", "foundations", "--title", "Double a tensor")
    assert made.returncode == 0, made.stdout + made.stderr
    for relative in scaffold.stubs(scaffold.NewKata("20", "demo", "demo.py", "", "")):
        assert (tmp_path / relative).is_file(), relative
    assert '"demo",' in (tmp_path / scaffold.REGISTRY).read_text()
    assert (tmp_path / "graders/locales/zh_CN/LC_MESSAGES/kata_20_demo.po").is_file()
    assert (tmp_path / "notebooks/20_demo.ipynb").is_file()
    assert (tmp_path / "notebooks/zh-CN/20_demo.ipynb").is_file()
    assert "left to do by hand:" in made.stdout and "CONTRACT.md" in made.stdout
    assert kata("dev", "new", "20", "demo").returncode == 2  # taken

    # Before anything is written by hand, the stubs are a kata the grading self-tests accept.
    for what, arguments in scaffold.CHECKS[:6]:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", *[a.replace("{name}", "20_demo") for a in arguments],
             "-q", "-p", "no:randomly", "-p", "no:xdist"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200)
        assert done.returncode in (0, 5), f"{what}:\n{done.stdout[-3000:]}"
