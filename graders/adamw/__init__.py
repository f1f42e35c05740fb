"""Kata 27_adamw (AdamW, gradient clipping and the cosine schedule).

``checks`` is its grader (what katas/27_adamw/test_adamw.py imports); ``twin`` the reference
with a switch per mistake; ``meta`` its registry entry, hint ladder, own mistakes and quiz;
``skeleton.py`` the pristine skeleton (data, never imported). Nothing is imported here:
reading ``meta`` must stay cheap (no torch).
"""
