"""Grades heads.py. Run: pytest katas/02_heads  (--impl PATH grades another file)."""

from graders.heads.checks import *  # noqa: F401,F403  (the grading checks)
