"""Grades adamw.py. Run: pytest katas/27_adamw  (--impl PATH grades another file)."""

from graders.adamw.checks import *  # noqa: F401,F403  (the grading checks)
