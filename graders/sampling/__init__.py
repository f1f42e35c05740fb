"""Kata 16_sampling (Sampling: temperature, top-k and top-p).

``checks`` is its grader (what katas/16_sampling/test_sampling.py imports); ``meta`` its
registry entry, hint ladder, own mistakes and quiz. Nothing is imported here: reading
``meta`` must stay cheap (no torch).
"""
