"""The learner reads the grading and the front ends in their language (issue 12): the
``kata`` command, a pytest verdict, the notebooks' ``check()`` and quiz, in Simplified
Chinese with ``KATA_LANG=zh-CN`` (or ``kata --lang zh-CN``, or a zh locale); code, slugs
and shapes stay as they are.

The kata catalogs and the mistakes catalog are translated separately: where a test needs
one of their texts in Chinese, it puts a translation in (``fake_translation``) and checks
that the text shown is the one looked up.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from graders.core import i18n, registry
from graders.frontends import layout
from graders.core.catalogue import MISTAKES
from graders.core.registry import REPO_ROOT
from graders.frontends import cli, quiz
from tests.mutation import mutants
from tests.test_cli import HEADS, HEADS_INTERLEAVED, Sandbox

ATTENTION = registry.get("01")
MISSING_SCALE = next(m for m in mutants(ATTENTION) if m.slug == "missing-scale")


@pytest.fixture
def chinese(monkeypatch):
    """KATA_LANG=zh-CN for this test; the environment is restored afterwards (also when the
    code under test calls i18n.use, which sets KATA_LANG)."""
    monkeypatch.setenv(i18n.LANGUAGE_ENV, "zh-CN")


@pytest.fixture
def english(monkeypatch):
    monkeypatch.setenv(i18n.LANGUAGE_ENV, "en")


@pytest.fixture
def fake_translation(monkeypatch):
    """Add translations (English -> zh-CN) on top of the catalogs, for this test only."""
    extra: dict[str, str] = {}
    real = i18n.translations

    def translations(language: str) -> dict[str, str]:
        table = real(language)
        return {**table, **extra} if language == "zh-CN" else table

    monkeypatch.setattr(i18n, "translations", translations)
    return extra


@pytest.fixture
def sandbox(tmp_path, monkeypatch) -> Sandbox:
    monkeypatch.setenv(cli.ROOT_ENV_VAR, str(tmp_path))
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO(""))
    return Sandbox(tmp_path)


def has_chinese(text: str) -> bool:
    return any("\u4e00" <= char <= "\u9fff" for char in text)


# --- choosing the language ---------------------------------------------------------------

@pytest.mark.parametrize("environ, expected", [
    ({"LANG": "zh_CN.UTF-8"}, "zh-CN"),
    ({"LC_ALL": "zh_CN.UTF-8", "LANG": "C"}, "zh-CN"),
    ({"LANG": "zh_CN.UTF-8", "KATA_LANG": "en"}, "en"),
    ({"LANG": "C", "KATA_LANG": "zh-CN"}, "zh-CN"),
    ({"LANG": "C"}, "en"),
    ({"LANG": "en_US.UTF-8"}, "en"),
    ({}, "en"),
])
def test_the_language_comes_from_kata_lang_then_the_locale(monkeypatch, environ, expected):
    for name in (i18n.LANGUAGE_ENV, *i18n.LOCALE_ENVS):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert i18n.current() == expected


def test_kata_lang_option_chooses_chinese_before_or_after_the_command(sandbox, english):
    for argv in (["--lang", "zh-CN", "list"], ["list", "--lang", "zh-CN"], ["--lang=zh-CN", "list"]):
        os.environ[i18n.LANGUAGE_ENV] = "en"
        status, out = sandbox.run(*argv)
        assert status == 0, out
        assert "未开始" in out and "练习" in out, out
        assert os.environ[i18n.LANGUAGE_ENV] == "zh-CN"  # the grading in this process reads it


def test_kata_refuses_an_unknown_language(sandbox, english):
    status, out = sandbox.run("--lang", "xx", "list")
    assert status == 2
    assert "'xx'" in out and "en" in out and "zh-CN" in out
    assert os.environ[i18n.LANGUAGE_ENV] == "en"


def test_kata_help_in_chinese(english, capsys):
    assert cli.main(["--lang", "zh-CN", "--help"]) == 0
    out = capsys.readouterr().out
    assert "计时模拟面试" in out and "--abort 中止" in out and "kata quiz" in out


# --- the kata command in Chinese ---------------------------------------------------------

def test_kata_list_in_chinese(sandbox, chinese):
    status, out = sandbox.run("list")
    assert status == 0
    for words in ("练习", "状态", "未开始", "基础", "下一步"):
        assert words in out, (words, out)
    assert "not started" not in out
    for kata in registry.KATAS:
        assert kata.name in out  # ids stay as they are


def test_kata_hint_in_chinese(sandbox, chinese, fake_translation):
    kata = registry.get("03")
    fake_translation[kata.hints[0]] = "先想一想每个头的形状。"
    status, out = sandbox.run("hint", "3")
    assert status == 0
    assert "提示 1/3" in out and "点拨" in out and kata.name in out
    assert f"（点拨）· {kata.name}" in out  # a middle dot, not " - " (zh review #39)
    assert "先想一想每个头的形状。" in out  # the rung, looked up in the catalogs


def test_kata_hint_after_a_mistake_shows_it_translated_with_its_slug(sandbox, chinese,
                                                                      fake_translation):
    slug = "heads-interleaved"
    fake_translation[MISTAKES[slug].explanation] = "把头交错拆分了。"
    fake_translation[MISTAKES[slug].hint] = "先 view 再 transpose。"
    sandbox.file("02").write_text(HEADS_INTERLEAVED)
    assert sandbox.run("check", "02")[0] == 1
    status, out = sandbox.run("hint", "02")
    assert f"[{slug}]：把头交错拆分了。" in out.replace("\n", "")
    assert "提示：先 view 再 transpose。" in out


def test_kata_check_in_chinese(sandbox, chinese):
    sandbox.file("02").write_text(HEADS_INTERLEAVED)
    status, out = sandbox.run("check", "02")
    assert status == 1
    for words in ("检查项", "结果", "失败", "核心", "第一个未通过的检查", "卡住了？kata hint 02"):
        assert words in out, (words, out)
    assert "[heads-interleaved]" in out
    # The verdict is Chinese, the grader's own description of the check included; the
    # check's function name stays, for pytest -k.
    assert "检查项：" in out and "；输入：" in out and "（test_" in out


def test_kata_check_in_english_is_unchanged(sandbox, english):
    sandbox.file("02").write_text(HEADS_INTERLEAVED)
    status, out = sandbox.run("check", "02")
    assert status == 1 and "first failure" in out and "checked " in out
    assert not has_chinese(out)


def test_a_cached_result_is_not_shown_in_another_language(sandbox, monkeypatch, english):
    sandbox.file("02").write_text(HEADS_INTERLEAVED)
    assert sandbox.run("check", "02")[0] == 1
    state = sandbox.state()
    assert state["cache"][HEADS.name]["language"] == "en"
    monkeypatch.setenv(i18n.LANGUAGE_ENV, "zh-CN")
    app = cli.App(root=sandbox.root, console=None)  # type: ignore[arg-type]
    assert app.cached_result(state, HEADS, "zh-CN") is None
    assert app.cached_result(state, HEADS, "en") is not None
    assert app.cached_result(state, HEADS) is not None  # a status is a status in any language


def test_kata_report_in_chinese(sandbox, chinese):
    sandbox.file("02").write_text(HEADS_INTERLEAVED)
    sandbox.run("check", "02")
    status, out = sandbox.run("report")
    assert status == 0
    for words in ("# 注意力练习：自我评估", "当前状态", "## 接下来练什么", "未通过", "未开始"):
        assert words in out, (words, out)
    assert "`kata list`" in out
    report = __import__("json").loads(sandbox.run("report", "--json")[1])
    statuses = {s["kata"]: s["status"] for s in report["katas"]}
    assert statuses[HEADS.name] == "failing"  # data stays as it is


# --- a pytest verdict in Chinese ---------------------------------------------------------

def test_a_failing_pytest_verdict_in_chinese(tmp_path):
    mutant = tmp_path / ATTENTION.file
    mutant.write_text(MISSING_SCALE.source(ATTENTION))
    environ = {**os.environ, i18n.LANGUAGE_ENV: "zh-CN"}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", str(ATTENTION.folder), "--impl", str(mutant), "-q",
         "-p", "no:cacheprovider", "-p", "no:randomly", "-n", "0"],
        cwd=REPO_ROOT, env=environ, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    out = run.stdout
    verdict = [line for line in out.splitlines() if line.startswith("检查项：")]
    assert verdict, out
    assert "[missing-scale]" in out
    assert "提示：" in out
    assert "练习（kata）记分板" in out  # the scoreboard
    failing = next(line.strip() for line in out.splitlines() if line.strip().startswith("未通过："))
    # A list of titles, which may hold 、 themselves: ； (zh review #36, then 2026-12-01 L1).
    assert "；" in failing and "，" not in failing, failing


def test_lists_of_names_in_chinese(chinese):
    """zh review of 15–19, #36 and #39: names listed with 、, the quiz's letters as one types
    them (A、B、C 或 D); zh review of 2026-12-01, L9: a notebook's answers cell lists them
    bare too, saying they are strings, and a wrong answer's verdict shows both letters alike."""
    from graders.core.quizzes import CHOICE, Question, letter_choices, marked

    assert i18n.listing(["`12_rope`", "`13_gqa`"]) == "`12_rope`、`13_gqa`"
    assert letter_choices(4) == "A、B、C 或 D" and letter_choices(2) == "A 或 B"
    question = Question(prompt="?", kind=CHOICE, answer="A", choices=("a", "b", "c", "d"),
                        reasoning="r")
    assert question.answer_format_in_code == '一个字母（字符串，如 "A"）：A、B、C 或 D'
    assert "错误：你的答案是 C，正确答案是 A" in marked(1, question, "C")[1]
    with i18n.speaking("en"):
        assert i18n.listing("abc") == "a, b, c" and letter_choices(3) == "'A', 'B', 'C'"
        assert question.answer_format_in_code == "a letter, as a string: 'A', 'B', 'C', 'D'"
        assert "wrong: you said 'C', the answer is 'A'" in marked(1, question, "C")[1]


def test_a_verdict_shows_the_mistake_as_looked_up(tmp_path, chinese, fake_translation):
    from graders.core import session

    mistake = MISTAKES["missing-scale"]
    fake_translation[mistake.explanation] = "分数没有除以 sqrt(d_k)。"
    fake_translation[mistake.hint] = "在 softmax 之前乘以 1 / sqrt(d_k)。"
    path = tmp_path / ATTENTION.file
    path.write_text(MISSING_SCALE.source(ATTENTION))
    result = session.grade(ATTENTION.id, path)
    first = next(c for c in result.failures if c.slug == "missing-scale")
    lines = first.verdict.splitlines()
    assert lines[0].startswith("检查项：") and "；输入：" in lines[0]
    assert lines[1] == "[missing-scale] 分数没有除以 sqrt(d_k)。"
    assert lines[2] == "提示：在 softmax 之前乘以 1 / sqrt(d_k)。"


# --- the notebooks: check() and the quiz -------------------------------------------------

def _skeleton_objects(kata):
    namespace: dict = {}
    exec(compile(kata.skeleton_path.read_text(), str(kata.skeleton_path), "exec"), namespace)
    return namespace


def test_notebook_check_in_chinese(chinese, capsys):
    from graders.frontends import notebook

    kata = registry.get("02")
    namespace = _skeleton_objects(kata)
    objects = {name: namespace[name] for name in kata.public_names}
    result = notebook.check(kata.id, **objects)
    out = capsys.readouterr().out
    assert result.status == "not started"
    assert "尚未实现" in out and "检查项" in out and "未开始" in out


def test_notebook_use_language(english):
    from graders.frontends import notebook

    assert notebook.use_language("zh-CN") == "zh-CN"
    assert i18n.current() == "zh-CN"
    with pytest.raises(ValueError):
        notebook.use_language("xx")


def test_quiz_in_chinese(chinese, capsys):
    questions = quiz.questions("07")
    answers = {1: questions[0].answer, 2: -1}
    result = quiz.quiz("07", answers)
    out = capsys.readouterr().out
    assert result.score == 1
    assert "1. 正确" in out and "2. 错误：你的答案是 -1" in out and "未作答" in out
    assert f"1/{len(questions)} 正确" in out


def test_quiz_reasoning_in_chinese_fits_88_columns(chinese, capsys, fake_translation):
    """Wrapped by display width: a Chinese character takes two columns."""
    questions = quiz.questions("03")
    for question in questions:
        if i18n.translate(question.reasoning, "zh-CN") == question.reasoning:  # not translated yet
            fake_translation[question.reasoning] = (
                "每个投影有 d_model × d_model 个权重和 d_model 个偏置，四个投影（查询、键、值和输出"
                "投影）合计 4 · d_model² + 4 · d_model 个参数；多头注意力把 d_model 分给各个头，"
                "所以头的个数不改变参数量。") * 2
    quiz.quiz("03", {n: q.answer for n, q in enumerate(questions, start=1)})
    lines = capsys.readouterr().out.splitlines()
    assert any(has_chinese(line) and line.startswith("   ") for line in lines)
    for line in lines:
        assert layout.display_width(line) <= quiz.REASONING_WIDTH, line


def test_sentences_run_on_as_each_language_writes_them():
    """zh review 2026-12-01, L11: two catalog strings joined after 。 take no space."""
    assert i18n.sentences("今天没有到期要复习的练习。", "下一次：20_moe，2026-12-02。") == \
        "今天没有到期要复习的练习。下一次：20_moe，2026-12-02。"
    assert i18n.sentences("Nothing is due.", "Next: 20_moe.", "") == "Nothing is due. Next: 20_moe."
