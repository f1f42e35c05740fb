"""Kata 18_sliding_window (Sliding-window attention, attention sinks and a rolling KV cache).

``checks`` is its grader (what katas/18_sliding_window/test_sliding_window.py imports);
``meta`` its registry entry, hint ladder, own mistakes and quiz; ``twin`` its reference
model with a switch per catalogued mistake. Nothing is imported here: reading ``meta`` must
stay cheap (no torch).
"""
