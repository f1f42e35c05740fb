"""Kata 05_positional_encoding (Sinusoidal positional encoding).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES) and its quiz (QUESTIONS). Imports
nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

import math

from graders.core.kata import Kata, Mistake
from graders.core.quizzes import CHOICE, INTEGER, NUMBER, Question

KATA = Kata(
    id="05",
    name="05_positional_encoding",
    file="positional_encoding.py",
    title="Sinusoidal positional encoding",
    track="foundations",
    difficulty="easy",
    target_minutes=15,
    prerequisites=(),
    mistakes=(
        "exponent-precedence",
        "sin-cos-swapped",
        "halves-not-interleaved",
        "wrong-frequency",
        "positions-from-one",
        "pe-not-buffer",
        "pe-wrong-axis",
        "dropout-in-eval",
    ),
    forbidden=(),
    hints=(
        "Build the table once as (max_len, d_model): positions down the rows, one "
        "frequency per pair of columns. Which columns get sin and which get cos?",
        "The angle for position p and column pair i is p / base^(2i / d_model) - mind the "
        "parentheses on the exponent. Sin goes in the even columns (0::2), cos in the odd "
        "ones (1::2), interleaved, not in two halves; an odd d_model has one cos column "
        "fewer. Positions start at 0. Keep the table with register_buffer('pe', ...) and "
        "add pe[:seq] along the sequence axis of x (axis 0, or 1 with batch_first).",
        "# pos (max_len, 1) = 0, 1, 2, ...; two_i (ceil(d/2),) = 0, 2, 4, ...; pe (max_len, d_model)\n"
        "angles = pos / base ** (two_i / d_model)        # (max_len, ceil(d/2))\n"
        "pe[:, 0::2] = angles.sin()                      # even columns\n"
        "pe[:, 1::2] = angles[:, : d_model // 2].cos()   # odd columns: one fewer for an odd d_model",
    ),
)


# The mistakes only this kata's grader names (shared ones: graders.core.catalogue).
MISTAKES = (
    Mistake("exponent-precedence",
            "The exponent lost its parentheses: base ** 2*i / d_model is (base**2)*i/d_model, "
            "not base**(2i/d_model).",
            "Divide by base ** (2 * i / d_model), or multiply by its inverse, "
            "exp(-(2 * i / d_model) * math.log(base))."),
    Mistake("sin-cos-swapped",
            "sin and cos are swapped: even columns take sin, odd columns take cos.",
            "pe[:, 0::2] = sin(angles); pe[:, 1::2] = cos(angles)."),
    Mistake("halves-not-interleaved",
            "sin went to the first half of the columns and cos to the second; they are "
            "interleaved.",
            "Assign to pe[:, 0::2] and pe[:, 1::2], not pe[:, :d/2] and pe[:, d/2:]."),
    Mistake("wrong-frequency",
            "The frequencies are off: column pair i has angle p / base^(2i/d_model) for "
            "both its sin and its cos.",
            "Use the pair index i = column // 2 for both columns of a pair, and 2i in the "
            "exponent."),
)


# The interviewer's follow-up questions: the notebook's quiz and `kata quiz`.
QUESTIONS = (
    Question(
        "What is PE[0, 1], position 0, column 1?",
        1, INTEGER,
        "Odd columns are cosines, and at position 0 every angle is 0: cos 0 = 1. "
        "(Every even column at position 0 is sin 0 = 0.)"),
    Question(
        "With d_model = 5, how many columns hold a sine?",
        math.ceil(5 / 2), INTEGER,
        "The sines sit in the even columns 0, 2, 4 and the cosines in 1, 3: an odd width "
        "has one more sine than cosines."),
    Question(
        "The fastest column pair (i = 0) has angle p / base⁰ = p. Its wavelength, in "
        "positions, is about…",
        2 * math.pi, NUMBER,
        "sin(p) repeats every 2π ≈ 6.28 positions. The wavelengths grow geometrically "
        "up to 2π · base^((d-2)/d) for the last pair, so nearby and distant positions are "
        "both told apart.",
        rel_tolerance=0.01),
    Question(
        "Why does the module keep the table with `register_buffer` rather than as an "
        "`nn.Parameter` or a plain attribute?",
        "B", CHOICE,
        "A buffer is part of the module's state: .to(device) and .half() move it and it "
        "is saved in the state_dict, but it is not a parameter, so the optimiser never "
        "updates it. A plain tensor attribute would stay behind on the CPU.",
        choices=("so the optimiser can learn it",
                 "so it moves with .to() and is saved, without being trained",
                 "so it is recomputed on every forward",
                 "buffers are faster to add")),
    Question(
        "With d_model = 8 and base = 10000, what is the frequency ω of the last column pair "
        "(i = 3)?",
        10000.0 ** (-6 / 8), NUMBER,
        "ω_i = base^(-2i/d_model) = 10000^(-6/8) = 0.001. The last frequency is "
        "base^(-(d_model-2)/d_model): near 1/base only when d_model is large "
        "(1.04e-4 for 512).",
        rel_tolerance=0.01),
    Question(
        "Token embeddings start with a standard deviation of 1/√512 (d_model = 512) and are "
        "multiplied by √d_model before the table is added. What is their standard deviation "
        "then?",
        1.0, NUMBER,
        "1/√512 · √512 = 1: the same size as the table's sines and cosines (between -1 and 1), "
        "so the positions do not drown the tokens. Unscaled, the embeddings would be about "
        "15 times smaller than the positions.",
        rel_tolerance=0.05),
    Question(
        "RoPE rotates a query at position m by m·θᵢ and a key at position n by n·θᵢ, pair by "
        "pair. Their dot product depends on…",
        "B", CHOICE,
        "Rotating q by mθ and k by nθ leaves q·k depending on the rotation between them, "
        "(m - n)θ: relative positions, with nothing added to the embeddings. It is applied to "
        "queries and keys in every layer, never to the values. (Kata 12.)",
        choices=("m + n", "m - n only (and the vectors q and k)", "m only",
                 "neither position")),
)
