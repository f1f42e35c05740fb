"""Grades kv_cache.py. Run: pytest katas/11_kv_cache  (--impl PATH grades another file)."""

from graders.kv_cache.checks import *  # noqa: F401,F403  (the grading checks)
