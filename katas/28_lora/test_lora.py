"""Grades lora.py. Run: pytest katas/28_lora  (--impl PATH grades another file)."""

from graders.lora.checks import *  # noqa: F401,F403  (the grading checks)
