"""The self-tests read English: they assert on English verdicts and messages, whatever the
contributor's own KATA_LANG or locale (tests/test_i18n.py and the zh-CN notebooks choose
other languages themselves)."""

import os

import pytest

os.environ["KATA_LANG"] = "en"


@pytest.fixture(autouse=True)
def english_unless_a_test_says_otherwise(monkeypatch):
    """Each test starts in English, and a test that switches language (``kata --lang``,
    ``use_language``, ``i18n.use`` set KATA_LANG for the whole process) cannot leave the
    grading sessions of the tests after it in another language."""
    monkeypatch.setenv("KATA_LANG", "en")
