"""Grades tensor_parallel.py. Run: pytest katas/31_tensor_parallel  (--impl PATH grades another file)."""

from graders.tensor_parallel.checks import *  # noqa: F401,F403  (the grading checks)
