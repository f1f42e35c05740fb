"""Grades dpo.py. Run: pytest katas/29_dpo  (--impl PATH grades another file)."""

from graders.dpo.checks import *  # noqa: F401,F403  (the grading checks)
