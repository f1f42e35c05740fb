"""Grades encoder_layer.py. Run: pytest katas/06_encoder_layer  (--impl PATH: another file)."""

from graders.encoder_layer.checks import *  # noqa: F401,F403  (the grading checks)
