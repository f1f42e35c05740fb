"""Kata 15_llama_block (A Llama decoder block).

``checks`` is its grader (what katas/15_llama_block/test_llama_block.py imports); ``meta``
its registry entry, hint ladder, own mistakes and quiz; ``twin`` the block as a function
of its weights, with a switch per mistake. Nothing is imported here: reading ``meta`` must
stay cheap (no torch).
"""
