"""Kata 31's ranks: the learner's layer run on ``world_size`` forked processes, bounded.

:func:`run` forks one process per rank from the grading process (fork, not spawn: a spawned
rank re-imports torch, 5 to 10 s each on two cores; a forked one starts in milliseconds), each
its own process group. A rank first calls ``torch.set_num_threads(1)`` (a forked child whose
parent already ran a multi-threaded op hangs in its first one otherwise), wraps
torch.distributed's collectives so that it records every call, rebinds the names the
learner's code imported to those wrappers, and joins a gloo group through a fresh ``file://``
rendezvous (no port is opened) whose timeout turns a collective that another rank never joins
into an exception. It then grades its cases one by one: the learner's calls go through the
kata's guard (time limit, printing, exceptions), and each case's report (small tensors, the
recorded collectives) travels back through a pipe, pickled.

The grading process reads the reports until every rank has finished, one has failed, or
none has said anything for too long, then kills every rank's process group and reaps it:
nothing a run starts outlives it.
"""

from __future__ import annotations

import functools
import os
import pickle
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field
from datetime import timedelta
from multiprocessing.connection import Connection, wait
from typing import Any, Callable

import torch

from graders.core import guard
from graders.core.i18n import _
from graders.core.implementation import Implementation
from graders.core.report import GradingFailure, NotImplementedYet, describe_value

# torch.distributed's collectives, recorded by name (torch.distributed.nn.functional's call
# these, so they are recorded as what they call).
COLLECTIVES = (
    "all_reduce", "all_gather", "all_gather_into_tensor", "_all_gather_base",
    "all_gather_object", "all_gather_coalesced", "all_reduce_coalesced", "reduce",
    "reduce_scatter", "reduce_scatter_tensor", "_reduce_scatter_base", "all_to_all",
    "all_to_all_single", "broadcast", "broadcast_object_list", "gather", "gather_object",
    "scatter", "scatter_object_list", "send", "recv", "isend", "irecv", "batch_isend_irecv",
    "barrier", "monitored_barrier",
)
# torch.distributed._functional_collectives' (traceable) ones, recorded as the same names.
FUNCTIONAL = {
    "all_reduce": "all_reduce", "all_gather_tensor": "all_gather",
    "all_gather_tensor_autograd": "all_gather", "reduce_scatter_tensor": "reduce_scatter",
    "reduce_scatter_tensor_autograd": "reduce_scatter", "all_to_all_single": "all_to_all",
    "all_to_all_single_autograd": "all_to_all", "broadcast": "broadcast",
    "all_reduce_coalesced": "all_reduce_coalesced",
}
PHASES = ("construct", "load", "forward", "backward")
# What gloo's errors say when a collective's partners never came, or died on the way.
GLOO_WAITED = ("Timed out waiting", "Connection closed by peer", "Connection reset by peer")


def collective_timeout_s() -> float:
    """How long a rank waits in a collective for the others: long enough for a busy machine,
    short enough that a collective no other rank joins is a verdict in seconds."""
    return max(5.0, min(guard.CALL_TIME_LIMIT_S, 10.0))


def silence_limit_s() -> float:
    """How long the grading process waits without a word from any rank before it ends them
    (a rank reports after every case; each learner call is bounded by the guard)."""
    return collective_timeout_s() + 4 * guard.CALL_TIME_LIMIT_S + 5.0


@dataclass
class Recorder:
    """The collectives one rank called, by phase; set up in the rank's process only."""

    phase: str = "construct"
    calls: dict = field(default_factory=lambda: {p: [] for p in PHASES})
    watched: set = field(default_factory=set)  # storages of the caller's inputs
    in_place: str = ""  # the first collective handed the caller's own tensor
    inside: str = ""  # the collective running now (left set when it raised or was stopped)

    def start(self) -> None:
        """A new case: nothing recorded, nothing watched."""
        self.phase, self.in_place, self.inside, self.watched = "construct", "", "", set()
        self.calls = {p: [] for p in PHASES}

    def watch(self, tensors: list[torch.Tensor]) -> None:
        """Note a collective handed one of these (the caller's inputs) or a view of it."""
        self.watched = {t.untyped_storage().data_ptr() for t in tensors}

    def note(self, name: str, args: tuple, kwargs: dict) -> None:
        op = kwargs.get("op", args[1] if name == "all_reduce" and len(args) > 1 else None)
        if self.phase not in self.calls:  # the grader's own work between the phases
            return
        self.calls[self.phase].append((name, "" if op is None else str(op).rsplit(".", 1)[-1]))
        written = args[0] if args else next(
            (kwargs[k] for k in ("tensor", "output", "output_tensor_list", "tensor_list",
                                 "output_tensor") if k in kwargs), None)
        for tensor in _tensors(written):  # what the collective writes into
            if tensor.untyped_storage().data_ptr() in self.watched and not self.in_place:
                self.in_place = name


RECORDER = Recorder()


def _tensors(values: Any) -> list[torch.Tensor]:
    if isinstance(values, torch.Tensor):
        return [values]
    if isinstance(values, (tuple, list)):
        return [t for v in values for t in _tensors(v)]
    return []


def _recording(name: str, original: Callable) -> Callable:
    @functools.wraps(original)
    def recorded(*args, **kwargs):
        if RECORDER.inside:  # called by another collective (recv by way of irecv): one call
            return original(*args, **kwargs)
        RECORDER.note(name, args, kwargs)
        RECORDER.inside = name
        result = original(*args, **kwargs)
        RECORDER.inside = ""
        return result

    recorded.__wrapped_collective__ = True
    return recorded


def install_recorder(impl: Implementation) -> None:
    """Wrap the collectives (in this rank's process only) and rebind, in the globals of the
    learner's code, every name bound to one of them (``from torch.distributed import
    all_reduce`` included), before the layer is built."""
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d

    wrapped: dict[int, Callable] = {}
    for module in (dist, c10d):
        for name in COLLECTIVES:
            original = getattr(module, name, None)
            if original is None or getattr(original, "__wrapped_collective__", False):
                continue
            wrapper = wrapped.setdefault(id(original), _recording(name, original))
            setattr(module, name, wrapper)
    try:
        import torch.distributed._functional_collectives as funcol
    except ImportError:  # pragma: no cover - every torch this kata supports has it
        funcol = None
    if funcol is not None:
        for name, recorded_as in FUNCTIONAL.items():
            original = getattr(funcol, name, None)
            if original is not None and not getattr(original, "__wrapped_collective__", False):
                wrapper = wrapped.setdefault(id(original), _recording(recorded_as, original))
                setattr(funcol, name, wrapper)
    originals = {}
    for module, names in ((dist, COLLECTIVES), (c10d, COLLECTIVES), (funcol, FUNCTIONAL)):
        for name in names if module is not None else ():
            value = getattr(module, name, None)
            if getattr(value, "__wrapped_collective__", False):
                originals[id(value.__wrapped__)] = value
    for namespace in _learner_globals(impl):
        for key, value in list(namespace.items()):
            if callable(value) and id(value) in originals:
                namespace[key] = originals[id(value)]


def _learner_globals(impl: Implementation) -> list[dict]:
    """The global namespaces the learner's code runs in: its module's, and those of every
    function of its public objects (a notebook's cells)."""
    found: dict[int, dict] = {}
    if impl.module is not None:
        found[id(impl.module.__dict__)] = impl.module.__dict__
        objects = list(vars(impl.module).values())
    else:
        objects = []
    seen: set[int] = set()
    while objects:
        obj = objects.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, (staticmethod, classmethod)):
            obj = obj.__func__
        if isinstance(obj, type) and obj.__module__ not in ("torch", "builtins") \
                and not obj.__module__.startswith("torch."):
            objects.extend(vars(obj).values())
        namespace = getattr(obj, "__globals__", None)
        if isinstance(namespace, dict):
            found.setdefault(id(namespace), namespace)
    return list(found.values())


class RankFailed(Exception):
    """Raised inside a rank when a learner call failed: the verdict travels to the parent."""

    def __init__(self, failure: GradingFailure):
        super().__init__(str(failure))
        self.failure = failure


def learner_call(impl: Implementation, fn: Callable, *args, what: str, on: str, **kwargs):
    """impl.call in a rank: a failure is kept whole (its text, slug and kind)."""
    try:
        return impl.call(fn, *args, what=what, on=on, **kwargs)
    except GradingFailure as failure:
        raise RankFailed(failure) from None


def sendable(value: Any) -> Any:
    """``value`` as it can travel to the grading process: tensors detached, the rest pickled
    as it is, or, where it cannot be pickled, its description."""
    if isinstance(value, torch.Tensor):
        value = value.detach()
        return value.clone() if value.device.type == "cpu" else value
    if isinstance(value, (tuple, list)):
        return (tuple if isinstance(value, tuple) else list)(sendable(v) for v in value)
    try:
        pickle.dumps(value)
        return value
    except Exception:
        try:
            return Described(describe_value(value))
        except Exception:
            return Described(type(value).__name__)


@dataclass(frozen=True)
class Described:
    """Something a rank returned that cannot travel: its description stands in for it."""

    text: str

    def __repr__(self) -> str:
        return self.text


@dataclass
class Run:
    """What the ranks of one run reported: ``reports[rank][case]``, and the first failure."""

    world_size: int
    reports: list[dict] = field(default_factory=list)
    failure: GradingFailure | None = None
    failed_rank: int | None = None
    hung: bool = False  # no rank said anything for too long
    waited: bool = False  # the failure was a collective waited out (hung, or gloo's timeout)

    def waited_out(self, impl: Implementation) -> GradingFailure | None:
        """The failure to report, once this run's failure is shown: a time limit or a
        collective waited out is said once; after that, later checks say "not run" (waiting
        the same wait again would only delay the same verdict)."""
        failure = self.failure
        if isinstance(failure, guard.TimedOut):
            if impl._timed_out:
                return _not_run(impl)
            impl._timed_out = _("the layer's code on rank {rank}", rank=self.failed_rank)
        elif self.waited:
            if getattr(impl, "_tp_hung", ""):
                return GradingFailure(_("not run: {what} in an earlier check; fix that first",
                                        what=impl._tp_hung))
            impl._tp_hung = _("the ranks waited in a collective")
        return type(failure)(str(failure), slug=failure.slug)


def _not_run(impl: Implementation) -> GradingFailure:
    """Implementation.call's own "not run" verdict, after a time limit ran out."""
    try:
        impl.call(lambda: None, what=_("the layer"), on="")
    except GradingFailure as failure:
        return failure
    return GradingFailure(_("not run"))  # pragma: no cover - _timed_out is set


def _kind(failure: GradingFailure) -> str:
    if isinstance(failure, NotImplementedYet):
        return "not-implemented"
    if isinstance(failure, guard.TimedOut):
        return "timed-out"
    return "failed"


def _rebuild(kind: str, text: str, slug: str | None) -> GradingFailure:
    cls = {"not-implemented": NotImplementedYet, "timed-out": guard.TimedOut}.get(kind,
                                                                                  GradingFailure)
    return cls(text, slug=slug)


def _rank_main(impl: Implementation, rank: int, world_size: int, rendezvous: str,
               writer: Connection, cases: list, grade_case: Callable) -> None:
    """A rank's whole life; it never returns (os._exit: nothing of the grading process's
    exit handlers runs twice)."""
    status = 0
    try:
        try:
            os.setpgid(0, 0)  # its own process group: ended with whatever it starts
        except OSError:
            pass
        torch.set_num_threads(1)
        import torch.distributed as dist

        install_recorder(impl)
        if dist.is_initialized():  # a learner's own group, inherited from a notebook
            try:
                dist.destroy_process_group()
            except Exception:
                pass
        dist.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=rank,
                                world_size=world_size,
                                timeout=timedelta(seconds=collective_timeout_s()))
        for index, case in enumerate(cases):
            try:
                report = grade_case(impl, case, rank, world_size)
            except RankFailed as failed:
                f, text = failed.failure, str(failed.failure)
                if RECORDER.inside:
                    text += "\n  " + _(
                        "rank {rank} was waiting in dist.{name} for the other ranks: every rank "
                        "must call the same collectives, in the same order", rank=rank,
                        name=RECORDER.inside)
                writer.send_bytes(pickle.dumps(("failed", index, _kind(f), text, f.slug,
                                                _printed(impl))))
                return
            writer.send_bytes(pickle.dumps(("case", index, report, _printed(impl))))
        writer.send_bytes(pickle.dumps(("done", None, _printed(impl))))
    except BaseException as exc:  # the harness itself: reported, never a traceback
        status = 1
        try:
            writer.send_bytes(pickle.dumps(("crashed", f"{type(exc).__name__}: {exc}")))
        except BaseException:
            pass
    finally:
        os._exit(status)


def _printed(impl: Implementation) -> tuple[int, str]:
    return impl.printed.chars, impl.printed.head


def _merge_printed(impl: Implementation, before: tuple[int, str], after: tuple[int, str]) -> None:
    """Count what rank 0's code printed in the grading process's own record."""
    chars, head = after
    new = head[len(before[1]):]
    if chars > before[0]:
        impl.printed.write(new)
        impl.printed.chars += chars - before[0] - len(new)


def run(impl: Implementation, world_size: int, cases: list, grade_case: Callable) -> Run:
    """Grade ``cases`` on ``world_size`` forked ranks (``grade_case(impl, case, rank, ws)`` in
    each, returning a picklable report); every rank is ended and reaped before this returns."""
    result = Run(world_size, [dict() for _rank in range(world_size)])
    if getattr(impl, "_tp_hung", ""):  # waiting out the same hang again would only delay it
        result.failure = GradingFailure(_(
            "not run: {what} in an earlier check; fix that first", what=impl._tp_hung))
        return result
    if not hasattr(os, "fork"):
        result.failure = GradingFailure(_(
            "kata 31 starts its ranks with os.fork, which this system lacks: grade it on Linux "
            "or macOS (on Windows: in WSL)"))
        return result
    folder = tempfile.mkdtemp(prefix="kata-tp-")
    rendezvous = os.path.join(folder, "rendezvous")
    printed_before = _printed(impl)
    pids: list[int] = []
    readers: dict[int, Connection] = {}
    try:
        for rank in range(world_size):
            read_fd, write_fd = os.pipe()
            pid = os.fork()
            if pid == 0:  # the rank
                os.close(read_fd)
                _rank_main(impl, rank, world_size, rendezvous,
                           Connection(write_fd, readable=False), cases, grade_case)
            os.close(write_fd)
            pids.append(pid)
            try:
                os.setpgid(pid, pid)  # also here: whichever runs first
            except OSError:
                pass
            readers[rank] = Connection(read_fd, writable=False)
        _collect(impl, result, readers, pids, printed_before)
        if result.failure is not None and (result.hung or any(
                sign in str(result.failure) for sign in GLOO_WAITED)):
            result.waited = True
            if not result.hung:
                result.failure = GradingFailure(
                    str(result.failure) + "\n  " + _(
                        "a collective waited {seconds} s for ranks that never joined it: every "
                        "rank must call the same collectives, in the same order",
                        seconds=f"{collective_timeout_s():g}"), slug=result.failure.slug)
    finally:
        for pid in pids:
            for kill in (os.killpg, os.kill):
                try:
                    kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        for reader in readers.values():
            reader.close()
        shutil.rmtree(folder, ignore_errors=True)
    return result


def _collect(impl: Implementation, result: Run, readers: dict[int, Connection], pids: list[int],
             printed_before: tuple[int, str]) -> None:
    open_ = dict(readers)
    last_word = time.monotonic()
    while open_:
        left = silence_limit_s() - (time.monotonic() - last_word)
        if left <= 0:
            rank = min(open_)
            result.failed_rank, result.hung = rank, True
            result.failure = GradingFailure(_(
                "rank {rank} of {ws} sent nothing for {seconds} s: a collective that the other "
                "ranks never joined, or a hang outside Python", rank=rank,
                ws=result.world_size, seconds=f"{silence_limit_s():g}"))
            return
        ready = wait(list(open_.values()), timeout=left)
        for reader in ready:
            rank = next(r for r, c in open_.items() if c is reader)
            try:
                message = pickle.loads(reader.recv_bytes())
            except (EOFError, OSError):
                del open_[rank]
                status = _exit_status(pids[rank])
                result.failed_rank = rank
                result.failure = GradingFailure(_(
                    "rank {rank} of {ws} ended ({status}) before it reported: does your code "
                    "exit or kill its process (os._exit, sys.exit in a thread, a signal)?",
                    rank=rank, ws=result.world_size, status=status))
                return
            except Exception as exc:  # pragma: no cover - a report that does not unpickle
                del open_[rank]
                result.failed_rank = rank
                result.failure = GradingFailure(_("rank {rank} sent a report that could not be "
                                                  "read: {error}", rank=rank, error=exc))
                return
            last_word = time.monotonic()
            kind = message[0]
            if kind == "case":
                result.reports[rank][message[1]] = message[2]
                if rank == 0:
                    _merge_printed(impl, printed_before, message[3])
                    printed_before = message[3]
            elif kind == "done":
                if rank == 0:
                    _merge_printed(impl, printed_before, message[2])
                del open_[rank]
            elif kind == "failed":
                _index, failure_kind, text, slug, printed = message[1:]
                if rank == 0:
                    _merge_printed(impl, printed_before, printed)
                result.failed_rank = rank
                result.failure = _rebuild(failure_kind, text, slug)
                return
            else:  # "crashed": the harness failed in the rank (e.g. no gloo)
                result.failed_rank = rank
                result.failure = GradingFailure(_("rank {rank} could not be set up: {error}",
                                                  rank=rank, error=message[1]))
                return


def _exit_status(pid: int) -> str:
    """How a rank that closed its pipe ended, waiting briefly for it to end."""
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return _("ended")
        if done:
            code = os.waitstatus_to_exitcode(status)
            return (_("exit status {code}", code=code) if code >= 0
                    else _("killed by signal {signal}", signal=-code))
        time.sleep(0.01)
    return _("still running")
