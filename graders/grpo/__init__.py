"""Kata 30_grpo (GRPO loss).

``checks`` is its grader (what katas/30_grpo/test_grpo.py imports); ``twin`` the reference
with a switch per mistake; ``meta`` its registry entry, hint ladder, own mistakes and quiz;
``skeleton.py`` the pristine skeleton (data, never imported). Nothing is imported here:
reading ``meta`` must stay cheap (no torch).
"""
