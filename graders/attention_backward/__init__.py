"""Kata 19_attention_backward (The backward pass of attention, by hand).

``checks`` is its grader (what katas/19_attention_backward/test_attention_backward.py
imports); ``meta`` its registry entry, hint ladder, own mistakes and quiz; ``twin`` its
reference model with a switch per catalogued mistake. Nothing is imported here: reading
``meta`` must stay cheap (no torch).
"""
