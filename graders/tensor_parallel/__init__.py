"""Kata 31_tensor_parallel (Tensor-parallel attention).

``checks`` is its grader (what katas/31_tensor_parallel/test_tensor_parallel.py imports); ``twin`` the reference
with a switch per mistake; ``meta`` its registry entry, hint ladder, own mistakes and quiz;
``skeleton.py`` the pristine skeleton (data, never imported). Nothing is imported here:
reading ``meta`` must stay cheap (no torch).
"""
