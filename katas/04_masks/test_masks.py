"""Grades masks.py. Run: pytest katas/04_masks  (--impl PATH grades another file)."""

from graders.masks.checks import *  # noqa: F401,F403  (the grading checks)
