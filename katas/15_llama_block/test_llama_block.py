"""Grades llama_block.py. Run: pytest katas/15_llama_block  (--impl PATH grades another file)."""

from graders.llama_block.checks import *  # noqa: F401,F403  (the grading checks)
