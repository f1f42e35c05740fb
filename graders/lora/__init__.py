"""Kata 28_lora (LoRA adapters).

``checks`` is its grader (what katas/28_lora/test_lora.py imports); ``twin`` the reference
with a switch per mistake; ``meta`` its registry entry, hint ladder, own mistakes and quiz;
``skeleton.py`` the pristine skeleton (data, never imported). Nothing is imported here:
reading ``meta`` must stay cheap (no torch).
"""
