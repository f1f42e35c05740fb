"""Starting a review: the one action of the review schedule that changes the learner's files.

It resets the kata to its skeleton (:mod:`graders.practice.files`, backed up first) or starts
a mock interview of it (:mod:`graders.practice.mock`), then records the review as under way
(:mod:`graders.practice.review`, the schedule itself, which imports none of these). It sits
above all three, so no practice module imports another in a circle.
"""

from __future__ import annotations

from graders.core.registry import Kata
from graders.practice import files, mock, review
from graders.practice.messages import Outcome
from graders.practice.workspace import Workspace


def start(practice: Workspace, kata: Kata, *, as_mock: bool = False,
          minutes: float | None = None) -> Outcome:
    """Start a review of ``kata``: its file back to the skeleton (backed up first), or a mock
    interview of it (``as_mock``), and the review recorded as under way. Returns the
    practice service's Outcome (what was backed up, what started)."""
    if as_mock:
        outcome = mock.start(practice, kata, minutes)
    else:
        outcome = files.reset(practice, kata)
    practice.store.update(lambda state: review.begin(state, kata, practice.clock()))
    return outcome.say("review.started", kata=kata.name)
