"""Kata 24_kv_quant (A quantised KV cache).

``checks`` is its grader (what katas/24_kv_quant/test_kv_quant.py imports); ``meta`` its registry
entry, hint ladder, own mistakes and quiz; ``skeleton.py`` the pristine skeleton (data, never
imported). Nothing is imported here: reading ``meta`` must stay cheap (no torch).
"""
