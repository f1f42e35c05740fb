"""Grades gqa.py. Run: pytest katas/13_gqa  (--impl PATH grades another file)."""

from graders.gqa.checks import *  # noqa: F401,F403  (the grading checks)
