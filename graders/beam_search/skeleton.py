"""Kata 17: beam search over a next-token step function.

Read README.md in this folder, fill in the function below, then run
    pytest katas/17_beam_search
"""

from __future__ import annotations

from typing import Callable

import torch  # noqa: F401
from torch import Tensor


def beam_search(step_fn: Callable[[Tensor], Tensor], bos_idx: int, eos_idx: int,
                beam_size: int, max_len: int,
                length_penalty: float = 1.0) -> list[tuple[list[int], float]]:
    """Beam search from [bos_idx]: the finished hypotheses (at most beam_size), best first.

    step_fn(tokens) takes a LongTensor (k, t) of k prefixes of t tokens, each starting with
    bos_idx, and returns (k, V) next-token log-probabilities (float64 or float32). Call it
    once per step with every live hypothesis stacked; call j gets prefixes of j + 1 tokens.
    Keep the top beam_size - len(finished) of all k * V candidates (score = the parent's
    cumulative log-probability + the token's); a kept candidate ending in eos_idx is
    finished. Stop when beam_size hypotheses are finished or the sequences have max_len
    tokens (bos counted); the live ones then finish as they stand.

    Returns [(tokens, score), ...]: tokens a list of Python ints (bos first, eos last where
    reached), score = cumulative log-probability / n ** length_penalty (n = the tokens after
    bos) as a Python float, sorted best first.
    """
    raise NotImplementedError("see katas/17_beam_search/README.md")
