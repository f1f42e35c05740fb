"""Kata 31's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant  # noqa: F401 (one Mutant per catalogued mistake)

MUTANTS: list = []
