"""Grades mla.py. Run: pytest katas/23_mla  (--impl PATH grades another file)."""

from graders.mla.checks import *  # noqa: F401,F403  (the grading checks)
