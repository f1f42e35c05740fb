"""Grades attention_backward.py. Run: pytest katas/19_attention_backward  (--impl PATH grades another file)."""

from graders.attention_backward.checks import *  # noqa: F401,F403  (the grading checks)
