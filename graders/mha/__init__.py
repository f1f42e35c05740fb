"""Kata 03_mha (A minimal multi-head attention).

``checks`` is its grader (what katas/03_mha/test_mha.py imports); ``meta`` its registry
entry, hint ladder, own mistakes and quiz. Nothing is imported here: reading ``meta`` must
stay cheap (no torch).
"""
