"""The learner's state, its one owner: .kata/state.json (hints revealed, attempts, cached
results, time, mock interviews): its schema, the repair of bad values, and updates
serialised so that two ``kata`` commands (or the room's threads) at once lose nothing. The
file's path and raw reading are graders.core.statefile's, shared with the engine."""

from __future__ import annotations

import json
import math
import os
import stat
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable

from graders.core import statefile
from graders.core.i18n import _
from graders.practice.common import STATE_DIR, STATUS_RANK

# The state file's format: 2 added "reviews" (graders.practice.review). A file of an older
# version is read as it is, the sections it lacks starting empty: nothing in it is lost.
STATE_VERSION = 2


def fresh_state() -> dict:
    return {
        "version": STATE_VERSION,
        "hints": {},  # kata name -> hint levels revealed (0-3)
        "attempts": [],  # one per graded version of a kata's file, oldest first
        "cache": {},  # kata name -> {"key": content key, "result": KataResult.to_dict()}
        "revealed": {},  # kata name -> {"at": ISO time, "t": epoch} of the first reveal
        "time": {},  # kata name -> {"last": epoch, "total_s": ..., "since_attempt_s": ...}
        "mock": None,  # the running mock: {"kata", "started", "deadline", "minutes"}
        "mocks": [],  # finished mocks, oldest first
        "reviews": {},  # kata name -> its review schedule (graders.practice.review)
    }


_SECTION_TYPES = {"hints": dict, "attempts": list, "cache": dict, "revealed": dict,
                  "time": dict, "mock": (dict, type(None)), "mocks": list, "reviews": dict}


def _well_formed(raw: Any) -> dict | None:
    """The state in ``raw`` with malformed entries dropped, or None when it is not a state."""
    if not isinstance(raw, dict):
        return None
    state = fresh_state()
    for section, kinds in _SECTION_TYPES.items():
        if section in raw:
            if not isinstance(raw[section], kinds):
                return None
            state[section] = raw[section]
    state["hints"] = {k: v for k, v in state["hints"].items() if isinstance(v, int)}
    state["reviews"] = {k: v for k, v in state["reviews"].items()
                        if isinstance(v, dict) and isinstance(v.get("due"), str)}
    state["attempts"] = [a for a in state["attempts"] if isinstance(a, dict)
                         and isinstance(a.get("kata"), str) and a.get("status") in STATUS_RANK]
    for attempt in state["attempts"]:
        for key in ("t", "duration_s"):
            if key in attempt and not _number(attempt[key]):
                attempt[key] = 0.0
    # A mock's minutes, a time: finite numbers (a hand-edited or older file may hold
    # Infinity, NaN or a string, which would crash the report): repaired, never fatal.
    state["mocks"] = [m for m in state["mocks"] if isinstance(m, dict) and isinstance(m.get("kata"), str)
                      and _number(m.get("minutes"), 0, MAX_STORED_MINUTES) and m["minutes"] > 0]
    for mock in state["mocks"]:
        if not _number(mock.get("taken_s"), 0, mock["minutes"] * 60):
            mock["taken_s"] = 0.0
    state["time"] = {k: {key: value for key, value in v.items() if _number(value)}
                     for k, v in state["time"].items() if isinstance(v, dict)}
    mock = state["mock"]
    if mock is not None and not (isinstance(mock.get("kata"), str)
                                 and all(_number(mock.get(k)) for k in ("started", "deadline"))
                                 and _number(mock.get("minutes"), 0, MAX_STORED_MINUTES)
                                 and mock["minutes"] > 0):
        state["mock"] = None
    return state


MAX_STORED_MINUTES = 10_000  # a mock's minutes as read back (kata mock allows 1 to 600)


def _number(value: Any, low: float = -math.inf, high: float = math.inf) -> bool:
    """Whether ``value`` is a finite number (not a bool) from ``low`` to ``high``."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and low <= value <= high)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


UMASK = _umask()  # read once: os.umask can only be read by setting it


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` in one step: readers see the old file or the new one,
    never half of one (a temporary file in the same folder, then os.replace). The file keeps
    its mode (a new one gets 0644 less the umask, as an editor would make it), never the
    temporary file's 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mode = 0o644 & ~UMASK
    handle = tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp",
                                         delete=False)
    try:
        with handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise


_UPDATES = threading.RLock()  # `kata serve` updates the state from several threads at once


class StateStore:
    """The learner's state file. Every change re-reads the file first, so two ``kata``
    commands running at once (a watch and a hint, say) do not undo each other's writes."""

    def __init__(self, folder: Path, warn: Callable[[str], None]):
        self.folder = folder
        self.path = folder / statefile.STATE_NAME
        self.warn = warn

    def read(self) -> dict:
        """The state; a fresh one when the file is missing, or unreadable (set aside, with a
        one-line warning: a broken state file must never stop the learner)."""
        try:
            raw = statefile.read_raw(self.path)
        except FileNotFoundError:
            return fresh_state()
        except (OSError, ValueError) as exc:
            self._set_aside(_("unreadable ({error})", error=type(exc).__name__))
            return fresh_state()
        state = _well_formed(raw)
        if state is None:
            self._set_aside(_("not a kata state file"))
            return fresh_state()
        return state

    def update(self, change: Callable[[dict], Any]) -> Any:
        """Apply ``change`` to the current state, save it, and return what ``change`` returned."""
        with _UPDATES:
            state = self.read()
            outcome = change(state)
            write_atomically(self.path, json.dumps(state, indent=1).encode("utf-8"))
        return outcome

    def _set_aside(self, reason: str) -> None:
        kept = self.path.with_name("state.json.corrupt")
        try:
            os.replace(self.path, kept)
        except OSError:
            kept = None
        state_file = f"{STATE_DIR}/{statefile.STATE_NAME}"
        if kept:
            self.warn(_("warning: {file} was {reason} (kept as {kept}); starting a fresh one",
                        file=state_file, reason=reason, kept=kept.name))
        else:
            self.warn(_("warning: {file} was {reason}; starting a fresh one", file=state_file,
                        reason=reason))
