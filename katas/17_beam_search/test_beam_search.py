"""Grades beam_search.py. Run: pytest katas/17_beam_search  (--impl PATH grades another file)."""

from graders.beam_search.checks import *  # noqa: F401,F403  (the grading checks)
