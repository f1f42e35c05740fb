"""Grades sliding_window.py. Run: pytest katas/18_sliding_window  (--impl PATH grades another file)."""

from graders.sliding_window.checks import *  # noqa: F401,F403  (the grading checks)
