"""Grades sampling.py. Run: pytest katas/16_sampling  (--impl PATH grades another file)."""

from graders.sampling.checks import *  # noqa: F401,F403  (the grading checks)
