"""Kata 17_beam_search (Beam search over a next-token step function).

``checks`` is its grader (what katas/17_beam_search/test_beam_search.py imports); ``meta``
its registry entry, hint ladder, own mistakes and quiz; ``twin`` its reference model with a
switch per catalogued mistake. Nothing is imported here: reading ``meta`` must stay cheap
(no torch).
"""
