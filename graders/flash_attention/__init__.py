"""Kata 14_flash_attention (Flash attention: the online softmax, block by block).

``checks`` is its grader (what katas/14_flash_attention/test_flash_attention.py imports);
``meta`` its registry entry, hint ladder, own mistakes and quiz. Nothing is imported here:
reading ``meta`` must stay cheap (no torch).
"""
