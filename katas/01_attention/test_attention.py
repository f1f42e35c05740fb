"""Grades attention.py. Run: pytest katas/01_attention  (--impl PATH grades another file)."""

from graders.attention.checks import *  # noqa: F401,F403  (the grading checks)
