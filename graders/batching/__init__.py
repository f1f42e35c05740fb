"""Kata 25_continuous_batching (iteration-level scheduling over a packed, ragged batch).

``checks`` is its grader (what katas/25_continuous_batching/test_batching.py imports); ``meta`` its registry
entry, hint ladder, own mistakes and quiz; ``skeleton.py`` the pristine skeleton (data, never
imported). Nothing is imported here: reading ``meta`` must stay cheap (no torch).
"""
