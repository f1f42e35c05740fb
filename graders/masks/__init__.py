"""Kata 04_masks (Causal, padding and merged masks).

``checks`` is its grader (what katas/04_masks/test_masks.py imports); ``meta`` its registry
entry, hint ladder, own mistakes and quiz; ``twin`` its reference model with a switch per
catalogued mistake. Nothing is imported here: reading ``meta`` must stay cheap (no torch).
"""
