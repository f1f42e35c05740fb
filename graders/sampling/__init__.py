"""Kata 16_sampling (Sampling: temperature, top-k and top-p).

``checks`` is its grader (what katas/16_sampling/test_sampling.py imports); ``meta`` its
registry entry, hint ladder, own mistakes and quiz; ``twin`` its reference model with a
switch per catalogued mistake, ``statistics`` the chi-square test. Nothing is imported here:
reading ``meta`` must stay cheap (no torch).
"""
