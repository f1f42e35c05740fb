"""Kata 21_speculative_decoding (Speculative decoding).

``checks`` is its grader (what katas/21_speculative_decoding/test_speculative.py imports); ``meta`` its registry
entry, hint ladder, own mistakes and quiz; ``skeleton.py`` the pristine skeleton (data, never
imported). Nothing is imported here: reading ``meta`` must stay cheap (no torch).
"""
