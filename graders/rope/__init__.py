"""Kata 12_rope (Rotary position embedding (RoPE)).

``checks`` is its grader (what katas/12_rope/test_rope.py imports); ``meta`` its registry
entry, hint ladder, own mistakes and quiz. Nothing is imported here: reading ``meta`` must
stay cheap (no torch).
"""
