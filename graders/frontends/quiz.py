"""The quiz at the end of each kata's notebook: an interviewer's follow-up questions, as data.

Each kata has 2-4 :class:`Question` s. ``notebooks/build.py`` turns them into the quiz cells
(the prompts in markdown, then an ``answers = {1: None, ...}`` cell that calls
:func:`quiz`), so the questions in a notebook cannot drift from the ones graded here.
Expected numbers are computed from the formulas below, not typed in; the self-tests check
them against PyTorch's own modules.

    >>> result = quiz("07", {1: 2362368, 2: None})   # prints one line per question
    >>> result.all_correct
    False
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass

from graders.core import registry

INTEGER, NUMBER, CHOICE = "integer", "number", "choice"  # the kinds of answer
CORRECT, WRONG, UNANSWERED = "correct", "wrong", "unanswered"


@dataclass(frozen=True)
class Question:
    prompt: str  # markdown, one paragraph
    answer: int | float | str  # an int (INTEGER), a float (NUMBER) or a letter (CHOICE)
    kind: str  # INTEGER | NUMBER | CHOICE
    reasoning: str  # revealed once the question has been answered
    choices: tuple[str, ...] = ()  # CHOICE only: the options, lettered A, B, C, ... in order
    rel_tolerance: float = 0.0  # NUMBER only: |given - answer| <= rel_tolerance * |answer|

    def __post_init__(self):
        if self.kind == CHOICE:
            assert self.answer in letters(len(self.choices)), (self.prompt, self.answer)
        if self.kind == NUMBER:
            assert self.rel_tolerance > 0, self.prompt

    @property
    def answer_format(self) -> str:
        """What the learner types, for the comment in the answers cell."""
        if self.kind == INTEGER:
            return "a whole number"
        if self.kind == NUMBER:
            return f"a number (within {self.rel_tolerance:.0%})"
        return "a letter: " + ", ".join(repr(letter) for letter in letters(len(self.choices)))

    def markdown(self, number: int) -> str:
        """The question as the notebook shows it: numbered, with its lettered options."""
        lines = [f"**{number}.** {self.prompt}"]
        lines += [f"   - **{letter}** {choice}"
                  for letter, choice in zip(letters(len(self.choices)), self.choices)]
        return "\n".join(lines)

    def judge(self, given) -> str:
        """CORRECT, WRONG or UNANSWERED (None, or an empty string)."""
        if given is None or (isinstance(given, str) and not given.strip()):
            return UNANSWERED
        if self.kind == CHOICE:
            return CORRECT if str(given).strip().upper() == self.answer else WRONG
        number = _as_number(given)
        if number is None:
            return WRONG
        if self.kind == INTEGER:
            return CORRECT if number == self.answer else WRONG
        return CORRECT if abs(number - self.answer) <= self.rel_tolerance * abs(self.answer) else WRONG


def letters(count: int) -> tuple[str, ...]:
    return tuple("ABCDEFGH"[:count])


def _as_number(given) -> float | None:
    """A learner's number: an int or float, or a string such as "1_050_624" or "6.28"."""
    if isinstance(given, bool):
        return None
    if isinstance(given, (int, float)):
        return given
    try:
        return float(str(given).replace(",", "").replace("_", "").strip())
    except ValueError:
        return None


# --- the formulas behind the numeric answers (the self-tests check them against PyTorch) ---

def mha_parameters(d_model: int, bias: bool = True) -> int:
    """nn.MultiheadAttention(d_model, h): W_q, W_k, W_v, W_o (d x d each) and four biases."""
    return 4 * d_model * d_model + (4 * d_model if bias else 0)


def encoder_layer_parameters(d_model: int, dim_feedforward: int) -> int:
    """nn.TransformerEncoderLayer: attention, two linears with bias, two LayerNorms (w and b)."""
    feed_forward = (d_model * dim_feedforward + dim_feedforward) + (dim_feedforward * d_model + d_model)
    norms = 2 * (2 * d_model)
    return mha_parameters(d_model) + feed_forward + norms


def projection_flops(seq_len: int, batch_size: int, d_model: int) -> int:
    """The q, k, v and output projections: four (l*b, d) @ (d, d) products, 2 FLOPs each MAC."""
    return 4 * 2 * seq_len * batch_size * d_model * d_model


def attention_matmul_flops(seq_len: int, batch_size: int, d_model: int) -> int:
    """Q K^T and weights @ V: each 2*l*l*d per batch element, summed over the heads."""
    return 2 * 2 * seq_len * seq_len * batch_size * d_model


def self_attention_flops(seq_len: int, batch_size: int, d_model: int) -> int:
    """8*l*b*d^2 + 4*l^2*b*d."""
    return projection_flops(seq_len, batch_size, d_model) + attention_matmul_flops(seq_len, batch_size, d_model)


MiB = 2**20

QUIZZES: dict[str, tuple[Question, ...]] = {
    "01_attention": (
        Question(
            "The entries of a query q and a key k are independent, with mean 0 and variance 1, "
            "and d_k = 64. What is the variance of the dot product q·k?",
            64, INTEGER,
            "q·k is a sum of 64 independent products q_i k_i, each with mean 0 and variance "
            "E[q_i²] E[k_i²] = 1, so the variance is 64 (a standard deviation of 8). "
            "Dividing by √d_k = 8 brings it back to 1 and keeps the softmax out of saturation."),
        Question(
            "The weights have shape (b, n, m): n queries, m keys. Which of these is all ones?",
            "B", CHOICE,
            "The softmax runs over the keys (dim=-1): every query spreads a total weight of 1 "
            "over the m keys, so summing over the last axis gives ones of shape (b, n).",
            choices=("`weights.sum(dim=-2)`", "`weights.sum(dim=-1)`", "`weights.sum(dim=0)`",
                     "none of them")),
        Question(
            "A query whose keys are all blocked by the mask: what weights does this kata's "
            "contract give it?",
            "C", CHOICE,
            "Its scores are all -inf, and softmax(-inf, ..., -inf) is 0/0 = NaN, which would "
            "poison every later sum (and the gradients). The contract replaces that row with "
            "zeros, so the query's output is zeros.",
            choices=("NaN", "uniform, 1/m each", "all zero", "one-hot on the first key")),
        Question(
            "How many MiB does the (b, n, m) score matrix take in float32 with b = 8 and "
            "n = m = 1024?",
            8 * 1024 * 1024 * 4 // MiB, INTEGER,
            "8 · 1024 · 1024 scores × 4 bytes = 33,554,432 bytes = 32 MiB. It grows as n·m: "
            "doubling the sequence length quadruples it."),
    ),
    "02_heads": (
        Question(
            "x has shape (b, n, h·d) = (1, 2, 4) with h = 2 heads of width d = 2. After "
            "`x.reshape(1, 2, 2, 2)` read as (b, h, n, d), with no transpose, what does head 0 hold?",
            "B", CHOICE,
            "reshape keeps memory order, and the memory of x is token 0's four columns, then "
            "token 1's. So 'head 0' is both halves of token 0 and 'head 1' both halves of "
            "token 1: each head sees one token instead of its own slice of every token.",
            choices=("columns 0:2 of token 0 and columns 0:2 of token 1",
                     "columns 0:2 and 2:4 of token 0",
                     "columns 0 and 2 of both tokens",
                     "all of x")),
        Question(
            "Is `x.view(b, n, h, d).transpose(1, 2)` contiguous?",
            "B", CHOICE,
            "transpose swaps two strides without moving any data, so the result is a "
            "non-contiguous view. Calling .view on it to merge dimensions raises; use "
            ".reshape (which copies when it must) or .contiguous().view.",
            choices=("yes", "no")),
        Question(
            "In PyTorch's seq-first layout (b·h, n, d) with b = 4 and h = 8, which row holds "
            "batch element 2, head 5?",
            2 * 8 + 5, INTEGER,
            "The rows are batch-major: row i·h + j is batch i, head j, so 2·8 + 5 = 21. "
            "Head-major order (j·b + i = 22) is a different tensor that happens to have the "
            "same shape."),
    ),
    "03_mha": (
        Question(
            "How many parameters does `nn.MultiheadAttention(512, 8)` (with bias) have?",
            mha_parameters(512), INTEGER,
            "Four d × d matrices (W_q, W_k, W_v stacked in in_proj_weight, and out_proj) plus "
            "four bias vectors of length d: 4·512² + 4·512 = 1,048,576 + 2,048 = 1,050,624."),
        Question(
            "Going from 8 heads to 16 heads with the same embed_dim, the parameter count…",
            "C", CHOICE,
            "The heads are slices of the same d × d projections: more heads means narrower "
            "heads (d/h), not more weights.",
            choices=("doubles", "halves", "stays the same", "grows by embed_dim")),
        Question(
            "With embed_dim = 512 and 8 heads, the scores are divided by √x. What is x?",
            512 // 8, INTEGER,
            "Each head is an attention of width head_dim = 512 / 8 = 64, so its dot products "
            "have variance 64: divide by √64 = 8, not by √512."),
    ),
    "04_masks": (
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
    ),
    "05_positional_encoding": (
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
    ),
    "06_encoder_layer": (
        Question(
            "In Post-LN (`norm_first=False`, the original Transformer), the attention "
            "sub-layer computes…",
            "A", CHOICE,
            "Post-LN normalises after the residual sum: x = norm1(x + sa(x)). Pre-LN "
            "normalises the sub-layer's input and leaves the residual path untouched: "
            "x = x + sa(norm1(x)).",
            choices=("`x = norm1(x + sa(x))`", "`x = x + sa(norm1(x))`",
                     "`x = norm1(x) + sa(norm1(x))`", "`x = sa(norm1(x + x))`")),
        Question(
            "How many parameters does `nn.TransformerEncoderLayer(512, 8, dim_feedforward=2048)` "
            "have?",
            encoder_layer_parameters(512, 2048), INTEGER,
            "Attention 4·512² + 4·512 = 1,050,624; linear1 512·2048 + 2048 = 1,050,624; "
            "linear2 2048·512 + 512 = 1,049,088; two LayerNorms 2·(512 + 512) = 2,048. "
            "Total 3,152,384."),
        Question(
            "And `nn.TransformerEncoder` of 6 such layers (no final norm)?",
            6 * encoder_layer_parameters(512, 2048), INTEGER,
            "The encoder deep-copies the layer six times, so each layer has its own weights: "
            "6 · 3,152,384 = 18,914,304. If the six entries were the same module, the count "
            "would stay at 3,152,384 and the layers would share (and train) one set of weights."),
    ),
    "07_flops": (
        Question(
            "Parameters of multi-head attention with d = 768 and bias?",
            mha_parameters(768), INTEGER,
            "4d² + 4d: four d × d projections and four biases. 4·589,824 + 3,072 = 2,362,368."),
        Question(
            "FLOPs (2 per multiply-add, matmuls only) of self-attention with l = 2048 tokens, "
            "batch b = 1, d = 512?",
            self_attention_flops(2048, 1, 512), INTEGER,
            "Projections 8·l·b·d² = 8·2048·512² = 4,294,967,296; the two attention matmuls "
            "4·l²·b·d = 4·2048²·512 = 8,589,934,592. Total 12,884,901,888."),
        Question(
            "With d = 768, beyond what sequence length l do the attention matmuls (4l²bd) cost "
            "more than the projections (8lbd²)?",
            2 * 768, INTEGER,
            "4l²bd > 8lbd² ⇔ l > 2d = 1536. Below that the projections dominate; above it the "
            "quadratic term does."),
        Question(
            "Doubling the sequence length multiplies the attention-matmul FLOPs (4l²bd) by?",
            4, INTEGER,
            "The score matrix is l × l: attention is O(n²·d) in time and O(n²) in memory per "
            "head, while the projections grow only linearly in l."),
    ),
    "08_decoder_layer": (
        Question(
            "tgt is (n, b, d) = (10, 4, 512) and memory is (m, b, d) = (30, 4, 512). What shape "
            "does the cross-attention's output have?",
            "A", CHOICE,
            "The queries come from the target, so there is one output row per target position: "
            "(10, 4, 512). The memory's length only sets the number of keys each query weighs "
            "(the weights are (b, h, 10, 30)); it never reaches the output's shape, which is "
            "why the residual x + ca(x, memory) works.",
            choices=("(10, 4, 512)", "(30, 4, 512)", "(10, 30, 512)", "(4, 10, 30)")),
        Question(
            "With n = 10 and m = 30 as above, which shape must `memory_mask` have?",
            "C", CHOICE,
            "A mask has one row per query and one column per key. In the cross-attention the "
            "queries are the 10 target positions and the keys the 30 memory positions: "
            "(10, 30). tgt_mask is (10, 10), and memory_key_padding_mask (b, 30).",
            choices=("(30, 30)", "(10, 10)", "(10, 30)", "(30, 10)")),
        Question(
            "How many parameters does `nn.TransformerDecoderLayer(512, 8, dim_feedforward=2048)` "
            "have?",
            encoder_layer_parameters(512, 2048) + mha_parameters(512) + 2 * 512, INTEGER,
            "Kata 06's encoder layer (3,152,384) plus a second attention block, the "
            "cross-attention, 4·512² + 4·512 = 1,050,624, and a third LayerNorm, 2·512 = 1,024: "
            "4,204,032."),
        Question(
            "A target of length 6 is left-padded by 2 (positions 0 and 1 are padding) and the "
            "self-attention also gets the causal tgt_mask. How many of its 6 queries have "
            "every key blocked?",
            2, INTEGER,
            "Query i sees keys 0..i under the causal mask; for i = 0 and i = 1 those are all "
            "padding. Their attention weights are all zero by this repository's contract (the "
            "attention output is out_proj's bias), never NaN. Right-padding never does this: "
            "key 0 is always real."),
    ),
}


@dataclass(frozen=True)
class QuizResult:
    kata: str
    outcomes: tuple[str, ...]  # CORRECT | WRONG | UNANSWERED, one per question

    @property
    def all_correct(self) -> bool:
        return all(outcome == CORRECT for outcome in self.outcomes)

    @property
    def score(self) -> int:
        return sum(outcome == CORRECT for outcome in self.outcomes)

    def __repr__(self) -> str:
        return f"QuizResult({self.kata}: {self.score}/{len(self.outcomes)} correct)"


def questions(kata_key: str) -> tuple[Question, ...]:
    return QUIZZES[registry.get(kata_key).name]


def answer_key(kata_key: str) -> dict[int, int | float | str]:
    """The right answers, numbered from 1 like the notebook's ``answers`` cell."""
    return {number: q.answer for number, q in enumerate(questions(kata_key), start=1)}


def quiz(kata_key: str, answers: dict[int, object]) -> QuizResult:
    """Grade ``answers`` (question number -> answer, None when unanswered); print one verdict
    per question, with the reasoning for each answered one. Never raises on a wrong answer."""
    kata = registry.get(kata_key)
    outcomes = []
    for number, question in enumerate(questions(kata.id), start=1):
        given = answers.get(number)
        outcome = question.judge(given)
        outcomes.append(outcome)
        if outcome == UNANSWERED:
            print(f"{number}. unanswered ({question.answer_format})")
            continue
        verdict = "correct" if outcome == CORRECT else f"wrong: you said {given!r}, the answer is {question.answer!r}"
        print(f"{number}. {verdict}")
        print(textwrap.fill(question.reasoning, width=88, initial_indent="   ", subsequent_indent="   "))
    result = QuizResult(kata.name, tuple(outcomes))
    print(f"\n{result.score}/{len(outcomes)} correct" + (": well done" if result.all_correct else ""))
    return result
