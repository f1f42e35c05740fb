"""Verdicts on functions that return a count (parameters, FLOPs, bytes): the int expected,
the learner's number read even when its type is wrong, and each slip's value as a Suspect.
Shared by the graders of katas 07 (flops) and 13 (gqa)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Iterable

import torch

from graders.core.compare import sequence_pictures
from graders.core.i18n import N_, _
from graders.core.mistakes import Suspect, identify
from graders.core.report import describe_value, verdict


# A variant of the count: (slug, what the mistake would give) on the current input.
Variant = tuple[str, Fraction]


def int_suspects(variants: Iterable[Variant]) -> list[Suspect]:
    """One Suspect per value a slip would give on this input. A fractional value (the slip
    is not defined for this input) never equals an int; graders.core.mistakes.identify drops
    values equal to the answer and values that two different slips give alike."""
    return [Suspect(slug, predict=lambda v=value: Fraction(v)) for slug, value in variants]


def as_integer(value: Any) -> int | None:
    """The integer a learner's number stands for (an integral float or one-element tensor),
    so that a slip is still named when the type is wrong too; None if there is none."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def type_advice(value: Any) -> str:
    if isinstance(value, float):
        return _("return a plain int: a float holds integers exactly only up to 2**53; use "
                 "integer arithmetic (// rather than /)")
    if isinstance(value, torch.Tensor):
        return _("return a plain int, not a tensor: compute with Python ints (or call .item())")
    return _("return a plain int")


def ratio_line(got: int, expected: int) -> str:
    """How far off, and by which simple factor when there is one."""
    difference = f"{got - expected:+,}"
    if expected:
        ratio = Fraction(got, expected)
        if ratio > 0 and ratio.numerator <= 8 and ratio.denominator <= 8:
            return _("got - expected = {difference} (got = expected * {ratio})",
                     difference=difference, ratio=ratio)
    return _("got - expected = {difference}", difference=difference)


# An int off by a hair of a huge answer: the rounding of a float somewhere along the way.
NEAR_MISS = Fraction(1, 2**40)


FLOAT_NOTE = N_("is a float involved? above 2**53 a float cannot hold every integer; keep to ints")


def expect_int(got: Any, expected: int, check: str, on: str,
               suspects: Iterable[Suspect] = ()) -> None:
    """Fail with a verdict unless ``got`` is the int ``expected``; name the slip if a suspect
    predicts ``got`` exactly."""
    number = as_integer(got)
    slug = identify(number, expected, list(suspects), 0.0, 0.0) if number is not None else None
    if isinstance(got, bool) or not isinstance(got, int):
        tensor = isinstance(got, torch.Tensor)
        if number == expected and not isinstance(got, bool):
            # Not a wrong number: say so first, so that 31248.0 does not read as a miss.
            raise verdict(check, on, [
                _("right value, wrong type: expected the int {expected}, got a tensor {value}",
                  expected=f"{expected:,}", value=describe_value(got)) if tensor
                else _("right value, wrong type: expected the int {expected}, got the {type} "
                       "{value}", expected=f"{expected:,}", type=type(got).__name__,
                       value=describe_value(got)), type_advice(got)])
        got_line = (_("got a tensor {value}: {advice}", value=describe_value(got),
                      advice=type_advice(got)) if tensor
                    else _("got {value}: {advice}", value=describe_value(got),
                           advice=type_advice(got)))
        raise verdict(check, on, [_("expected the int {expected}", expected=f"{expected:,}"),
                                  got_line], slug)
    if got == expected:
        return
    details = [_("expected {value}", value=f"{expected:,}"),
               _("got      {value}", value=f"{got:,}"), ratio_line(got, expected)]
    if expected and abs(Fraction(got - expected, expected)) <= NEAR_MISS:
        details.append(_(FLOAT_NOTE))
    failure = verdict(check, on, details, slug)
    failure.pictures = sequence_pictures([f"{expected:,}"], [f"{got:,}"], [True], of=check)
    raise failure
