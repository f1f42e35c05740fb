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


def _slow_tier_asked(config: pytest.Config) -> bool:
    """--selftest-slow, ``-m selftest_slow``, or a test named by its node id."""
    markexpr = config.getoption("markexpr") or ""
    return (config.getoption("selftest_slow")
            or ("selftest_slow" in markexpr and "not selftest_slow" not in markexpr)
            or any("::" in str(arg) for arg in config.args))


def pytest_report_header(config: pytest.Config) -> str:
    from tests import slow_tier

    return slow_tier.should_run(_slow_tier_asked(config))[1]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The slow tier (tests/slow_tier.py) only when its files changed or when asked."""
    from tests import slow_tier

    if slow_tier.should_run(_slow_tier_asked(config))[0]:
        return
    slow = [item for item in items if item.get_closest_marker("selftest_slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("selftest_slow")]
