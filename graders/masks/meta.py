"""Kata 04_masks (Causal, padding and merged masks).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES) and its quiz (QUESTIONS). Imports
nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

from graders.core.kata import ATTENTION_BUILTINS, Kata, Mistake
from graders.core.quizzes import CHOICE, INTEGER, Question

KATA = Kata(
    id="04",
    name="04_masks",
    file="masks.py",
    title="Causal, padding and merged masks",
    track="foundations",
    difficulty="medium",
    target_minutes=20,
    prerequisites=("01", "02"),
    mistakes=(
        "mask-inverted",
        "padding-mask-head-order",
        "causal-diagonal",
        "causal-mask-transposed",
        "mask-and-instead-of-or",
        "float-mask-as-bool",
    ),
    forbidden=ATTENTION_BUILTINS,
    hints=(
        "Everything ends up as one additive float mask: 0 where attention is allowed, "
        "-inf where it is blocked. For each function, ask: which positions are blocked, "
        "and in which layout do they have to line up with the scores?",
        "Causal: key j is blocked for query i when j > i - the diagonal stays open. "
        "Padding: position t of a sequence of length L is padded when t >= L. Merging: a "
        "position is blocked if *either* mask blocks it (add the -inf masks, or | the "
        "bools); a float attn_mask's values are kept and added, not turned into yes/no. "
        "Padding is per batch element: expand (b, m) to batch-major rows (b*h, 1, m) - "
        "row i*h + j is batch i. Build every new tensor on the device of the masks you "
        "were given.",
        "padded = torch.arange(max_len, device=lengths.device)[None, :] >= lengths[:, None]   # (b, max_len)\n"
        "pad = pad.repeat_interleave(num_heads, dim=0).unsqueeze(1)   # (b, m) -> (b*h, 1, m): row i*h + j\n"
        "# causal: triu(diagonal=1) keeps the diagonal open. merge: both masks as additive\n"
        "# floats in `dtype` (a float mask keeps its values), added: (b*h, n, m)",
    ),
)


# The mistakes only this kata's grader names (shared ones: graders.core.catalogue).
MISTAKES = (
    Mistake("padding-mask-head-order",
            "The key padding mask was repeated over heads in the wrong order, so heads "
            "got another batch element's padding.",
            "Rows are batch-major (i*h + j): use repeat_interleave(num_heads, dim=0), or "
            "view (b, 1, 1, m) -> expand (b, h, 1, m) -> reshape (b*h, 1, m)."),
    Mistake("mask-and-instead-of-or",
            "The masks were combined with AND: a position must be blocked when *either* "
            "mask blocks it.",
            "Combine bool masks with |, or add their -inf/0 float forms."),
    Mistake("float-mask-as-bool",
            "A float attn_mask was treated as a yes/no mask; its values must be added to "
            "the logits.",
            "Only a torch.bool mask becomes -inf/0; a float mask is added as it is."),
)


# The interviewer's follow-up questions: the notebook's quiz and `kata quiz`.
QUESTIONS = (
    Question(
        "How many entries of `causal_mask(4)` are -inf?",
        4 * 3 // 2, INTEGER,
        "Query i may see keys 0..i, so the blocked entries are those strictly above the "
        "diagonal: 3 + 2 + 1 + 0 = 6 = n(n-1)/2."),
    Question(
        "A padding mask (b, m) with b = 2 becomes (b·h, 1, m) for h = 3 heads. Row 4 "
        "belongs to which batch element?",
        4 // 3, INTEGER,
        "Rows are batch-major, row i·h + j = batch i, head j: row 4 = 1·3 + 1 is batch 1, "
        "head 1 (repeat_interleave(h, dim=0) gives rows 0,0,0,1,1,1)."),
    Question(
        "The same (2, m) mask expanded with `.repeat(3, 1)` instead: which batch element's "
        "padding lands in row 1?",
        1 % 2, INTEGER,  # .repeat tiles the batch: row r is batch r % b
        ".repeat tiles the whole mask: rows 0,1,0,1,0,1. Row 1 should be batch 0, head 1, "
        "but it gets batch 1's padding. The shape is right and nothing raises: only the "
        "numbers are wrong, which is why the order of b and h matters."),
    Question(
        "Merging a bool padding mask with a bool attention mask, a position is blocked when…",
        "B", CHOICE,
        "A key is unavailable if either reason holds: it is padding, or the attention "
        "mask forbids it. Bool masks combine with |; float masks add (-inf + 0 = -inf).",
        choices=("both masks block it", "either mask blocks it",
                 "the attention mask blocks it", "the padding mask blocks it")),
    Question(
        "`scores` is float16. What does `scores.masked_fill(mask, -1e9)` do?",
        "C", CHOICE,
        "-1e9 does not fit in float16 (largest magnitude 65504), and masked_fill refuses a "
        "value it cannot convert: it raises. A cast would have given -inf. Code that wants a "
        "finite 'very negative' value uses torch.finfo(scores.dtype).min; this kata uses "
        "-inf.",
        choices=("fills -1e9", "fills -inf", "raises an error",
                 "fills -65504, float16's most negative value")),
)
