"""Grades grpo.py. Run: pytest katas/30_grpo  (--impl PATH grades another file)."""

from graders.grpo.checks import *  # noqa: F401,F403  (the grading checks)
