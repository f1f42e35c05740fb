"""`kata dev new` / `kata dev check` (graders.tools.scaffold), in a scratch copy of the
repository: the stubs, the registry line, the catalogs and notebooks it makes, and the
completeness self-tests that pass before a word is written by hand."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from graders.core.registry import KATA_MODULES, KATAS, REPO_ROOT
from graders.frontends.cli import parser as cli_parser
from graders.tools import scaffold


def test_dev_is_left_out_of_the_learners_help():
    listed = cli_parser.build_parser().format_help()
    assert " dev " not in listed and "kata dev" not in listed
    assert "serve" in listed


def test_the_registry_line_and_a_new_track():
    text = (REPO_ROOT / scaffold.REGISTRY).read_text()
    kata = scaffold.NewKata(DEMO.id, "demo", "demo.py", "Double a tensor", "newtrack")
    added = scaffold.add_to_registry(text, kata, "A new track")
    assert f'    "demo",                 # {DEMO.id}\n)' in added
    assert '    "newtrack": "A new track",\n}' in added
    with pytest.raises(scaffold.ScaffoldError):
        scaffold.add_to_registry(added, kata)
    # a number in a gap goes in its place: the registry stays in the katas' order
    gap = scaffold.NewKata("145", "between", "between.py", "In a gap", KATAS[-1].track)
    lines = scaffold.add_to_registry(added.replace(f"# {DEMO.id}\n", "# 150\n"), gap)
    assert lines.index('"between",') < lines.index('"demo",')
    assert lines.index(f'"{KATA_MODULES[-1]}",') < lines.index('"between",')


# The next free number: the demo kata comes after every real one, in the last track.
DEMO = scaffold.NewKata(f"{int(KATAS[-1].id) + 1:02d}", "demo", "demo.py", "Double a tensor",
                        KATAS[-1].track)


class Scratch:
    """A copy of the repository's tracked and new files, and the `kata` command run in it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = dict(os.environ, PYTHONPATH=str(root))
        self.env.pop("KATA_IMPL", None)

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, *args], cwd=self.root, env=self.env,
                              capture_output=True, text=True, timeout=1200)

    def kata(self, *args: str) -> subprocess.CompletedProcess:
        return self.run("-m", "graders.frontends.cli", *args)

    def edit(self, relative: str, old: str, new: str) -> None:
        path = self.root / relative
        text = path.read_text()
        assert text.count(old) == 1, f"{relative}: {old!r}"
        path.write_text(text.replace(old, new))


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> tuple[Scratch, subprocess.CompletedProcess]:
    """A scratch copy in which `kata dev new` made the demo kata (once for this module)."""
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                           cwd=REPO_ROOT, capture_output=True, text=True)
    if files.returncode != 0:
        pytest.skip("not a git checkout")
    root = tmp_path_factory.mktemp("scratch")
    for relative in filter(None, files.stdout.split("\0")):
        source = REPO_ROOT / relative
        if source.is_file():
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            (root / relative).write_bytes(source.read_bytes())
    copy = Scratch(root)
    made = copy.kata("dev", "new", DEMO.id, DEMO.slug, "--track", DEMO.track,
                     "--title", DEMO.title, "--difficulty", "easy", "--minutes", "10")
    return copy, made


@pytest.mark.selftest_slow
def test_dev_new_in_a_scratch_copy_makes_a_kata_the_self_tests_accept(scratch):
    copy, made = scratch
    assert made.returncode == 0, made.stdout + made.stderr
    for relative in scaffold.stubs(DEMO):
        assert (copy.root / relative).is_file(), relative
    assert '"demo",' in (copy.root / scaffold.REGISTRY).read_text()
    assert (copy.root / f"graders/locales/zh_CN/LC_MESSAGES/kata_{DEMO.name}.po").is_file()
    assert (copy.root / f"notebooks/{DEMO.name}.ipynb").is_file()
    assert (copy.root / f"notebooks/zh-CN/{DEMO.name}.ipynb").is_file()
    assert "left to do by hand:" in made.stdout and "CONTRACT.md" in made.stdout
    assert copy.kata("dev", "new", DEMO.id, "demo").returncode == 2  # taken

    # Before anything is written by hand, the stubs are a kata the grading self-tests accept.
    for what, arguments in scaffold.CHECKS[:6]:
        done = copy.run("-m", "pytest", *[a.replace("{name}", DEMO.name) for a in arguments],
                        "-q", "-p", "no:randomly", "-p", "no:xdist")
        assert done.returncode in (0, 5), f"{what}:\n{done.stdout[-3000:]}"


def in_chinese(english: str) -> str:
    """The demo kata's texts as a translator writes them (code, numbers and paths kept)."""
    name = DEMO.name
    whole = {
        DEMO.title: "把张量翻倍",
        "demo against its reference": "demo 与参考实现对照",
        f"see katas/{name}/README.md": f"见 katas/{name}/README.zh-CN.md",
        "x was doubled twice: the result is 4·x.": "x 被翻倍了两次：结果是 4·x。",
        "Multiply by 2 once.": "只乘一次 2。",
        # The scaffold's placeholder hints and quiz, left as they are here:
        "Look at the shape of x.": "看看 x 的形状。",
        "The output has the shape of x: the placeholder task returns x itself.":
            "输出的形状与 x 相同：占位任务直接返回 x 本身。",
        "How many elements has a tensor of shape (2, 3)?": "形状为 (2, 3) 的张量有多少个元素？",
        "2 rows of 3: 2 * 3 = 6.": "2 行，每行 3 个：2 * 3 = 6。",
        "Which shape does the placeholder task return for x of shape (2, 3)?":
            "对于形状为 (2, 3) 的 x，占位任务返回什么形状？",
        "It returns x itself.": "它返回 x 本身。",
        "(2, 3)": "(2, 3)",
        "(3, 2)": "(3, 2)",
        "## 1. The idea\n\nThe lesson derives the kata's idea step by step, with the shape of "
        "every tensor.": "## 1. 思路\n\n本课一步步推导这个练习的思路，并写出每个张量的形状。",
        "x has shape": "x 的形状是",
        "{function} against its reference": "{function} 与参考实现对照",
        "Return a tensor of the shape of x (the stub's placeholder task: replace it).":
            "返回一个与 x 形状相同的张量（这是存根的占位任务：请替换它）。",
    }
    if english in whole:
        return whole[english]
    if english.startswith("def "):  # the near-code hint: nothing but code to translate
        return english
    if "Read README.md in this folder" in english:  # the skeleton's docstring
        return (english.replace(f"Kata {DEMO.id}: {DEMO.title}.", f"练习 {DEMO.id}：把张量翻倍。")
                .replace("Read README.md in this folder, fill in the function below, then run",
                         "阅读本文件夹中的 README.zh-CN.md，补全下面的函数，然后运行"))
    return ""  # not one of the demo's texts: the test says which


def fill_in_by_hand(copy: Scratch) -> None:
    """What a contributor writes after `kata dev new`, for the demo kata: demo(x) = 2·x, one
    catalogued mistake (`doubled-twice`, named by computing 4·x), its mutant, a second
    correct style, both READMEs, the zh translations, the contract's section, the README
    tables' rows and the hostile cases' target (the scaffold's BY_HAND, item by item)."""
    name, module, last = DEMO.name, DEMO.module, KATAS[-1]
    copy.edit(f"solutions/{name}/demo.py",
              "return x.clone()  # the stub's placeholder: replace with the reference",
              "return 2 * x")
    copy.edit(f"graders/{module}/checks.py", "MISTAKE_OF: dict[str, str] = {}",
              'MISTAKE_OF: dict[str, str] = {"twice": "doubled-twice"}')
    copy.edit(f"graders/{module}/checks.py", "    return x.clone()\n",
              "    return 4 * x if mistake == \"twice\" else 2 * x\n")
    copy.edit(f"graders/{module}/meta.py", "    mistakes=(),", '    mistakes=("doubled-twice",),')
    copy.edit(f"graders/{module}/meta.py", "MISTAKES: tuple[Mistake, ...] = ()",
              'MISTAKES: tuple[Mistake, ...] = (\n    Mistake("doubled-twice", "x was doubled '
              'twice: the result is 4·x.", "Multiply by 2 once."),\n)')
    copy.edit(f"tests/mutants/{name}.py", "MUTANTS: list = []",
              "MUTANTS = [Mutant('doubled-twice', why='x doubled twice.', edits=[("
              "'return 2 * x', 'return 4 * x')])]")
    (copy.root / f"tests/styles/{name}/added.py").write_text(
        "def demo(x):\n    return x + x\n")
    for readme, old, new in (
            ("README.md", "returns a tensor of the\nshape of `x`.", "returns `2 * x`."),
            ("README.zh-CN.md", "返回一个与 `x` 形状相同的张量。", "返回 `2 * x`。")):
        copy.edit(f"katas/{name}/{readme}", old, new)
    with (copy.root / "CONTRACT.md").open("a") as contract:
        contract.write(f"\n### {name} — `demo.py`\n\n- `demo(x)`: `2 * x`.\n"
                       "- Slugs: `doubled-twice`.\n")
    for readme, difficulty, minutes in (("README.md", "easy", "10 min"),  # as --difficulty, --minutes
                                        ("README.zh-CN.md", "简单", "10 分钟")):
        text = (copy.root / readme).read_text()
        row = re.search(rf"^\| `{last.name}` \|.*\n", text, re.M)
        assert row, f"{readme}: no row for {last.name}"
        text = (text[:row.end()] + f"| `{name}` | 2·x | {difficulty} | {minutes} | "
                f"`katas/{name}/demo.py` |\n" + text[row.end():])
        (copy.root / readme).write_text(text)
    hostile = (copy.root / "tests/test_hostile.py").read_text()
    entry = re.search(rf'^    "{last.name}": Target\(.*\n', hostile, re.M)
    assert entry, f"tests/test_hostile.py: no TARGETS entry for {last.name}"
    (copy.root / "tests/test_hostile.py").write_text(
        hostile[:entry.end()] + f'    "{name}": Target(None, "demo"),\n' + hostile[entry.end():])
    # The translations: update the catalogs, export what is new, translate, import.
    assert copy.run("-m", "graders.tools.texts", "update").returncode == 0
    for catalog in (f"kata_{name}", "mistakes", "messages"):
        exported = copy.run("-m", "graders.tools.texts", "export", "--lang", "zh-CN",
                            "--catalog", catalog)
        if exported.returncode != 0:
            continue  # a catalog that does not exist under this name
        records = [dict(r, **{"zh-CN": in_chinese(r["en"])}) for r in json.loads(exported.stdout)
                   if not r["zh-CN"]]
        untranslated = [r["en"] for r in records if not r["zh-CN"]]
        assert not untranslated, f"texts the demo's translator does not know: {untranslated}"
        (copy.root / "zh.json").write_text(json.dumps(records, ensure_ascii=False))
        assert copy.run("-m", "graders.tools.texts", "import", "zh.json",
                        "--lang", "zh-CN").returncode == 0
    built = copy.run("notebooks/build.py", DEMO.id)
    assert built.returncode == 0, built.stdout + built.stderr


@pytest.mark.selftest_slow
def test_a_kata_made_by_dev_new_and_filled_in_by_hand_passes_dev_check(scratch):
    """The issue's "done when": a new kata made with the contributor command, its
    hand-written parts filled in, passes every completeness self-test (`kata dev check`)."""
    copy, made = scratch
    assert made.returncode == 0, made.stdout + made.stderr
    fill_in_by_hand(copy)
    checked = copy.kata("dev", "check", DEMO.id)
    assert checked.returncode == 0, checked.stdout[-4000:] + checked.stderr[-2000:]
    assert f"{len(scaffold.CHECKS)}/{len(scaffold.CHECKS)}" in checked.stdout, checked.stdout
