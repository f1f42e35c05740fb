"""Kata 10_vit (The Vision Transformer's block (timm)).

``checks`` is its grader (what katas/10_vit/test_vit.py imports); ``meta`` its registry
entry, hint ladder, own mistakes and quiz; ``twin`` its reference model with a switch per
catalogued mistake, ``learner`` how the learner's modules are built and called, ``dropout``
the dropout and drop path checks. Nothing is imported here: reading ``meta`` must stay cheap
(no torch).
"""
