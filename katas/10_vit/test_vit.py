"""Grades vit.py. Run: pytest katas/10_vit  (--impl PATH: another file)."""

from graders.vit.checks import *  # noqa: F401,F403  (the grading checks)
