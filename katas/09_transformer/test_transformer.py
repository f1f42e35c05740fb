"""Grades transformer.py. Run: pytest katas/09_transformer  (--impl PATH: another file)."""

from graders.transformer.checks import *  # noqa: F401,F403  (the grading checks)
