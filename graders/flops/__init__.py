"""Kata 07_flops (Parameters and FLOPs of attention).

``checks`` is its grader (what katas/07_flops/test_flops.py imports); ``meta`` its registry
entry, hint ladder, own mistakes and quiz. Nothing is imported here: reading ``meta`` must
stay cheap (no torch).
"""
