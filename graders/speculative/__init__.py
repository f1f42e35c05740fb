"""Kata 21_speculative_decoding (one step of speculative sampling: a draft proposes, the target verifies, the output distributed exactly as the target's).

``checks`` is its grader (what katas/21_speculative_decoding/test_speculative.py imports); ``meta`` its registry
entry, hint ladder, own mistakes and quiz; ``skeleton.py`` the pristine skeleton (data, never
imported). Nothing is imported here: reading ``meta`` must stay cheap (no torch).
"""
