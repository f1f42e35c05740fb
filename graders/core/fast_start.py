"""Start a grading process without paying for Python's garbage collector over PyTorch.

``import torch`` creates about a million objects that live as long as the process. While
they are imported, the collector keeps walking all of them (several full collections), and
once imported every later full collection walks them again, and so does the interpreter's
last one at exit: together about a third of a bare ``import torch``'s CPU time. None of it
frees anything. :func:`import_torch` imports torch with the collector paused, then freezes
what exists (``gc.freeze``: kept out of every later collection), so a collection walks only
what grading itself creates.
"""

from __future__ import annotations

import gc
import sys


def import_torch() -> None:
    """Import torch, if this process has not: collector paused, then what it made frozen.

    Once per process, and only by the import that loads torch: a process that imported torch
    earlier (a notebook's kernel) may hold garbage of its own by now, which must stay
    collectable.
    """
    if "torch" in sys.modules:
        return
    collecting = gc.isenabled()
    gc.disable()
    try:
        import torch  # noqa: F401
    finally:
        if collecting:
            gc.enable()
    gc.freeze()
