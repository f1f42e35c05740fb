"""The contributors' tools: the translators' catalogs (``texts``), the words of a lesson's
code cells (``lesson_code``), the notebook builder (``notebooks``) and ``kata dev``'s
scaffold (``scaffold``). No learner runs them and no grader imports them: they sit above
the front ends."""
