"""The randomness rules of every kata that samples (16, 21), checked one way.

The contracts say: randomness comes only from the ``generator`` given, so the same
generator state reproduces the draws whatever the global RNG's state, the global RNG is
left untouched and the generator advances; ``generator=None`` uses the global RNG, so
``torch.manual_seed`` reproduces the draws. Draws are never compared with a reference seed
for seed: any correct sampler consumes the generator in its own way.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from graders.core.inputs import generator
from graders.core.report import GradingFailure, verdict
from graders.core.i18n import _


def ignores_generator(what: str, on: str, detail: str) -> GradingFailure:
    return verdict(what, on, [detail], "sampling-ignores-generator")


def expect_generator_rules(draw: Callable[[torch.Generator | None], Any], *, seed: int,
                           what: str, what_global: str, on: str) -> None:
    """``draw(g)`` runs the learner with generator ``g`` (None: the global RNG) and returns
    its draws in a form ``==`` compares (a list). ``what`` names the call with a generator,
    ``what_global`` the call without; the caller's RNG states are restored afterwards."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1)
        global_state = torch.get_rng_state()
        g = generator(seed)
        g_state = g.get_state()
        first = draw(g)
        global_moved = not torch.equal(torch.get_rng_state(), global_state)
        advanced = not torch.equal(g.get_state(), g_state)
        torch.manual_seed(2)
        if draw(generator(seed)) != first:
            raise ignores_generator(what, on, _(
                "two generators in the same state gave different draws once the global RNG "
                "was seeded differently (torch.manual_seed(1), then 2): the draws come from "
                "the global RNG"))
        if global_moved:
            raise ignores_generator(what, on, _(
                "the global RNG's state changed during the call although a generator was "
                "given: every random number must come from the generator"))
        if not advanced:
            raise ignores_generator(what, on, _(
                "the generator's state did not change: the draws did not use it"))
        runs = []
        for global_seed in (3, 3, 4):
            torch.manual_seed(global_seed)
            runs.append(draw(None))
    if runs[0] != runs[1]:
        raise verdict(what_global, on, [_("torch.manual_seed(3) twice gave different draws: "
                                          "with generator=None, take the randomness from the "
                                          "global RNG (pass generator=None on)")])
    if runs[0] == runs[2]:
        raise verdict(what_global, on, [_("torch.manual_seed(3) and torch.manual_seed(4) gave "
                                          "the same draws: with generator=None the draws must "
                                          "come from the global RNG")])
