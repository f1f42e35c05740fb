"""Grades speculative.py. Run: pytest katas/21_speculative_decoding  (--impl PATH grades another file)."""

from graders.speculative.checks import *  # noqa: F401,F403  (the grading checks)
