"""Kata 05's twin: the sinusoidal table in float64 with one switch per catalogued mistake (the
tables its mistakes give), and how a table is laid along the sequence or the batch.
"""

from __future__ import annotations

import math
from typing import Callable

import torch
from torch import Tensor


# The table is built in torch's default dtype, float32 (see the contract).
TABLE_DTYPE = torch.float32


# --------------------------------------------------------------------------- references


def _default_inv_freq(base: float, d_model: int) -> Callable[[Tensor, Tensor], Tensor]:
    return lambda pair, column: base ** (-2.0 * pair / d_model)


def reference_table(
    max_len: int,
    d_model: int,
    base: float = 10000.0,
    *,
    first_position: int = 0,
    inv_freq: Callable[[Tensor, Tensor], Tensor] | None = None,
    layout: str = "interleaved",
) -> tuple[Tensor, Tensor]:
    """The table (max_len, d_model) in float64 and the angle behind each value.

    Switches for the catalogued mistakes: ``first_position`` (positions-from-one),
    ``inv_freq(pair, column)`` giving each column's w (exponent-precedence,
    wrong-frequency), and ``layout``: "interleaved" (correct: sin on even columns),
    "swapped" (cos on even columns), "halves-ceil" / "halves-floor" (sin on the first
    ceil(d/2) or floor(d/2) columns, cos on the rest, each half counting pairs from 0).
    """
    column = torch.arange(d_model, dtype=torch.float64)
    if layout in ("interleaved", "swapped"):
        pair = torch.div(column, 2, rounding_mode="floor")
        sin_columns, cos_columns = slice(0, None, 2), slice(1, None, 2)
        if layout == "swapped":
            sin_columns, cos_columns = cos_columns, sin_columns
    elif layout in ("halves-ceil", "halves-floor"):
        n_sin = (d_model + 1) // 2 if layout == "halves-ceil" else d_model // 2
        pair = torch.where(column < n_sin, column, column - n_sin)
        sin_columns, cos_columns = slice(0, n_sin), slice(n_sin, None)
    else:
        raise ValueError(f"unknown layout {layout!r}")
    inv_freq = inv_freq or _default_inv_freq(base, d_model)
    position = torch.arange(first_position, first_position + max_len, dtype=torch.float64)
    angle = position[:, None] * inv_freq(pair, column)[None, :]
    table = torch.empty_like(angle)
    table[:, sin_columns] = torch.sin(angle[:, sin_columns])
    table[:, cos_columns] = torch.cos(angle[:, cos_columns])
    return table, angle


Table = tuple[Tensor, Tensor]  # (values, angles), float64 (max_len, d_model)


def mistaken_tables(max_len: int, d_model: int, base: float) -> list[tuple[str, Callable[[], Table]]]:
    """(slug, make) for every way of writing each table mistake that we model; ``make()``
    builds that table and its angles (only when a learner's answer needs explaining)."""
    d, ln = d_model, math.log(base)

    def table(slug: str, **switches) -> tuple[str, Callable[[], Table]]:
        return slug, lambda: reference_table(max_len, d, base, **switches)

    return [
        # base ** 2*i / d, with i the pair index, as a divisor or inlined: p / base**2 * i / d.
        table("exponent-precedence", inv_freq=lambda i, j: i / (d * base**2)),
        table("exponent-precedence", inv_freq=lambda i, j: d / (base**2 * i)),
        # base ** two_i / d, with two_i = arange(0, d, 2), as a divisor or inlined.
        table("exponent-precedence", inv_freq=lambda i, j: base ** (-2.0 * i) / d),
        table("exponent-precedence", inv_freq=lambda i, j: d * base ** (-2.0 * i)),
        table("sin-cos-swapped", layout="swapped"),
        table("halves-not-interleaved", layout="halves-ceil"),
        table("halves-not-interleaved", layout="halves-floor"),
        table("wrong-frequency", inv_freq=lambda i, j: base ** (-i / d)),  # i/d
        table("wrong-frequency", inv_freq=lambda i, j: base ** (-j / d)),  # column index
        table("wrong-frequency", inv_freq=lambda i, j: base ** (-2.0 * j / d)),  # 2 * column
        table("wrong-frequency", inv_freq=lambda i, j: base ** (-4.0 * i / d)),
        table("wrong-frequency", inv_freq=lambda i, j: base ** (2.0 * i / d)),  # inverted
        table("wrong-frequency", inv_freq=lambda i, j: torch.ones_like(i)),  # 2*i // d == 0
        table("wrong-frequency", inv_freq=lambda i, j: torch.exp(-2.0 * i / d * ln / math.log(10))),
        table("positions-from-one", first_position=1),
    ]


def along_sequence(table: Tensor, x: Tensor, batch_first: bool) -> Tensor:
    """table[:seq] lined up with x's sequence axis and broadcast to x's shape."""
    seq_len = x.size(1) if batch_first else x.size(0)
    rows = table[:seq_len]
    return (rows[None] if batch_first else rows[:, None]).expand(x.shape)


def along_batch(table: Tensor, x: Tensor, batch_first: bool) -> Tensor:
    """The pe-wrong-axis mistake: row b of the table added to batch element b."""
    batch = x.size(0) if batch_first else x.size(1)
    rows = table[:batch]
    return (rows[:, None] if batch_first else rows[None]).expand(x.shape)
