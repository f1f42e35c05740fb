"""Kata 08_decoder_layer (A Transformer decoder layer and stack).

``checks`` is its grader (what katas/08_decoder_layer/test_decoder_layer.py imports);
``meta`` its registry entry, hint ladder, own mistakes and quiz. Nothing is imported here:
reading ``meta`` must stay cheap (no torch).
"""
