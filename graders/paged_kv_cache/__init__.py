"""Kata 22_paged_kv_cache (A paged KV cache).

``checks`` is its grader (what katas/22_paged_kv_cache/test_paged_kv_cache.py imports); ``meta`` its registry
entry, hint ladder, own mistakes and quiz; ``skeleton.py`` the pristine skeleton (data, never
imported). Nothing is imported here: reading ``meta`` must stay cheap (no torch).
"""
