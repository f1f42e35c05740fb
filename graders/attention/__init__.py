"""Kata 01_attention (Single-head scaled dot-product attention).

``checks`` is its grader (what katas/01_attention/test_attention.py imports); ``meta`` its
registry entry, hint ladder, own mistakes and quiz. Nothing is imported here: reading
``meta`` must stay cheap (no torch).
"""
