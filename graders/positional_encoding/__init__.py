"""Kata 05_positional_encoding (Sinusoidal positional encoding).

``checks`` is its grader (what katas/05_positional_encoding/test_positional_encoding.py
imports); ``meta`` its registry entry, hint ladder, own mistakes and quiz; ``twin`` its
reference model with a switch per catalogued mistake. Nothing is imported here: reading
``meta`` must stay cheap (no torch).
"""
