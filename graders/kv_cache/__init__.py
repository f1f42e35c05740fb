"""Kata 11_kv_cache (Causal self-attention with a key/value cache).

``checks`` is its grader (what katas/11_kv_cache/test_kv_cache.py imports); ``meta`` its
registry entry, hint ladder, own mistakes and quiz; ``twin`` its reference model with a
switch per catalogued mistake. Nothing is imported here: reading ``meta`` must stay cheap
(no torch).
"""
