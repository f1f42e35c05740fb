"""Kata 12_rope (Rotary position embedding (RoPE)).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES) and its quiz (QUESTIONS). Imports
nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

from graders.core.kata import Kata, Mistake
from graders.core.quizzes import CHOICE, INTEGER, NUMBER, Question

KATA = Kata(
    id="12",
    name="12_rope",
    file="rope.py",
    title="Rotary position embedding (RoPE)",
    track="models",
    difficulty="medium",
    target_minutes=20,
    prerequisites=("05",),
    mistakes=(
        "rope-pairs-mismatch",
        "rope-wrong-frequency",
        "rope-rotation-reversed",
        "rope-positions-ignored",
        "rope-cos-sin-swapped",
    ),
    forbidden=(),
    hints=(
        "RoPE turns each pair of features into a point in the plane and rotates it by an "
        "angle that grows with the position. Decide three things: which features form a "
        "pair, how fast pair i turns, and which way is positive.",
        "Pair i turns at frequency base^(-2i/d): angle = position * that, computed in "
        "float64 and cast to float32. The rotation is (x1 cos θ - x2 sin θ, x1 sin θ + "
        "x2 cos θ). By default pair i is (x[i], x[i + d/2]) - split x into halves; with "
        "interleaved=True it is (x[2i], x[2i+1]) - take x[..., 0::2] and x[..., 1::2] and "
        "put them back interleaved. Use the positions given: (n,) is shared by the batch, "
        "(b, n) has one row per batch element (add a heads axis to broadcast).",
        "pair = torch.arange(head_dim // 2, dtype=torch.float64, device=positions.device)\n"
        "angles = positions.to(torch.float64)[..., None] * base ** (-2 * pair / head_dim)   # (..., d/2), float64\n"
        "# apply_rope: (n, d/2), or (b, 1, n, d/2) for (b, n) positions: add the heads axis\n"
        "x1, x2 = (x[..., 0::2], x[..., 1::2]) if interleaved else x.chunk(2, dim=-1)   # (..., d/2) each",
    ),
)


# The mistakes only this kata's grader names (shared ones: graders.core.catalogue).
MISTAKES = (
    Mistake("rope-cos-sin-swapped",
            "cos and sin are swapped in the rotation.",
            "x1' = x1 cos θ - x2 sin θ, x2' = x1 sin θ + x2 cos θ: at position 0 (θ = 0) the "
            "vector must come out unchanged."),
)


# --- the formulas behind this quiz's numbers (the self-tests check them against PyTorch) ---

def rope_angle(position: int, pair: int, head_dim: int, base: float = 10000.0) -> float:
    """RoPE's angle for pair i at position p: p * base^(-2i / head_dim)."""
    return position * base ** (-2 * pair / head_dim)


# The interviewer's follow-up questions: the notebook's quiz and `kata quiz`.
QUESTIONS = (
    Question(
        "With head_dim = 64 and base = 10000, what is the angle (in radians) of the last "
        "pair, i = 31, at position 10000?",
        rope_angle(10000, 31, 64), NUMBER,
        "angle = p · base^(−2i/d) = 10000 · 10000^(−62/64) = 10000^(2/64) ≈ 1.334. The "
        "slowest pair turns by barely 1.3 radians over ten thousand positions, while pair 0 "
        "turns by one radian per position: together they tell near and far apart.",
        rel_tolerance=0.01),
    Question(
        "With interleaved=False (rotate half) and head_dim = 8, feature 1 is rotated "
        "together with which feature?",
        1 + 8 // 2, INTEGER,
        "Pair i is (x[i], x[i + d/2]): feature 1 pairs with feature 5. With "
        "interleaved=True it would pair with feature 0 (pairs (2i, 2i + 1))."),
    Question(
        "A query at position 7 and a key at position 3 give score s. Both move 100 "
        "positions on, to 107 and 103. The new score is…",
        "A", CHOICE,
        "R(mθ)q · R(nθ)k = q · R((n − m)θ)k: only n − m = −4 matters, so the score is "
        "unchanged. Absolute sinusoidal encodings (kata 05) added to the input do not have "
        "this property exactly.",
        choices=("exactly s", "s rotated by 100 θ", "s times cos(100 θ)",
                 "unrelated to s")),
    Question(
        "How large is one float32 step (the gap to the next float32 number) at an angle of "
        "10⁶ radians?",
        2.0 ** (19 - 23), NUMBER,
        "10⁶ lies between 2¹⁹ and 2²⁰, where float32's 24-bit significand leaves steps of "
        "2^(19−23) = 0.0625 rad. Rounding the exact angle costs at most half a step; "
        "computing it in float32 costs a step or more, which is why the angles are computed "
        "in float64 and rounded once.",
        rel_tolerance=0.01),
    Question(
        "RoPE rotates the queries and the keys. Why not the values too?",
        "B", CHOICE,
        "Two tokens meet only in the score q_m · k_n, and rotating both makes it depend "
        "on m − n alone. The values are not compared, only averaged with the weights: a "
        "value rotated by its own angle nθ would bring the key's absolute position into "
        "the output, so moving the whole sequence 100 positions on would change the output "
        "— the very property RoPE is built to have would be lost. Rotations keep norms and "
        "do not touch the weights, so neither is the reason.",
        choices=("the values have no pairs of features to rotate",
                 "position should enter only the scores, as m − n; rotated values would "
                 "carry absolute positions into the output",
                 "rotating the values would change their norms",
                 "the attention weights would no longer sum to 1")),
)
