"""The self-tests read English: they assert on English verdicts and messages, whatever the
contributor's own KATA_LANG or locale (tests/test_i18n.py and the zh-CN notebooks choose
other languages themselves)."""

import os

os.environ["KATA_LANG"] = "en"
