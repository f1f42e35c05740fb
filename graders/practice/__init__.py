"""The practice service under both front ends (the `kata` command and the room of `kata
serve`): the learner's state (its one owner), grading and recording, reset, restore and
backups, the solution, mock interviews, hints, quizzes and the report - as functions that
return data (a graders.practice.messages.Message, a dict, a KataResult), never printed text.

Modules: ``common`` (shared words, errors, small state readers), ``state`` (the state
file), ``service`` (Practice: files, grading, statuses, time), ``messages``, ``files``
(reset, restore, solution), ``mock``, ``hints``, ``quiz``, ``report``.
"""

from graders.practice.service import Practice  # noqa: F401
