"""Kata 20_moe (A sparse mixture-of-experts layer).

``checks`` is its grader (what katas/20_moe/test_moe.py imports); ``meta`` its registry
entry, hint ladder, own mistakes and quiz; ``skeleton.py`` the pristine skeleton (data, never
imported). Nothing is imported here: reading ``meta`` must stay cheap (no torch).
"""
