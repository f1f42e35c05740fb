"""Where the learner's state lives, and its raw reading: ``.kata/state.json`` of a copy of
the repository. The one owner of the file is :mod:`graders.practice.state` (its schema,
its repair, its serialised updates); the engine reads only the running mock from it
(:mod:`graders.core.interview`), through :func:`read_raw`, never a path of its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

STATE_DIR = ".kata"  # ignored by git: state.json and backups/
STATE_NAME = "state.json"


def state_path(root: Path) -> Path:
    """The state file of the copy of the repository at ``root``."""
    return Path(root) / STATE_DIR / STATE_NAME


def read_raw(path: Path) -> Any:
    """The JSON in the state file at ``path``, as it is (FileNotFoundError, OSError or
    ValueError when it cannot be read: the caller decides what a bad file means)."""
    return json.loads(Path(path).read_text(encoding="utf-8"))
