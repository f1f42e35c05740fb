"""Kata 26_cross_entropy (Next-token cross-entropy).

``checks`` is its grader (what katas/26_cross_entropy/test_cross_entropy.py imports); ``twin`` the reference
with a switch per mistake; ``meta`` its registry entry, hint ladder, own mistakes and quiz;
``skeleton.py`` the pristine skeleton (data, never imported). Nothing is imported here:
reading ``meta`` must stay cheap (no torch).
"""
