"""Kata 13_gqa (Grouped-query and multi-query attention).

``checks`` is its grader (what katas/13_gqa/test_gqa.py imports); ``meta`` its registry
entry, hint ladder, own mistakes and quiz. Nothing is imported here: reading ``meta`` must
stay cheap (no torch).
"""
