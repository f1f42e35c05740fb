"""Grades paged_kv_cache.py. Run: pytest katas/22_paged_kv_cache  (--impl PATH grades another file)."""

from graders.paged_kv_cache.checks import *  # noqa: F401,F403  (the grading checks)
