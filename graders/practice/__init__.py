"""The practice service under both front ends (the `kata` command and the room of `kata
serve`): the learner's state (its one owner), grading and recording, reset, restore and
backups, the solution, mock interviews, hints, quizzes, reviews and the report - as methods
of one object, :class:`Practice`, that return data (a graders.practice.messages.Message, an
Outcome, a dict, a KataResult), never printed text.

A front end imports from this package alone: Practice, and the data types, errors,
constants and words helpers re-exported below.

Modules: ``service`` (Practice: the facade, each method handing its work to a module below),
``workspace`` (Workspace, Practice's body: files, state, grading, backups, statuses, time),
``common`` (shared words, errors, small state readers), ``state`` (the state file),
``messages``, ``words`` (the words both front ends share), ``files`` (reset, restore,
solution), ``mock``, ``hints``, ``quiz``, ``review`` (the schedule), ``reviewing`` (a review
started), ``report``.
"""

from graders.practice.common import (  # noqa: F401 (what the front ends use)
    ABORTED, FILE_MISSING, FOLLOW_UPS_HEADING, FOLLOW_UPS_HEADINGS, STATE_DIR, TIME_RAN_OUT,
    Refused, Said, UsageError, clock_time, countdown, difficulty_word, hint_level,
    hint_level_word, last_attempt, outcome_word, progress_line, progress_words, resolve,
    track_heading, tracks)
from graders.practice.messages import Message, Outcome  # noqa: F401
from graders.practice.mock import (MINUTES_RANGE, minutes_allowed, mock_readme,  # noqa: F401
                                   questions_only)
from graders.practice.service import Practice  # noqa: F401
from graders.practice.state import fresh_state  # noqa: F401
from graders.practice.words import (SHARED_WORDS, Words, dropped_words,  # noqa: F401
                                    review_reason_word, worded)
