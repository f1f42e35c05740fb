"""`kata dev new` / `kata dev check` (graders.tools.scaffold), in scratch copies of the
repository: the stubs named after a kata's API read from its contract section, the registry
line, the catalogs and notebooks it makes and lists, a kata whose API differs from the
placeholder task passing `kata dev check` once its hand-written parts are in, and the
placeholder task's stubs passing the grading self-tests before a word is written by hand."""

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
from graders.tools import scaffold, stubs, texts


def test_dev_is_left_out_of_the_learners_help():
    listed = cli_parser.build_parser().format_help()
    assert " dev " not in listed and "kata dev" not in listed
    assert "serve" in listed


# The next free numbers: the demo katas come after every real one, in the last track.
NEXT = int(KATAS[-1].id) + 1
SIGNATURE = "scale(x, factor=2.0) -> a tensor like x"
DEMO = scaffold.NewKata(f"{NEXT:02d}", "demo", "demo.py", "Scale a tensor", KATAS[-1].track,
                        api=(stubs.parse_api(SIGNATURE),))
PLAIN = scaffold.NewKata(f"{NEXT:02d}", "plain", "plain.py", "Double a tensor", KATAS[-1].track,
                         placeholder="double")
DEMO_CONTRACT = (f"\n### {DEMO.name} — `demo.py`\n\n- `{SIGNATURE}`: `factor * x`, x of any "
                 "shape.\n- Slugs: `scaled-twice`.\n")


def test_the_registry_line_and_a_new_track():
    text = (REPO_ROOT / scaffold.REGISTRY).read_text()
    kata = scaffold.NewKata(DEMO.id, "demo", "demo.py", "Scale a tensor", "newtrack")
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


def test_signatures_as_the_contract_writes_them():
    loss = stubs.parse_api("next_token_loss(logits, labels, ignore_index=-100,\n  num_items=None)"
                           " -> 0-d tensor")
    assert (loss.kind, loss.name, loss.required, loss.returns) == (
        "def", "next_token_loss", ["logits", "labels"], "0-d tensor")
    assert loss.with_switch().endswith("num_items=None, *, mistake: str | None=None")
    prose = stubs.parse_api("chunked(hidden, chunk_size, **same options) -> 0-d tensor")
    assert prose.params == "hidden, chunk_size, **kwargs"
    optimizer = stubs.parse_api("AdamW(params, lr=1e-3, betas=(0.9, 0.999))")
    assert (optimizer.kind, optimizer.required) == ("class", ["params"])
    assert stubs.parse_api("class Cache(n)").kind == "class"
    for wrong in ("no signature", "f(x", "f(x y)"):
        with pytest.raises(stubs.ApiError):
            stubs.parse_api(wrong)
    contract = ("## 9. A track\n\n### 40_toy — `toy.py`\n\n- `toy(x, dim=-1) -> (b, n)`: text.\n"
                "- `Toy(n)`: a class.\n- `not a signature` at all.\n- Slugs: `a-b`.\n\n"
                "### 41_other — `other.py`\n\n- `other(y)`: text.\n")
    assert [a.name for a in stubs.contract_api(contract, "40_toy")] == ["toy", "Toy"]
    with pytest.raises(stubs.ApiError, match="no section"):
        stubs.contract_api(contract, "42_none")


def test_the_stubs_are_named_after_the_api_and_compile():
    written = scaffold.stubs(DEMO)
    for relative, text in written.items():
        if relative.endswith(".py"):
            compile(text, relative, "exec")
    assert "def scale(x, factor=2.0):" in written[f"katas/{DEMO.name}/demo.py"]
    assert "def scale(x, factor=2.0, *, mistake" in written["graders/demo/twin.py"]
    assert "from graders.demo import twin" in written["graders/demo/checks.py"]
    assert "def test_scale(" in written["graders/demo/checks.py"]
    assert "reference(" not in written["graders/demo/checks.py"]
    plain = scaffold.stubs(PLAIN)
    assert "def double(x: torch.Tensor)" in plain[f"katas/{PLAIN.name}/plain.py"]


def test_a_slug_declared_twice_is_refused_before_it_blanks_a_translation(monkeypatch, capsys):
    from graders.core import catalogue, registry

    meta = registry.METAS[-1]
    monkeypatch.setattr(meta, "MISTAKES", (*meta.MISTAKES, catalogue.SHARED[0]))
    assert texts.slugs_declared_twice() == [
        f"{catalogue.SHARED[0].slug}: declared by graders/core/catalogue.py (SHARED) and "
        f"kata {meta.KATA.name}"]
    assert texts.main(["update"]) == 1
    assert "texts update refused" in capsys.readouterr().err


def test_the_pristine_skeleton_is_derived_from_the_learners_while_it_is_the_stub(tmp_path):
    root = tmp_path
    for relative, text in scaffold.stubs(DEMO).items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    learner, pristine = root / f"katas/{DEMO.name}/demo.py", root / "graders/demo/skeleton.py"
    assert scaffold.sync_skeleton(root, DEMO.name, DEMO.file) is None  # the two agree
    learner.write_text(learner.read_text().replace("TODO: what it computes", "Scale x"))
    assert scaffold.sync_skeleton(root, DEMO.name, DEMO.file).startswith("derived graders/demo/skeleton.py")
    assert pristine.read_bytes() == learner.read_bytes()
    learner.write_text(learner.read_text().replace("Scale x", "Scale x by factor"))
    assert scaffold.sync_skeleton(root, DEMO.name, DEMO.file) is None  # no longer the stub: compared only
    assert pristine.read_bytes() != learner.read_bytes()


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


def scratch_copy(tmp_path_factory) -> Scratch:
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
    return Scratch(root)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> tuple[Scratch, subprocess.CompletedProcess]:
    """A scratch copy in which the contributor wrote the demo kata's contract section and
    `kata dev new --api` made the kata from it (once for this module)."""
    copy = scratch_copy(tmp_path_factory)
    with (copy.root / "CONTRACT.md").open("a") as contract:
        contract.write(DEMO_CONTRACT)
    made = copy.kata("dev", "new", DEMO.id, DEMO.slug, "--api", "--track", DEMO.track,
                     "--title", DEMO.title, "--difficulty", "easy", "--minutes", "10")
    return copy, made


@pytest.mark.selftest_slow
def test_dev_new_writes_and_lists_every_file_named_after_the_contracts_api(scratch):
    copy, made = scratch
    assert made.returncode == 0, made.stdout + made.stderr
    for relative in scaffold.stubs(DEMO):
        assert (copy.root / relative).is_file(), relative
        assert f"  {relative}\n" in made.stdout, f"not listed: {relative}"
    assert "def scale(x, factor=2.0):" in (copy.root / f"katas/{DEMO.name}/demo.py").read_text()
    for generated in (f"graders/locales/zh_CN/LC_MESSAGES/kata_{DEMO.name}.po",
                      f"notebooks/{DEMO.name}.ipynb", f"notebooks/zh-CN/{DEMO.name}.ipynb"):
        assert (copy.root / generated).is_file(), generated
        assert f"  {generated}\n" in made.stdout, f"not listed: {generated}"
    assert '"demo",' in (copy.root / scaffold.REGISTRY).read_text()
    assert "Skipping f-string" not in made.stdout + made.stderr
    assert "left to do by hand:" in made.stdout and "speed tables" in made.stdout
    assert copy.kata("dev", "new", DEMO.id, "demo").returncode == 2  # taken
    missing = copy.kata("dev", "new", f"{NEXT + 1:02d}", "nosection", "--api")
    assert missing.returncode == 2 and "no section" in missing.stderr + missing.stdout


@pytest.mark.selftest_slow
def test_the_placeholder_tasks_stubs_pass_the_grading_self_tests_as_they_stand(tmp_path_factory):
    copy = scratch_copy(tmp_path_factory)
    made = copy.kata("dev", "new", PLAIN.id, PLAIN.slug, "--function", "double", "--track",
                     PLAIN.track, "--title", PLAIN.title)
    assert made.returncode == 0, made.stdout + made.stderr
    for what, arguments in scaffold.CHECKS[:6]:
        done = copy.run("-m", "pytest", *[a.replace("{name}", PLAIN.name) for a in arguments],
                        "-q", "-p", "no:randomly", "-p", "no:xdist")
        assert done.returncode in (0, 5), f"{what}:\n{done.stdout[-3000:]}"


def in_chinese(english: str) -> str:
    """The demo kata's texts as a translator writes them (code, numbers and paths kept)."""
    name = DEMO.name
    whole = {
        DEMO.title: "缩放张量",
        "scale against its reference": "scale 与参考实现对照",
        f"see katas/{name}/README.md": f"见 katas/{name}/README.zh-CN.md",
        "x was scaled twice: the result is factor²·x.": "x 被缩放了两次：结果是 factor²·x。",
        "Multiply by factor once.": "只乘一次 factor。",
        "Return factor * x, of the shape of x.": "返回 factor * x，形状与 x 相同。",
        "Look at the shape of x.": "看看 x 的形状。",
        "The output has the shape of x: multiply it by factor.": "输出的形状与 x 相同：把它乘以 factor。",
        # The scaffold's placeholder quiz, left as it is here:
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
    }
    if english in whole:
        return whole[english]
    if english.startswith("def "):  # the near-code hint: nothing but code to translate
        return english
    if "Read README.md in this folder" in english:  # the skeleton's docstring
        return (english.replace(f"Kata {DEMO.id}: {DEMO.title}.", f"练习 {DEMO.id}：缩放张量。")
                .replace("Read README.md in this folder, fill in the function below, then run",
                         "阅读本文件夹中的 README.zh-CN.md，补全下面的函数，然后运行"))
    return ""  # not one of the demo's texts: the test says which


def fill_in_by_hand(copy: Scratch) -> None:
    """What a contributor writes after `kata dev new --api`, for the demo kata: scale(x,
    factor) = factor·x, one catalogued mistake (`scaled-twice`, named by computing
    factor²·x), its mutant, a second correct style, the skeleton's docstring (its pristine
    copy derived, not copied), both READMEs, the zh translations, the README tables' rows
    and the hostile cases' target (the scaffold's BY_HAND, item by item)."""
    name, module, last = DEMO.name, DEMO.module, KATAS[-1]
    todo = ('    """TODO: what it computes, with every shape, e.g. (batch, seq, dim);\n'
            '    returns a tensor like x."""\n')
    copy.edit(f"solutions/{name}/demo.py",
              todo + '    raise NotImplementedError("the reference solution: write it")\n',
              "    return factor * x\n")
    copy.edit(f"graders/{module}/twin.py", "MISTAKE_OF: dict[str, str] = {}",
              'MISTAKE_OF: dict[str, str] = {"twice": "scaled-twice"}')
    copy.edit(f"graders/{module}/twin.py",
              todo + '    raise NotImplementedError("graders/demo/twin.py: write scale, with a '
              'branch per switch")\n',
              '    return factor * factor * x if mistake == "twice" else factor * x\n')
    copy.edit(f"graders/{module}/checks.py", "                 on, [])",
              "                 on, [Suspect(slug, lambda s=s: twin.scale(**arguments, mistake=s))\n"
              "                      for s, slug in twin.MISTAKE_OF.items()])")
    copy.edit(f"katas/{name}/demo.py", todo, '    """Return factor * x, of the shape of x."""\n')
    meta = (copy.root / f"graders/{module}/meta.py").read_text()
    rungs = re.search(r"    hints=\(\n.*?\n    \),", meta, re.S).group(0)
    (copy.root / f"graders/{module}/meta.py").write_text(meta.replace(rungs, (
        '    hints=(\n        "Look at the shape of x.",\n'
        '        "The output has the shape of x: multiply it by factor.",\n'
        '        "def scale(x, factor=2.0):\\n    return factor * x",\n    ),')))
    copy.edit(f"graders/{module}/meta.py", "    mistakes=(),", '    mistakes=("scaled-twice",),')
    copy.edit(f"graders/{module}/meta.py", "MISTAKES: tuple[Mistake, ...] = ()",
              'MISTAKES: tuple[Mistake, ...] = (\n    Mistake("scaled-twice", "x was scaled '
              'twice: the result is factor²·x.", "Multiply by factor once."),\n)')
    copy.edit(f"tests/mutants/{name}.py", "MUTANTS: list = []",
              "MUTANTS = [Mutant('scaled-twice', why='x scaled twice.', edits=[("
              "'return factor * x', 'return factor * factor * x')])]")
    (copy.root / f"tests/styles/{name}/added.py").write_text(
        "def scale(x, factor=2.0):\n    return x * factor\n")
    for readme, old, new in (
            ("README.md", "`scale` (TODO: the problem).", "`scale(x, factor=2.0)` returns "
             "`factor * x`."),
            ("README.zh-CN.md", "`scale`（待写：题目）。", "`scale(x, factor=2.0)` 返回 `factor * x`。")):
        copy.edit(f"katas/{name}/{readme}", old, new)
    for readme, difficulty, minutes in (("README.md", "easy", "10 min"),  # as --difficulty, --minutes
                                        ("README.zh-CN.md", "简单", "10 分钟")):
        text = (copy.root / readme).read_text()
        row = re.search(rf"^\| `{last.name}` \|.*\n", text, re.M)
        assert row, f"{readme}: no row for {last.name}"
        text = (text[:row.end()] + f"| `{name}` | factor·x | {difficulty} | {minutes} | "
                f"`katas/{name}/demo.py` |\n" + text[row.end():])
        for speed_row in re.findall(rf"^\| {last.name} \|.*\n", text, re.M):  # both speed tables
            cells = speed_row.count("|") - 1
            text = text.replace(speed_row, speed_row + f"| {name} |" + " 1.00 |" * (cells - 1) + "\n")
        (copy.root / readme).write_text(text)
    hostile = (copy.root / "tests/test_hostile.py").read_text()
    entry = re.search(rf'^    "{last.name}": Target\(.*\n', hostile, re.M)
    assert entry, f"tests/test_hostile.py: no TARGETS entry for {last.name}"
    (copy.root / "tests/test_hostile.py").write_text(
        hostile[:entry.end()] + f'    "{name}": Target(None, "scale"),\n' + hostile[entry.end():])
    # The translations: update the catalogs (which derives the pristine skeleton), export
    # what is new, translate, import.
    updated = copy.run("-m", "graders.tools.texts", "update")
    assert updated.returncode == 0 and "derived graders/demo/skeleton.py" in updated.stdout, (
        updated.stdout + updated.stderr)
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
def test_a_kata_whose_api_differs_from_the_stub_passes_dev_check_once_filled_in(scratch):
    """The issue's "done when": a kata made with `kata dev new --api` from its contract
    section, its API not the placeholder task's, passes every completeness self-test
    (`kata dev check`) once its hand-written parts are in."""
    copy, made = scratch
    assert made.returncode == 0, made.stdout + made.stderr
    fill_in_by_hand(copy)
    checked = copy.kata("dev", "check", DEMO.id)
    assert checked.returncode == 0, checked.stdout[-4000:] + checked.stderr[-2000:]
    assert f"{len(scaffold.CHECKS)}/{len(scaffold.CHECKS)}" in checked.stdout, checked.stdout
