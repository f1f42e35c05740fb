"""Kata 06_encoder_layer (A Transformer encoder layer and stack).

``checks`` is its grader (what katas/06_encoder_layer/test_encoder_layer.py imports);
``meta`` its registry entry, hint ladder, own mistakes and quiz. Nothing is imported here:
reading ``meta`` must stay cheap (no torch).
"""
