"""Grades rope.py. Run: pytest katas/12_rope  (--impl PATH grades another file)."""

from graders.rope.checks import *  # noqa: F401,F403  (the grading checks)
