"""Grades cross_entropy.py. Run: pytest katas/26_cross_entropy  (--impl PATH grades another file)."""

from graders.cross_entropy.checks import *  # noqa: F401,F403  (the grading checks)
