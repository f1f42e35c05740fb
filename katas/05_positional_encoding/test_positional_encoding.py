"""Grades positional_encoding.py. Run: pytest katas/05_positional_encoding  (--impl PATH grades another file)."""

from graders.positional_encoding.checks import *  # noqa: F401,F403  (the grading checks)
