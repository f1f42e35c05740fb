"""Kata 23_mla (Multi-head latent attention).

``checks`` is its grader (what katas/23_mla/test_mla.py imports); ``meta`` its registry
entry, hint ladder, own mistakes and quiz; ``skeleton.py`` the pristine skeleton (data, never
imported). Nothing is imported here: reading ``meta`` must stay cheap (no torch).
"""
