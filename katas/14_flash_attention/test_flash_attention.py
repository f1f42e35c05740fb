"""Grades flash_attention.py. Run: pytest katas/14_flash_attention  (--impl PATH grades another file)."""

from graders.flash_attention.checks import *  # noqa: F401,F403  (the grading checks)
