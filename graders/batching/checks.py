"""Grader for kata 25: iteration-level scheduling over a packed, ragged batch.

:func:`reference` is the kata's reference with one switch per catalogued mistake; a check
compares the learner's output with it and, on a mismatch, tries each mistake's switch to
name the one the learner made.
"""

from __future__ import annotations

import pytest
import torch

from graders.core.compare import expect_close
from graders.core.i18n import N_, _
from graders.core.implementation import Implementation
from graders.core.mistakes import Suspect
from graders.core.report import describe_inputs, title

__all__ = ["test_batching"]

# A switch of the reference -> the catalogued mistake it reproduces.
MISTAKE_OF: dict[str, str] = {}


def reference(x: torch.Tensor, mistake: str | None = None) -> torch.Tensor:
    """The stub's placeholder task (the identity): replace it with the kata's reference."""
    return x.clone()


def suspects(x: torch.Tensor) -> list[Suspect]:
    return [Suspect(slug, lambda switch=switch: reference(x, switch))
            for switch, slug in MISTAKE_OF.items()]


@pytest.mark.core
@title(N_("batching against its reference"))
def test_batching(impl: Implementation) -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 3, dtype=torch.float64)
    on = describe_inputs(x=x)
    got = impl.call(impl.attr("batching"), x.clone(), what="batching", on=on)
    expect_close(got, reference(x), _("{function} against its reference", function="batching"),
                 on, suspects(x))
