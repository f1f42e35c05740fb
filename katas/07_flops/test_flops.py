"""Grades flops.py. Run: pytest katas/07_flops  (--impl PATH grades another file)."""

from graders.flops.checks import *  # noqa: F401,F403  (the grading checks)
