"""Run learner code as untrusted input.

:func:`call` runs one learner callable (a function, a constructor, a module's forward)
and turns everything that can go wrong into a short :class:`GradingFailure`:
NotImplementedError, any other exception (with the learner's file and line), a call to a
forbidden PyTorch built-in, an endless loop, or inputs modified in place.

Forbidden built-ins are caught by behaviour: while the learner's code runs, a
``TorchFunctionMode`` refuses the forbidden torch functions (however they were
imported), and the forbidden module classes refuse to be built or called.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import os
import re
import signal
import textwrap
import threading
import traceback
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import torch
from torch.overrides import TorchFunctionMode

from graders.core.i18n import _
from graders.core.learner_clock import CallClock
from graders.core.report import GradingFailure, NotImplementedYet, checked_line, mistake_lines

# Graded inputs are tiny: a correct call takes milliseconds. KATA_TIME_LIMIT (seconds)
# overrides the limit, e.g. to keep the self-tests' endless loops short.
def configured_time_limit() -> float:
    """The per-call limit the environment asks for (KATA_TIME_LIMIT), else 10 s."""
    return float(os.environ.get("KATA_TIME_LIMIT") or 10)


CALL_TIME_LIMIT_S = configured_time_limit()
# The untouched skeleton's message ("see katas/NN/README.md", or a notebook's translation of
# it, "见 katas/NN/README.zh-CN.md"): left out of the verdict, whose closing line already
# names the README in the learner's language.
SKELETON_MESSAGE = re.compile(r"\S{0,8} ?katas/[\w.-]+/README(\.[\w-]+)?\.md")
# What learner code prints while graded is captured, never shown in full: the checks judge
# the results alone, and the report notes how much was printed, with its first line cut to
# this length (megabytes of debug output would flood a terminal or a notebook).
PRINT_EXCERPT_CHARS = 60
# Shown on request (kata check --show-prints, pytest -s): the first lines of what it printed,
# within both bounds, then how much was left out.
SHOWN_PRINT_LINES = 40
SHOWN_PRINT_CHARS = 4000


class TimedOut(GradingFailure):
    """Learner code ran past the time limit."""


class ForbiddenCall(Exception):
    """Raised inside learner code when it calls a forbidden built-in (``args[0]``: its
    dotted name); ``slug`` is the mistake reported."""

    def __init__(self, name: str, slug: str = "forbidden-builtin"):
        super().__init__(name)
        self.slug = slug


class LearnerTimeout(Exception):
    """Raised inside learner code when a call runs past its time limit."""


# Dotted names from graders.core.registry -> what to intercept.
_FUNCTIONS = {
    "torch.nn.functional.scaled_dot_product_attention": "scaled_dot_product_attention",
    "torch.nn.functional.multi_head_attention_forward": "multi_head_attention_forward",
    # Kata 15: F.rms_norm and the op behind it (nn.RMSNorm calls them) share the name.
    "torch.nn.functional.rms_norm": "rms_norm",
    "torch.rms_norm": "rms_norm",
    # Kata 26: the loss itself (nn.CrossEntropyLoss calls F.cross_entropy).
    "torch.nn.functional.cross_entropy": "cross_entropy",
    "torch.nn.functional.nll_loss": "nll_loss",
    # Kata 27: the fused optimizer kernels torch.optim.Adam(W)(fused=True) steps with.
    "torch._fused_adam_": "_fused_adam_",
    "torch._fused_adamw_": "_fused_adamw_",
}
_MODULES = {
    "torch.nn.MultiheadAttention": torch.nn.MultiheadAttention,
    "torch.nn.TransformerEncoderLayer": torch.nn.TransformerEncoderLayer,
    "torch.nn.TransformerEncoder": torch.nn.TransformerEncoder,
    # Refusing __init__ and forward leaves the static generate_square_subsequent_mask free.
    "torch.nn.Transformer": torch.nn.Transformer,
    "torch.nn.TransformerDecoderLayer": torch.nn.TransformerDecoderLayer,
    "torch.nn.TransformerDecoder": torch.nn.TransformerDecoder,
    "torch.nn.RMSNorm": torch.nn.RMSNorm,
    "torch.nn.CrossEntropyLoss": torch.nn.CrossEntropyLoss,
    # Kata 27: building or stepping PyTorch's optimizers (AdamW inherits Adam's step).
    "torch.optim.Adam": torch.optim.Adam,
    "torch.optim.AdamW": torch.optim.AdamW,
}
# Python functions no TorchFunctionMode sees (kata 18's flex_attention): while learner code
# runs, the function's code is swapped for one that refuses, however it was imported.
_PYTHON_FUNCTIONS = {
    "torch.nn.attention.flex_attention.flex_attention": "torch.nn.attention.flex_attention",
    # Kata 25: nested (jagged) tensors are varlen attention already.
    "torch.nested.nested_tensor": "torch.nested",
    "torch.nested.as_nested_tensor": "torch.nested",
    "torch.nested.nested_tensor_from_jagged": "torch.nested",
    "torch.nested.narrow": "torch.nested",
    # Kata 27: the functional Adam (torch.optim.adamw.adamw calls it) and the clip, in one
    # call or in its two halves. Decorated functions: the code swapped is the wrapped one's.
    "torch.optim.adam.adam": "torch.optim.adam",
    "torch.nn.utils.clip_grad_norm_": "torch.nn.utils",
    "torch.nn.utils.get_total_norm": "torch.nn.utils",
    "torch.nn.utils.clip_grads_with_norm_": "torch.nn.utils",
}
# Fused kernels the forbidden modules may dispatch to directly.
_FUSED = {
    "torch.nn.MultiheadAttention": ("_native_multi_head_attention",),
    "torch.nn.TransformerEncoderLayer": ("_transformer_encoder_layer_fwd",),
}


class _ForbidFunctions(TorchFunctionMode):
    def __init__(self, names: dict[str, str]):
        super().__init__()
        self.names = names  # function __name__ -> dotted name to report

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in self.names:
            raise ForbiddenCall(self.names[name])
        return func(*args, **(kwargs or {}))


# Autograd's entry points, refused while a hand-written backward runs (kata 19): every
# torch.func transform and torch.autograd.functional goes through torch.autograd.grad, or
# through torch._make_dual for forward mode. Compared by identity, so a name imported at
# module level (from torch.autograd import grad) is caught too.
_AUTOGRAD = {
    torch.autograd.grad: "torch.autograd.grad",
    torch.autograd.backward: "torch.autograd.backward",
    torch.Tensor.backward: "Tensor.backward",
    torch._make_dual: "forward-mode autograd (torch.func.jvp / jacfwd, torch.autograd.forward_ad)",
}


class _ForbidAutograd(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        try:
            name = _AUTOGRAD.get(func)
        except TypeError:  # an unhashable callable is none of them
            name = None
        if name:
            raise ForbiddenCall(name, slug="autograd-in-backward")
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def forbidding(forbidden: Sequence[str], autograd: bool = False) -> Iterator[None]:
    """Refuse the ``forbidden`` built-ins (and, with ``autograd``, autograd itself) inside
    the block: for learner code that runs where :func:`call`'s own refusal does not reach,
    e.g. a custom autograd Function's backward, which the autograd engine runs after
    the graded call has returned."""
    with _forbid(forbidden):
        if autograd:
            with _ForbidAutograd():
                yield
        else:
            yield


def _refusing_code(dotted: str):
    """Code that raises ForbiddenCall(dotted), to run with any function's globals."""
    namespace: dict[str, Any] = {}
    exec(f"def refuse(*args, **kwargs):\n"
         f"    raise __import__('graders.core.guard', fromlist=['_']).ForbiddenCall({dotted!r})",
         namespace)
    return namespace["refuse"].__code__


@contextlib.contextmanager
def _forbid(forbidden: Sequence[str]) -> Iterator[None]:
    functions = {_FUNCTIONS[d]: d for d in forbidden if d in _FUNCTIONS}
    for dotted in forbidden:
        for fused in _FUSED.get(dotted, ()):
            functions[fused] = dotted
    classes = [(d, _MODULES[d]) for d in forbidden if d in _MODULES]
    saved = []
    for dotted, cls in classes:
        for attr in ("__init__", "forward", "step"):
            if attr not in cls.__dict__:  # an optimizer has no forward; AdamW inherits step
                continue
            original = cls.__dict__[attr]
            saved.append((cls, attr, original))

            def refuse(*args, _dotted=dotted, **kwargs):
                raise ForbiddenCall(_dotted)

            setattr(cls, attr, refuse)
    for dotted in forbidden:
        if dotted in _PYTHON_FUNCTIONS:
            function = inspect.unwrap(getattr(importlib.import_module(_PYTHON_FUNCTIONS[dotted]),
                                              dotted.rsplit(".", 1)[1]))
            saved.append((function, "__code__", function.__code__))
            function.__code__ = _refusing_code(dotted)
    try:
        if functions:
            with _ForbidFunctions(functions):
                yield
        else:
            yield
    finally:
        for cls, attr, original in saved:
            setattr(cls, attr, original)


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Interrupt pure-Python endless loops after ``seconds`` of the call's own time (see
    :mod:`graders.core.learner_clock`: time spent waiting for a CPU on a busy machine does not
    count); a no-op where SIGALRM is unavailable."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return
    clock = CallClock()

    def on_alarm(signum, frame):
        # An exception raised inside a weakref callback or a __del__ is swallowed by Python
        # ("Exception ignored in ...") and the endless loop would go on: try again shortly.
        if frame is not None and (frame.f_code.co_name == "__del__" or frame.f_code.co_filename
                                  .endswith(("_weakrefset.py", "weakref.py"))):
            signal.setitimer(signal.ITIMER_REAL, 0.005)
            return
        left = clock.left(seconds)
        if left > 0.001:  # the machine was busy: the call has not had its time yet
            signal.setitimer(signal.ITIMER_REAL, max(left, 0.005))
            return
        raise LearnerTimeout()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class PrintedOutput(io.TextIOBase):
    """Stands in for stdout/stderr while learner code runs: counts what it prints over all
    the calls it is passed to, and keeps only the first line, cut short (see
    :data:`PRINT_EXCERPT_CHARS`). Printing never fails a check."""

    def __init__(self) -> None:
        self.chars = 0
        self.first_line = ""
        self._line_done = False
        self.head = ""  # the first SHOWN_PRINT_CHARS characters, for shown()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        text = str(text)
        self.chars += len(text)
        if len(self.head) < SHOWN_PRINT_CHARS + 1:
            self.head += text[:SHOWN_PRINT_CHARS + 1 - len(self.head)]
        if not self._line_done:
            head, newline, _rest = text.partition("\n")
            self.first_line = (self.first_line + head)[:PRINT_EXCERPT_CHARS + 1]
            self._line_done = bool(newline) or len(self.first_line) > PRINT_EXCERPT_CHARS
        return len(text)

    def note(self) -> str:
        """One line for the report, or "" when nothing was printed."""
        if not self.chars:
            return ""
        line = self.first_line.strip()
        if len(line) > PRINT_EXCERPT_CHARS:
            line = line[:PRINT_EXCERPT_CHARS - 3] + "..."
        if line:
            return _("note: your code printed {count} characters while it was graded (not "
                     "shown; its first line: {line})", count=f"{self.chars:,}", line=repr(line))
        return _("note: your code printed {count} characters while it was graded (not shown)",
                 count=f"{self.chars:,}")

    def shown(self) -> str:
        """What the code printed, for a learner who asked to see it: a heading, its first
        lines (at most SHOWN_PRINT_LINES lines and SHOWN_PRINT_CHARS characters), then how
        much was left out; "" when it printed nothing. Printing never fails a check."""
        if not self.chars:
            return ""
        lines = self.head[:SHOWN_PRINT_CHARS].splitlines(keepends=True)[:SHOWN_PRINT_LINES]
        kept = "".join(line.rstrip("\r\n") + "\n" for line in lines)
        text = [_("your code printed {count} characters while it was graded:",
                  count=f"{self.chars:,}"), textwrap.indent(kept, "| ", lambda line: True).rstrip("\n")]
        left_out = self.chars - sum(map(len, lines))
        if left_out:
            text.append(_("... and {count} more characters, not shown", count=f"{left_out:,}"))
        return "\n".join(text)


def _input_names(fn: Callable[..., Any], args: tuple, kwargs: dict) -> dict[int, str]:
    """id(tensor) -> the parameter name it was passed as (``query``), where it can be told:
    through a wrapper made with functools.wraps, the wrapped function's names; a tensor
    caught by ``*args`` is ``args[i]``, by ``**kwargs`` its keyword."""
    target = fn.forward if isinstance(fn, torch.nn.Module) else fn
    try:
        signature = inspect.signature(target)
        bound = signature.bind_partial(*args, **kwargs)
    except (TypeError, ValueError):
        return {}
    names: dict[int, str] = {}
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            named = [(f"{name}[{i}]", v) for i, v in enumerate(value)]
        elif kind is inspect.Parameter.VAR_KEYWORD:
            named = list(value.items())
        else:
            named = [(name, value)]
        for label, item in named:
            for tensor in _tensors(item):
                names.setdefault(id(tensor), label)
    return names


GRADERS_DIR = Path(__file__).resolve().parents[1]  # the graders package: never the learner's


def _same_file(filename: str, path: Path) -> bool:
    try:
        return Path(filename).resolve() == path.resolve()
    except (OSError, ValueError):
        return False


def _is_grader_file(filename: str) -> bool:
    try:
        return Path(filename).resolve().is_relative_to(GRADERS_DIR)
    except (OSError, ValueError):
        return False


def _definition(fn: Any) -> traceback.FrameSummary | None:
    """Where the learner's callable ``fn`` is defined: a class's own __init__, a module's
    forward, a function or method; None when it has no Python code of its own."""
    if isinstance(fn, type):
        target = fn.__dict__.get("__init__") or fn.__init__
    elif isinstance(fn, torch.nn.Module):
        target = type(fn).forward
    else:
        target = fn
    code = getattr(inspect.unwrap(getattr(target, "__func__", target)), "__code__", None)
    if code is None:
        return None
    return traceback.FrameSummary(code.co_filename, code.co_firstlineno, code.co_name)


def _learner_frame(exc: BaseException, learner_file: Path | None, fn: Any = None) -> str:
    """``attention.py:12: scores = q @ k`` for the innermost frame in the learner's file.

    Without one (an exception raised where the call enters the learner's code, e.g. a
    TypeError for an argument its __init__ does not take): the innermost frame in a file
    beside it (a helper module it imports), else where the callable is defined in the
    learner's file, else the innermost frame outside the graders; never a grader's file."""
    every = traceback.extract_tb(exc.__traceback__)
    frames = [f for f in every if not _is_grader_file(f.filename)]
    frame = None
    if learner_file is not None:
        mine = [f for f in every if _same_file(f.filename, learner_file)]
        beside = [f for f in frames if Path(f.filename).parent == learner_file.parent
                  and Path(f.filename).suffix == ".py"]
        defined = _definition(fn) if fn is not None else None
        if defined is not None and not _same_file(defined.filename, learner_file):
            defined = None
        frame = next((found[-1] for found in (mine, beside) if found), None) or defined
    if frame is None and frames:
        frame = frames[-1]
    if frame is None:
        return ""
    return _("at {file}:{line}: {code}", file=Path(frame.filename).name, line=frame.lineno,
             code=(frame.line or '').strip())


def _at(exc: BaseException, learner_file: Path | None, fn: Any) -> list[str]:
    """The location line of a verdict (indented), or none when there is no frame to show."""
    where = _learner_frame(exc, learner_file, fn)
    return [f"  {where}"] if where else []


def _tensors(values: Any) -> list[torch.Tensor]:
    if isinstance(values, torch.Tensor):
        return [values]
    if isinstance(values, (tuple, list)):
        return [t for v in values for t in _tensors(v)]
    if isinstance(values, dict):
        return [t for v in values.values() for t in _tensors(v)]
    return []


ExceptionSlugger = Callable[[BaseException], "str | None"]


def call(
    fn: Callable[..., Any],
    *args: Any,
    what: str,
    on: str,
    forbidden: Sequence[str] = (),
    learner_file: Path | None = None,
    exception_slugs: ExceptionSlugger | None = None,
    printed: PrintedOutput | None = None,
    **kwargs: Any,
) -> Any:
    """Call learner code ``fn(*args, **kwargs)`` and return its result, or fail with a verdict.

    ``what`` names the call for the learner (``"scaled_dot_product_attention"``), ``on``
    describes the input. ``exception_slugs`` maps a characteristic exception to a slug.
    What the code prints goes to ``printed`` (counted, not shown).
    """
    inputs = _tensors(args) + _tensors(kwargs)
    before = [(t, t._version, t.detach().clone()) for t in inputs]
    printed = printed if printed is not None else PrintedOutput()
    try:
        with (_time_limit(CALL_TIME_LIMIT_S), _forbid(forbidden),
              contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed)):
            result = fn(*args, **kwargs)
    except NotImplementedError as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        if message and not SKELETON_MESSAGE.fullmatch(message):  # the README line says it
            text = _("not implemented yet: {what} raises NotImplementedError ({message})",
                     what=what, message=message)
        else:
            text = _("not implemented yet: {what} raises NotImplementedError", what=what)
        raise NotImplementedYet(text) from None
    except ForbiddenCall as exc:
        lines = [checked_line(what, on), *mistake_lines(exc.slug),
                 "  " + _("your code called {name}, which this kata forbids", name=exc.args[0]),
                 *_at(exc, learner_file, fn)]
        raise GradingFailure("\n".join(lines), slug=exc.slug) from None
    except LearnerTimeout:
        raise TimedOut(
            checked_line(what, on) + "\n  "
            + _("it did not finish within {seconds} s (an endless loop, a sleep, or a huge "
                "computation?)", seconds=f"{CALL_TIME_LIMIT_S:g}")
        ) from None
    except SystemExit as exc:
        raise GradingFailure("\n".join([
            checked_line(what, on),
            "  " + _("your code called sys.exit({code}); return a value instead",
                     code=repr(exc.code)),
            *_at(exc, learner_file, fn)])) from None
    except RecursionError as exc:
        raise GradingFailure("\n".join([
            checked_line(what, on), "  " + _("it recursed without end"),
            *_at(exc, learner_file, fn)])) from None
    except Exception as exc:  # learner code may raise anything
        slug = exception_slugs(exc) if exception_slugs else None
        first = (str(exc).strip().splitlines() or [""])[0]
        if len(first) > 200:
            first = first[:197] + "..."
        lines = [checked_line(what, on)]
        if slug:
            lines += mistake_lines(slug)
        lines += ["  " + _("your code raised {error}: {message}", error=type(exc).__name__,
                           message=first),
                  *_at(exc, learner_file, fn)]
        raise GradingFailure("\n".join(lines), slug=slug) from None
    for tensor, version, copy in before:
        changed = tensor._version != version or not torch.equal(
            torch.nan_to_num(tensor.detach()), torch.nan_to_num(copy)
        )
        if changed:
            name = _input_names(fn, args, kwargs).get(id(tensor))
            which = (f"`{name}`" if name
                     else _("an input tensor {shape}", shape=tuple(tensor.shape)))
            raise GradingFailure(
                checked_line(what, on) + "\n  "
                + _("it modified {which} in place; leave inputs untouched (work on new tensors, "
                    "avoid in-place ops like masked_fill_ or +=)", which=which)
            )
    return result
