"""What the practice service says, as data: a message key and its fields. Each front end
words a key in its own way (graders.frontends.cli.words, graders.frontends.serve.words, over
the words they share in graders.practice.words): the terminal names commands (kata mock
--submit), the room its buttons (Hand in)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Message:
    key: str  # e.g. "reset.done"
    fields: dict[str, Any] = field(default_factory=dict)


def message(key: str, **fields: Any) -> Message:
    return Message(key, fields)


@dataclass
class Outcome:
    """What a piece of work did: its messages in order, whether it did what was asked
    (the CLI's exit status), and its data for a front end to show."""

    messages: list[Message] = field(default_factory=list)
    ok: bool = True
    data: dict[str, Any] = field(default_factory=dict)

    def say(self, key: str, **fields: Any) -> "Outcome":
        self.messages.append(Message(key, fields))
        return self
