"""The repository's root conftest.

- ``graders.core.plugin``: the grading machinery for ``pytest katas/NN_name`` (options
  --impl / --solutions, verdicts, scoreboard).
- A bare ``pytest`` (the self-tests, what CI runs) spreads over every core with
  pytest-xdist (one worker more than cores); ``-n 0`` runs them in one process. Grading a kata never goes parallel:
  a learner's run would pay the workers' start-up for a second's worth of checks.
"""

import os

import pytest

pytest_plugins = ["graders.core.plugin"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--selftest-slow", action="store_true", dest="selftest_slow",
                     help="self-tests: run the slow tier too (tests/slow_tier.py)")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """Before xdist reads its options: workers for the self-tests when none were asked for."""
    running_selftests = config.args_source == pytest.Config.ArgsSource.TESTPATHS
    if (running_selftests and config.pluginmanager.hasplugin("xdist")
            and config.option.numprocesses is None and not hasattr(config, "workerinput")):
        # One worker more than there are cores: the notebook tests wait on their kernels and
        # some hostile files sleep, and an extra worker keeps the cores busy meanwhile.
        config.option.numprocesses = (os.cpu_count() or 1) + 1
        config.option.dist = "worksteal"
