"""Grades decoder_layer.py. Run: pytest katas/08_decoder_layer  (--impl PATH: another file)."""

from graders.decoder_layer.checks import *  # noqa: F401,F403  (the grading checks)
