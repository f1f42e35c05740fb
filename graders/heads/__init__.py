"""Kata 02_heads (Splitting into h heads and merging them back).

``checks`` is its grader (what katas/02_heads/test_heads.py imports); ``meta`` its registry
entry, hint ladder, own mistakes and quiz. Nothing is imported here: reading ``meta`` must
stay cheap (no torch).
"""
