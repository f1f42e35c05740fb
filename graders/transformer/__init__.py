"""Kata 09_transformer (The whole encoder-decoder Transformer and greedy decoding).

``checks`` is its grader (what katas/09_transformer/test_transformer.py imports); ``meta``
its registry entry, hint ladder, own mistakes and quiz. Nothing is imported here: reading
``meta`` must stay cheap (no torch).
"""
