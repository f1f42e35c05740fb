"""The ``kata`` command: hints one at a time, reset with a backup, progress from the scoreboard."""

from __future__ import annotations

import pytest

from graders import cli, registry


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """Katas under tmp_path and a private state file, so the real tree is never touched."""
    monkeypatch.setattr(registry, "KATAS_DIR", tmp_path / "katas")
    monkeypatch.setattr(registry, "REPO_ROOT", tmp_path)
    monkeypatch.setattr(cli, "REPO_ROOT", tmp_path)
    monkeypatch.setattr(cli, "STATE_FILE", tmp_path / ".kata-state.json")
    return tmp_path


def test_hints_come_one_at_a_time(sandbox, capsys):
    kata = registry.get("01")
    for number in (1, 2):
        assert cli.main(["hint", "01"]) == 0
        out = capsys.readouterr().out
        assert f"hint {number}/{len(kata.hints)}" in out
        assert f"hint {number - 1}/" not in out
    assert cli.main(["hint", "01", "--all"]) == 0
    assert capsys.readouterr().out.count("hint ") == len(kata.hints)


def test_reset_backs_up_the_learners_file_first(sandbox, monkeypatch, capsys):
    kata = registry.get("01")
    monkeypatch.setattr(cli, "pristine_skeleton", lambda k: "SKELETON\n")
    kata.skeleton_path.parent.mkdir(parents=True)
    kata.skeleton_path.write_text("my work\n")

    assert cli.main(["reset", "01"]) == 0
    assert kata.skeleton_path.read_text() == "SKELETON\n"
    backups = list(kata.folder.glob("attention.py.kata-backup-*"))
    assert len(backups) == 1 and backups[0].read_text() == "my work\n"

    assert cli.main(["reset", "01"]) == 0  # already pristine: no second backup
    assert len(list(kata.folder.glob("attention.py.kata-backup-*"))) == 1
    assert "already the untouched skeleton" in capsys.readouterr().out


def test_list_reads_the_scoreboard(monkeypatch, capsys):
    monkeypatch.setattr(cli, "scores", lambda: {"01_attention": (5, 5, 6, 6),
                                                "02_heads": (3, 7, 0, 3)})
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "done" in out and "in progress" in out
    assert "Next: 02_heads" in out.replace("\n", " ")


def test_scoreboard_line_is_parsed():
    line = "03_mha  core: 2/3 passed, follow-ups: 1/6 passed"
    assert cli.SCORE_LINE.match(line).groups() == ("03_mha", "2", "3", "1", "6")


def test_unknown_kata_is_a_clear_error(capsys):
    assert cli.main(["hint", "99"]) == 2
    assert "no kata called '99'" in capsys.readouterr().out
