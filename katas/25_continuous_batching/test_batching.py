"""Grades batching.py. Run: pytest katas/25_continuous_batching  (--impl PATH grades another file)."""

from graders.batching.checks import *  # noqa: F401,F403  (the grading checks)
