"""Grades moe.py. Run: pytest katas/20_moe  (--impl PATH grades another file)."""

from graders.moe.checks import *  # noqa: F401,F403  (the grading checks)
