"""Grades mha.py. Run: pytest katas/03_mha  (--impl PATH grades another file)."""

from graders.mha.checks import *  # noqa: F401,F403  (the grading checks)
