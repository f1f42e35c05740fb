"""Grades kv_quant.py. Run: pytest katas/24_kv_quant  (--impl PATH grades another file)."""

from graders.kv_quant.checks import *  # noqa: F401,F403  (the grading checks)
