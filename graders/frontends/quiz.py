"""The quiz at the end of each kata's notebook: an interviewer's follow-up questions, as data.

Each kata has 2-8 :class:`Question` s. ``notebooks/build.py`` turns them into the quiz cells
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
from dataclasses import dataclass

from graders.core import i18n, registry
from graders.core.i18n import _, translate

REASONING_WIDTH = 88  # terminal columns (a Chinese character takes two)

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
            return _("a whole number")
        if self.kind == NUMBER:
            return _("a number (within {tolerance})", tolerance=f"{self.rel_tolerance:.0%}")
        return _("a letter: {letters}",
                 letters=", ".join(repr(letter) for letter in letters(len(self.choices))))

    def markdown(self, number: int) -> str:
        """The question as the notebook shows it: numbered, with its lettered options."""
        lines = [f"**{number}.** {translate(self.prompt)}"]
        lines += [f"   - **{letter}** {translate(choice)}"
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



def vit_block_parameters(dim: int, mlp_ratio: float = 4.0) -> int:
    """timm's ViT Block with qkv_bias=True: a Pre-LN encoder layer of width int(dim * mlp_ratio)."""
    return encoder_layer_parameters(dim, int(dim * mlp_ratio))


def patch_count(height: int, width: int, patch_size: int) -> int:
    """Tokens from PatchEmbed: (H / p) * (W / p)."""
    return (height // patch_size) * (width // patch_size)


def kv_cache_bytes(num_layers: int, batch_size: int, seq_len: int, d_model: int,
                   bytes_per_value: int) -> int:
    """Keys and values of every layer and position: 2 * L * b * n * d values."""
    return 2 * num_layers * batch_size * seq_len * d_model * bytes_per_value


def rope_angle(position: int, pair: int, head_dim: int, base: float = 10000.0) -> float:
    """RoPE's angle for pair i at position p: p * base^(-2i / head_dim)."""
    return position * base ** (-2 * pair / head_dim)


def gqa_kv_cache_bytes(batch_size: int, seq_len: int, num_layers: int, num_kv_heads: int,
                       head_dim: int, itemsize: int) -> int:
    """Keys and values of every layer: 2 * b * seq * layers * kv_heads * head_dim * bytes."""
    return 2 * batch_size * seq_len * num_layers * num_kv_heads * head_dim * itemsize


GiB = 2**30
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
        Question(
            "Computed as written, exp(x) / exp(x).sum(), the float32 softmax of the scores "
            "[1000, 999] is NaN. What is its first weight, computed stably (3 decimals)?",
            1 / (1 + math.exp(-1)), NUMBER,
            "exp(1000) overflows to inf and inf / inf = NaN. Subtracting the maximum changes "
            "nothing mathematically, softmax(x) = softmax(x - max x), and leaves exponents ≤ 0: "
            "softmax([0, -1]) = [1 / (1 + e⁻¹), e⁻¹ / (1 + e⁻¹)] = [0.731, 0.269]. "
            "torch.softmax does this for you.",
            rel_tolerance=0.002),
        Question(
            "A float mask blocks every key of one query with -inf. You compute the softmax, then "
            "replace that row's NaN weights with `torch.where(all_blocked, 0.0, weights)`. "
            "What is still wrong?",
            "C", CHOICE,
            "The forward pass is fixed, but the softmax's backward multiplies by that row's NaN "
            "weights: 0 · NaN = NaN reaches its scores, and through query @ key.mT the gradient "
            "of that query and of every key. Give fully blocked rows finite scores before the "
            "softmax (masked_fill(all_blocked, 0.0)), then zero their weights. (With a bool "
            "mask, masked_fill's backward happens to stop the NaN.)",
            choices=("nothing", "the output of that query is NaN",
                     "the gradients of that query and of every key are NaN",
                     "the other queries' weights no longer sum to 1")),
        Question(
            "Why did the Transformer use scaled dot-product attention rather than additive "
            "attention, vᵀ tanh(W q + U k)?",
            "B", CHOICE,
            "Both score a query against a key; the dot product does it for all pairs with one "
            "matmul, which is much faster and needs no (n, m, width) hidden tensor. Unscaled, it "
            "fell behind additive attention for large d_k because the scores' variance grows "
            "like d_k and saturates the softmax: the 1/√d_k removes that weakness.",
            choices=("it is more accurate at every width",
                     "it is one matmul for all pairs, and 1/√d_k fixes its weakness at large d_k",
                     "additive attention cannot be masked",
                     "it has more parameters to learn with")),
        Question(
            "In self-attention, what happens to the (n, n) score matrix if W_q = W_k?",
            "A", CHOICE,
            "Scores become (W x_i) · (W x_j), the same for (i, j) and (j, i): token i attends to "
            "j exactly as much as j to i, and a token's score with itself, |W x_i|², tends to top "
            "its row. Separate W_q and W_k let what a token looks for differ from what it offers.",
            choices=("it becomes symmetric", "it becomes lower triangular",
                     "its rows sum to 1", "nothing changes")),
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
        Question(
            "Why h heads of width E/h rather than one head of width E?",
            "C", CHOICE,
            "Parameters (4E² + 4E) and FLOPs are the same whatever h is. One head gives each "
            "query a single distribution over the keys, one weighted average; h heads give it h "
            "independent distributions, so it can take one thing from one token and another from "
            "another token, and W_o combines them. The price: each head compares in only E/h "
            "dimensions.",
            choices=("fewer parameters", "fewer FLOPs",
                     "each query gets h independent distributions over the keys, at the same cost",
                     "it makes attention linear in the sequence length")),
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
        Question(
            "`scores` is float16. What does `scores.masked_fill(mask, -1e9)` do?",
            "C", CHOICE,
            "-1e9 does not fit in float16 (largest magnitude 65504), and masked_fill refuses a "
            "value it cannot convert: it raises. A cast would have given -inf. Code that wants a "
            "finite 'very negative' value uses torch.finfo(scores.dtype).min; this kata uses "
            "-inf.",
            choices=("fills -1e9", "fills -inf", "raises an error",
                     "fills -65504, float16's most negative value")),
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
        Question(
            "Why do Transformers use LayerNorm rather than BatchNorm?",
            "D", CHOICE,
            "BatchNorm's statistics run over the batch (and the positions): a token's output "
            "would depend on the other sequences, their lengths and padding and the batch size, "
            "and inference would use running averages. LayerNorm normalises each token over its "
            "own d_model features, the same in training and inference.",
            choices=("BatchNorm has no learned parameters", "LayerNorm is cheaper",
                     "BatchNorm cannot be used with dropout",
                     "LayerNorm normalises each token on its own, independent of batch, length "
                     "and padding")),
        Question(
            "What do Llama-style models use in place of the original Post-LN layer with a ReLU "
            "feed-forward?",
            "B", CHOICE,
            "Pre-LN (stable without warm-up, at the price of a residual stream that grows with "
            "depth and needs a final norm), with RMSNorm (x / rms(x) · g: no mean, no bias) and a "
            "gated SwiGLU feed-forward, W₂(silu(W₁x) ⊙ W₃x), of hidden width about 8/3·d.",
            choices=("Post-LN with BatchNorm", "Pre-norm with RMSNorm and a SwiGLU feed-forward",
                     "no normalisation at all", "Post-LN with GELU")),
        Question(
            "Counting only the weight matrices, how many parameters does one encoder layer with "
            "d = 1024 and d_ff = 4d have?",
            12 * 1024 * 1024, INTEGER,
            "Attention: W_q, W_k, W_v, W_o, 4d². Feed-forward: d × 4d and 4d × d, 8d². Total 12d² "
            "= 12,582,912; biases and norms add only O(d). The rule of thumb for sizing a model: "
            "12·d² per layer."),
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
        Question(
            "The backward pass of a linear layer costs how many times the FLOPs of its forward "
            "pass?",
            2, INTEGER,
            "Forward: Y = X Wᵀ, one matmul. Backward: the gradient for the input, dY W, and the "
            "gradient for the weights, dYᵀ X, two matmuls of the same size. A training step is "
            "about 3 × the forward."),
        Question(
            "At about 6 FLOPs per parameter per token, how many FLOPs does training a model of "
            "7·10⁹ parameters on 10¹² tokens take?",
            6 * 7e9 * 1e12, NUMBER,
            "2N per token forward (one multiply-add per parameter), 4N backward: 6 · 7·10⁹ · 10¹² "
            "= 4.2·10²². The attention matmuls come on top, 4·l·d per token and layer against "
            "24·d² for the rest: small while the context l is well below 6d.",
            rel_tolerance=0.05),
    ),
    "10_vit": (
        Question(
            "How many tokens does `PatchEmbed(patch_size=16)` make of one 224 × 384 image?",
            patch_count(224, 384, 16), INTEGER,
            "The conv with kernel = stride = 16 gives a 14 × 24 grid of patches (224/16 = 14 "
            "rows, 384/16 = 24 columns): N = 14 · 24 = 336 tokens, in row-major order. A "
            "square 224 × 224 image gives the familiar 196."),
        Question(
            "How many parameters does ViT-B/16's `Block(768, 12, mlp_ratio=4.0, "
            "qkv_bias=True)` have?",
            vit_block_parameters(768), INTEGER,
            "qkv 768·2304 + 2304 = 1,771,776; proj 768·768 + 768 = 590,592; fc1 768·3072 + "
            "3072 = 2,362,368; fc2 3072·768 + 768 = 2,360,064; two LayerNorms 2·(768 + 768) = "
            "3,072. Total 7,087,872: exactly nn.TransformerEncoderLayer(768, 12, 3072)'s count, "
            "since the block is a Pre-LN encoder layer under other names."),
        Question(
            "`qkv(x)` has shape (B, N, 3·dim). Which reshape gives q, k and v their own heads "
            "correctly, before permuting to (3, B, h, N, d)?",
            "B", CHOICE,
            "qkv's output features are all of q, then all of k, then all of v, each split into "
            "h heads of d: the 3 is the outer factor, (B, N, 3, h, d). Reading them as "
            "(B, N, h, 3, d) hands each head a mix of q, k and v columns (the "
            "qkv-reshape-order mistake); the other two put the token axis in the wrong place.",
            choices=("`(B, N, h, 3, d)`", "`(B, N, 3, h, d)`", "`(B, 3, h, N, d)`",
                     "`(3, B, h, N, d)` directly")),
        Question(
            "`DropPath(0.25)` in training mode on x of shape (B, N, D). What happens to a "
            "sample x[i] that is kept?",
            "A", CHOICE,
            "One draw per sample: x[i] is either all zeros (probability 0.25) or all of it "
            "divided by 1 - p = 0.75, so that E[DropPath(x)] = x and eval mode (the identity) "
            "sees the same scale. Zeroing single elements or tokens is ordinary dropout, not "
            "stochastic depth.",
            choices=("it becomes x[i] / 0.75, every element", "it stays x[i]",
                     "it becomes 0.75 · x[i]",
                     "each of its elements is zeroed or divided by 0.75 on its own draw")),
        Question(
            "ViT prepends a learned class token to the patch tokens and feeds its final state "
            "to the classification head. Why, and what is the usual alternative?",
            "B", CHOICE,
            "The class token is the same learned vector for every image (BERT's [CLS]): "
            "through attention it reads every patch, and its output after the final norm is "
            "the image's feature. It carries no label and is not needed for attention. The "
            "alternative is global average pooling of the patch tokens' outputs: the ViT "
            "paper finds both work about equally well once the learning rate is tuned for "
            "each, and timm offers both (global_pool='token' or 'avg'). With average pooling "
            "and no position embeddings, the model's prediction would not change at all if the "
            "patches were shuffled (lesson section 8).",
            choices=("it carries the image's label into the encoder",
                     "it gives the head one token that gathers the whole image by attention; "
                     "averaging the patch tokens works about as well",
                     "attention cannot be computed without it",
                     "it stores the image's size, so that any resolution works")),
        Question(
            "Trained from scratch on ImageNet-1k (1.3 M images) without strong regularisation, "
            "ViT-B/16 ends a few points below a ResNet of similar size. Why, and what closed "
            "the gap?",
            "C", CHOICE,
            "A convolution builds locality and translation equivariance in. ViT's only 2-D "
            "priors are cutting the image into patches and resizing the position embeddings "
            "for a new resolution: it must learn spatial structure from data. In the ViT paper, "
            "pre-training on ImageNet-21k (14 M images) makes it comparable to ResNets and "
            "JFT-300M makes it better. DeiT (Touvron et al., 2021) is competitive with convnets "
            "on ImageNet-1k alone, with strong augmentation (RandAugment, Mixup, CutMix, random "
            "erasing), stochastic depth (this kata's DropPath) and distillation from a convnet "
            "teacher through an extra distillation token.",
            choices=("attention is numerically unstable on pixels; float64 fixes it",
                     "its patches lose the colour information",
                     "it lacks a convolution's locality and translation equivariance and "
                     "learns them from data: more pre-training data, or DeiT's augmentation "
                     "and distillation",
                     "it has far fewer parameters than the ResNet")),
        Question(
            "ViT-B/16 is fine-tuned at 384 × 384 instead of 224 × 224. By what factor grows "
            "each layer's attention score matrix, the class token included?",
            ((patch_count(384, 384, 16) + 1) / (patch_count(224, 224, 16) + 1)) ** 2, NUMBER,
            "Tokens: 24 · 24 + 1 = 577 instead of 14 · 14 + 1 = 197. The scores are tokens × "
            "tokens, so they grow by (577 / 197)² ≈ 8.58, while the linear layers and the "
            "activations grow with the token count only, ≈ 2.93. Halving the patch size does "
            "the same as doubling the side of the image: 4 times the tokens, 16 times the "
            "scores. That is why high-resolution ViTs turn to windowed attention (Swin) or "
            "memory-efficient kernels.",
            rel_tolerance=0.01),
    ),
    "11_kv_cache": (
        Question(
            "How many MiB does the key/value cache of a 32-layer model with d = 4096 take for "
            "one sequence of 4096 tokens in bfloat16 (2 bytes a value)?",
            kv_cache_bytes(32, 1, 4096, 4096, 2) // MiB, INTEGER,
            "Every layer keeps a key and a value of width d for every position: 2 · 32 · 4096 "
            "· 4096 values × 2 bytes = 2,147,483,648 bytes = 2048 MiB, for a single sequence. "
            "It grows linearly with the context and the batch; grouped-query attention (kata "
            "13) shrinks it by sharing keys and values between heads."),
        Question(
            "After a prefill of s = 5 tokens, a chunk of t = 3 new tokens arrives. How many "
            "entries of its (t, s + t) causal mask are blocked?",
            3 * (3 - 1) // 2, INTEGER,
            "New query i is position 5 + i and sees keys 0 … 5 + i: query 0 is blocked from "
            "keys 6 and 7, query 1 from key 7, query 2 from none. 2 + 1 + 0 = 3 = t(t - 1)/2: "
            "every cached key is visible to every new query."),
        Question(
            "Decoding one new token with 5 tokens in the cache, someone calls "
            "`F.scaled_dot_product_attention(q, k, v, is_causal=True)` with q of length 1 and "
            "k, v of length 6. Which keys does the new token attend to?",
            "B", CHOICE,
            "For a non-square score matrix PyTorch aligns the causal mask top-left: query i "
            "sees keys 0 … i. The one new query (i = 0) sees only key 0. The right mask is "
            "shifted by the cache length (bottom-right aligned): the new token sees all 6. "
            "For a single new token no mask is needed at all.",
            choices=("all 6", "only key 0", "only the last key (itself)", "none: the row is NaN")),
        Question(
            "Why do we cache the keys and values of past tokens, but not their queries?",
            "C", CHOICE,
            "A past token's query was used once, to compute that token's own output, which is "
            "already done. Every later token needs the past keys (to score against) and values "
            "(to average), so those are kept.",
            choices=("queries are larger than keys", "queries change at every step",
                     "past queries are never used again", "queries are recomputed from the values")),
        Question(
            "A model with RoPE (kata 12) has 5 tokens in its cache and decodes the next one. "
            "Which is right?",
            "C", CHOICE,
            "A token's position is the number of tokens before it, the cache length: "
            "positions = past_len + arange(t), here 5. Its key is rotated once, by its own "
            "position, and stored rotated: every later query, rotated by its own position, "
            "meets it at the right relative angle, so nothing in the cache is ever touched "
            "again. Rotating the new token as position 0 gives wrong scores without any "
            "error; storing keys unrotated works but rotates the whole cache again at every "
            "step. Kata 12's lesson shows both.",
            choices=("its query and key are rotated as position 0, the first of this step",
                     "its key is stored unrotated, and the cache is rotated once more at every step",
                     "its query and key are rotated as position 5, and its key is stored rotated",
                     "only its query is rotated: cached keys carry no position")),
    ),
    "12_rope": (
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
    ),
    "09_transformer": (
        Question(
            "How many parameters does `nn.Transformer()` have (d_model 512, 6 + 6 layers, "
            "dim_feedforward 2048, a final LayerNorm on each stack; no embeddings or "
            "generator)?",
            6 * encoder_layer_parameters(512, 2048) + 2 * 512
            + 6 * (encoder_layer_parameters(512, 2048) + mha_parameters(512) + 2 * 512) + 2 * 512,
            INTEGER,
            "An encoder layer has 3,152,384 (kata 06); a decoder layer adds a cross-attention "
            "(1,050,624) and a third LayerNorm (1,024): 4,204,032. 6 · 3,152,384 + 6 · 4,204,032 "
            "+ two final norms (2 · 1,024) = 44,140,544. A 37,000-token vocabulary adds about "
            "19 M per embedding table — which is why the original shares them."),
        Question(
            "A model is trained without the decoder's causal mask. What do you see?",
            "C", CHOICE,
            "With teacher forcing, position i can read token i + 1 of the target — the very "
            "token it must predict — so the training loss collapses towards zero. At inference "
            "there is no future to copy: greedy decoding feeds the model its own prefix and the "
            "output is garbage. A near-perfect training loss on a seq2seq model is a red flag.",
            choices=("a training loss that will not go down",
                     "NaN in the logits at the first position",
                     "a training loss near zero, and useless translations",
                     "nothing: the encoder's padding mask already hides the future")),
        Question(
            "greedy_decode with max_len = 10 on a batch of 3 whose rows produce eos as their "
            "3rd, 5th and 1st generated token. How many columns has the result?",
            6, INTEGER,
            "bos plus 5 generated tokens: the loop stops as soon as the last row (the one that "
            "needs 5 tokens) has produced eos. The other rows are padded with pad_idx after "
            "their eos. max_len (which counts bos) would only matter if a row went on longer."),
        Question(
            "forward returns `softmax(logits)` and training uses `nn.CrossEntropyLoss`. What "
            "happens?",
            "B", CHOICE,
            "CrossEntropyLoss applies log-softmax itself, so the model's probabilities are "
            "squashed a second time: every input of the loss lies in [0, 1], the predicted "
            "distribution can never be sharp, gradients shrink and learning stalls. The argmax "
            "is unchanged (softmax is monotonic), which is why such a bug survives a quick "
            "look at decoded tokens: grade the logits.",
            choices=("an error: CrossEntropyLoss refuses probabilities",
                     "it runs, but learning stalls; greedy decoding picks the same tokens",
                     "it trains exactly as with logits",
                     "the argmax changes, so greedy decoding picks other tokens")),
        Question(
            "Decoding two tokens: the first is A with probability 0.6 or B with 0.4. After A "
            "the likeliest second token has probability 0.3, after B 0.9. Greedy decoding "
            "returns a sequence of probability 0.6 · 0.3 = 0.18. Which probability has the "
            "sequence that beam search with beam width 2 returns?",
            round(0.4 * 0.9, 6), NUMBER,
            "Beam search keeps the 2 best prefixes, A (0.6) and B (0.4), extends both and "
            "ranks the results: B followed by its 0.9 token, 0.4 · 0.9 = 0.36, twice what "
            "greedy found. Greedy (a beam of width 1) commits to the locally best token and "
            "never reconsiders. Beam search ranks by the sum of log-probabilities, which "
            "favours short outputs (each extra token adds a negative term), so it divides by a "
            "length penalty, GNMT's ((5 + |Y|) / 6)^α; the original Transformer used beam "
            "width 4 and α = 0.6.",
            rel_tolerance=0.01),
        Question(
            "Trained with teacher forcing, the decoder always reads the true previous tokens; "
            "at inference it reads its own. What is this mismatch called, and what is a "
            "remedy?",
            "A", CHOICE,
            "Exposure bias: the model is trained on gold prefixes only, so at inference one "
            "early mistake leads it into prefixes it has never seen, and errors compound. "
            "Scheduled sampling (Bengio et al., 2015) feeds the model its own predictions "
            "instead of the gold tokens with a probability that grows during training; for a "
            "Transformer, which computes every position at once from the gold prefix, it is "
            "usually done with a second decoder pass. Free running, always feeding the model's own output "
            "while training, is slow and unstable, so teacher forcing stays the default.",
            choices=("exposure bias; scheduled sampling",
                     "overfitting; more dropout",
                     "label bias; label smoothing",
                     "vanishing gradients; a larger learning rate")),
    ),
    "13_gqa": (
        Question(
            "GQA with num_heads = 8 and num_kv_heads = 2: which key/value head does query "
            "head 5 read?",
            5 // (8 // 2), INTEGER,
            "Each kv head serves a group of 8 / 2 = 4 consecutive query heads: heads 0-3 read "
            "kv head 0, heads 4-7 kv head 1, so head 5 reads kv head 5 // 4 = 1. (Tiling with "
            "repeat gives head j the kv head j % 2: head 5 would get the right one by luck, "
            "head 1 the wrong one.)"),
        Question(
            "Llama-2-70B: 80 layers, E = 8192, 64 query heads, 8 kv heads. How many GiB does "
            "the float16 KV cache of one 4096-token sequence take?",
            gqa_kv_cache_bytes(1, 4096, 80, 8, 8192 // 64, 2) / GiB, NUMBER,
            "head_dim = 8192 / 64 = 128. Per layer and token: keys and values, 8 kv heads × 128 "
            "numbers each, 2 × 8 × 128 × 2 bytes = 4 KiB; × 80 layers × 4096 tokens = 1.25 GiB. "
            "With 64 kv heads (plain multi-head attention) it would be 8 times as much, 10 GiB.",
            rel_tolerance=0.01),
        Question(
            "Going from multi-head attention to GQA with the same num_heads (num_kv_heads < "
            "num_heads), the FLOPs of the two attention matmuls (scores and weights @ V)…",
            "C", CHOICE,
            "Every query head still computes its own n × n scores and its own weighted sum; the "
            "shared keys and values are only read by more heads. What shrinks is the K and V "
            "projections (their parameters and FLOPs) and, above all, the cache that decoding "
            "has to read for every new token.",
            choices=("shrink by num_heads / num_kv_heads", "shrink by half", "stay the same",
                     "grow, because k and v are copied")),
        Question(
            "Which of these is multi-query attention?",
            "A", CHOICE,
            "Multi-query attention (Shazeer, 2019) shares a single key/value head among all "
            "query heads: num_kv_heads = 1. num_kv_heads = num_heads is ordinary multi-head "
            "attention; GQA is everything in between.",
            choices=("num_kv_heads = 1", "num_kv_heads = num_heads",
                     "num_kv_heads = num_heads / 2", "num_heads = 1")),
        Question(
            "Llama-2-70B (80 layers, 64 query heads of width 128, float16) is served on 8 GPUs "
            "with tensor parallelism, 8 query heads per GPU. With multi-query attention, the "
            "single key/value head is needed by every GPU, so each holds a copy. How many MiB "
            "of KV cache does each GPU hold for one 4096-token sequence?",
            gqa_kv_cache_bytes(1, 4096, 80, 1, 128, 2) / MiB, NUMBER,
            "One kv head: 2 × 4096 × 80 × 128 × 2 bytes = 160 MiB, on every GPU. With 8 kv "
            "heads (GQA-8), the cache is 1.25 GiB in all but splits evenly, one kv head per "
            "GPU: 160 MiB each as well (multi-head attention: 1.25 GiB each). So under 8-way "
            "tensor parallelism MQA saves no memory per GPU over GQA-8, while it costs "
            "quality: Ainslie et al. (2023) report that MQA can degrade quality and make "
            "training unstable, and that GQA-8 comes close to multi-head quality at close to "
            "MQA's speed. That is the usual answer to \"why 8 kv heads\"; the Llama 2 paper "
            "itself only says GQA improves inference scalability.",
            rel_tolerance=0.01),
    ),
    "14_flash_attention": (
        Question(
            "How many GiB does one layer's score matrix take for a single sequence of "
            "n = m = 32768 tokens with 32 heads in float16?",
            32 * 32768 * 32768 * 2 // GiB, INTEGER,
            "32 heads × 32768² scores × 2 bytes = 68,719,476,736 bytes = 64 GiB, for one layer "
            "and one sequence. This kata's loop holds one (n, block_size) block per head instead: "
            "with block_size 128, 32 · 32768 · 128 · 2 bytes = 256 MiB. The GPU kernel also tiles "
            "the queries: only B_r × B_c tiles sit in SRAM, while Q, K, V and O stream through "
            "HBM."),
        Question(
            "A query's running maximum is 5; the next block's largest score is 7. By what factor "
            "are its running sum and its accumulator multiplied before the block's terms are added?",
            math.exp(5 - 7), NUMBER,
            "α = exp(m_old − m_new) = exp(−2) ≈ 0.135. Every term so far was exp(s − 5); it must "
            "become exp(s − 7), which is exp(s − 5) · exp(−2). The new block's terms are "
            "exp(s − 7) directly.",
            rel_tolerance=0.01),
        Question(
            "The keys are split in two halves, and attention over each half gives (out₁, lse₁) "
            "and (out₂, lse₂). Which lse does attention over all the keys have?",
            "C", CHOICE,
            "lse = log(Σ₁ eˢ + Σ₂ eˢ) = log(e^lse₁ + e^lse₂) = logaddexp(lse₁, lse₂). The merged "
            "output is then out₁ · e^(lse₁ − lse) + out₂ · e^(lse₂ − lse): the same rescaling as "
            "the online softmax, and how split-K decoding and ring attention combine partial "
            "results.",
            choices=("max(lse₁, lse₂)", "lse₁ + lse₂", "log(exp(lse₁) + exp(lse₂))",
                     "(lse₁ + lse₂) / 2")),
        Question(
            "What should the running maximum start at, so that a row whose scores are all about "
            "−10⁴ still comes out right?",
            "B", CHOICE,
            "Starting at 0, the maximum stays 0 for that row: every exp(s − 0) = exp(−10⁴) "
            "underflows to 0, and the output is 0 / 0 = NaN. Starting at −inf, the first "
            "block sets it to the row's true maximum, and α = exp(−inf) = 0 wipes the empty "
            "start.",
            choices=("0", "-inf", "1")),
        Question(
            "What does FlashAttention keep from the forward pass for the backward pass?",
            "D", CHOICE,
            "The gradients need the weights P, but storing them would bring back the n × m "
            "matrix. FlashAttention keeps the output O and lse, n numbers per head, and "
            "recomputes each block of P exactly as exp(S − lse) from Q and a block of K "
            "(lesson section 8). The scores are computed twice, yet the backward pass moves "
            "far fewer bytes.",
            choices=("the n × m weights, written to HBM",
                     "nothing: the backward pass reruns the whole forward pass first",
                     "only the running maximum of each query",
                     "the output and lse; each block of the weights is recomputed")),
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
        Question(
            "At inference the model generates 50 tokens for one source sentence of 30 tokens. "
            "How often must each decoder layer project the memory into its cross-attention's "
            "keys and values?",
            "D", CHOICE,
            "The cross-attention's keys and values are memory · W_k and memory · W_v: they "
            "depend on the source and the layer's weights, never on the tokens generated so "
            "far. Compute them once per layer after encoding and reuse them at every step "
            "(Hugging Face keeps them in the cache beside the self-attention's keys and "
            "values); only the self-attention's keys and values grow, one row per new token. "
            "Recomputing them at each of the 50 steps does the same projection 50 times.",
            choices=("once per generated token, 50 times",
                     "never: the memory itself serves as keys and values",
                     "once per token of the source, 30 times",
                     "once for the source, then reused at every step")),
        Question(
            "A GPT-style decoder-only block is this layer without the cross-attention (and "
            "its LayerNorm): masked self-attention and the feed-forward. How many parameters "
            "has it with d_model 512, 8 heads and dim_feedforward 2048?",
            encoder_layer_parameters(512, 2048), INTEGER,
            "3,152,384: the decoder layer's 4,204,032 minus the cross-attention (1,050,624) "
            "and its LayerNorm (1,024) — exactly kata 06's encoder layer, run with a causal "
            "mask. With no encoder there is no memory to attend to: the prompt and the "
            "continuation are one sequence, and the causal mask alone lets each position "
            "read everything before it, the prompt included. An encoder–decoder reads the "
            "source bidirectionally in its own stack, which suits tasks with a distinct input "
            "and output such as translation; a decoder-only model uses one stack for both and "
            "one objective, next-token prediction, on any text."),
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


def marked(number: int, question: Question, given) -> tuple[str, str]:
    """Mark one answer: (CORRECT, WRONG or UNANSWERED, the text to show: the verdict, then
    the reasoning when it was answered). The notebooks' quiz and ``kata quiz`` both mark
    with this."""
    outcome = question.judge(given)
    if outcome == UNANSWERED:
        return outcome, f"{number}. " + _("unanswered ({format})", format=question.answer_format)
    if outcome == CORRECT:
        verdict = _("correct")
    else:
        verdict = _("wrong: you said {given}, the answer is {answer}", given=repr(given),
                    answer=repr(question.answer))
    reasoning = i18n.fill(translate(question.reasoning), width=REASONING_WIDTH, indent="   ")
    return outcome, f"{number}. {verdict}\n{reasoning}"


def score_line(result: QuizResult) -> str:
    score = dict(score=result.score, total=len(result.outcomes))
    return (_("{score}/{total} correct: well done", **score) if result.all_correct
            else _("{score}/{total} correct", **score))


def quiz(kata_key: str, answers: dict[int, object]) -> QuizResult:
    """Grade ``answers`` (question number -> answer, None when unanswered); print one verdict
    per question, with the reasoning for each answered one. Never raises on a wrong answer."""
    kata = registry.get(kata_key)
    outcomes = []
    for number, question in enumerate(questions(kata.id), start=1):
        outcome, text = marked(number, question, answers.get(number))
        outcomes.append(outcome)
        print(text)
    result = QuizResult(kata.name, tuple(outcomes))
    print("\n" + score_line(result))
    return result


# --- kata 19's quiz (moves to graders/attention_backward/meta.py with the layout step) ---

def attention_matmul_flops(n: int, m: int, d: int, backward: bool = False,
                           recompute: bool = True) -> int:
    """Matmul FLOPs of softmax attention for one head, 2 per multiply-add: the forward does
    S = Q Kᵀ and O = P V; the backward dV = Pᵀ dO, dP = dO Vᵀ, dQ = dS K, dK = dSᵀ Q, plus
    S = Q Kᵀ again when P is recomputed rather than stored."""
    matmuls = (4 + recompute) if backward else 2
    return matmuls * 2 * n * m * d


def causal_tiles(n: int, block: int) -> tuple[int, int]:
    """(tiles computed, tiles among them that need a mask) for causal attention over n
    queries and keys in block x block tiles: the tiles on or below the diagonal, and the
    diagonal ones."""
    blocks = -(-n // block)
    return blocks * (blocks + 1) // 2, blocks


QUIZZES["19_attention_backward"] = (
    Question(
        "Why does FlashAttention's backward pass recompute the probabilities P from Q, K and "
        "lse instead of storing them in the forward pass?",
        "B", CHOICE,
        "Storing P costs O(n·m) memory per head (64 GiB for one layer at 32k tokens, 32 "
        "heads, float16) and, worse, writing it to GPU memory (HBM) and reading it back: "
        "attention is memory-bound, so those bytes cost more time than the FLOPs. "
        "Recomputing S = Q Kᵀ tile by tile in on-chip SRAM adds one matmul of FLOPs, and "
        "exp(S − lse) gives back exactly the forward's P: the backward is faster and needs "
        "only O(n) extra memory (O and lse).",
        choices=("recomputation is more accurate than storing P in float16",
                 "P takes O(n·m) memory and HBM traffic; one extra matmul in SRAM is cheaper",
                 "autograd cannot save tensors inside a custom Function",
                 "P changes between the forward and the backward pass")),
    Question(
        "Where does D_i = rowsum(dO ∘ O)_i come from?",
        "A", CHOICE,
        "The softmax's backward needs D_i = Σ_j P_ij dP_ij, and dP_ij = dO_i · V_j. So D_i = "
        "Σ_j P_ij (dO_i · V_j) = dO_i · (Σ_j P_ij V_j) = dO_i · O_i. One dot product of "
        "length d per query, from tensors already at hand, instead of a sum over the n × m "
        "matrix P ∘ dP: FlashAttention-2 computes it once, before the loop over tiles.",
        choices=("D_i = Σ_j P_ij dP_ij, and Σ_j P_ij V_j = O_i turns it into dO_i · O_i",
                 "it is the gradient of lse",
                 "it is a normalisation FlashAttention adds for numerical stability",
                 "it is the row sum of dS")),
    Question(
        "What does each row of dS = P ∘ (dP − D) sum to (in exact arithmetic)?",
        0, INTEGER,
        "Σ_j dS_ij = Σ_j P_ij dP_ij − D_i Σ_j P_ij = D_i − D_i · 1 = 0. The softmax is "
        "unchanged when a constant is added to a row of scores, so a gradient along that "
        "direction must vanish. With dS = P ∘ dP (D forgotten) the rows do not sum to 0, a "
        "quick test for that mistake."),
    Question(
        "Counting the matmuls only, how many times the forward's FLOPs does FlashAttention's "
        "backward pass take?",
        attention_matmul_flops(1, 1, 1, backward=True) / attention_matmul_flops(1, 1, 1),
        NUMBER,
        "The forward does two matmuls of 2·n·m·d FLOPs each: S = Q Kᵀ and O = P V. The "
        "backward does four, dV = Pᵀ dO, dP = dO Vᵀ, dQ = dS K, dK = dSᵀ Q, plus S = Q Kᵀ "
        "again to recompute P: five, so 5 / 2 = 2.5 times the forward (2 times if P were "
        "stored). Training a layer thus costs about 3.5 forward passes of attention.",
        rel_tolerance=0.02),
    Question(
        "How many MiB does lse take for one layer of 32 heads at n = 32768 tokens in float32, "
        "one sequence (what FlashAttention keeps instead of P)?",
        32 * 32768 * 4 // MiB, INTEGER,
        "32 heads × 32768 queries × 4 bytes = 4,194,304 bytes = 4 MiB, against 64 GiB for P "
        "in float16: n numbers per head instead of n × m. O is kept anyway, as the layer's "
        "output."),
    Question(
        "FlashAttention-2's backward loops over key blocks outside and query blocks inside. "
        "What does that order buy?",
        "C", CHOICE,
        "For one key block j, dK_j = Σ_i s · dS_ijᵀ Q_i and dV_j = Σ_i P_ijᵀ dO_i sum over "
        "every query block, so with key blocks outside they accumulate in on-chip memory "
        "and are written to HBM once. dQ_i sums over key blocks and is updated from every "
        "key block (atomic adds in the GPU kernel, or a second pass). Queries outside makes "
        "dQ local and dK, dV the shared sums instead.",
        choices=("it makes D unnecessary",
                 "it avoids recomputing P",
                 "dK and dV of a key block accumulate on chip and are written once; dQ is "
                 "the one accumulated across blocks",
                 "it is the only order in which causal tiles can be skipped")),
    Question(
        "Causal attention, n = m = 1024, in 128 × 128 tiles: of the 64 tiles, how many does "
        "the backward compute at all (the others are skipped)?",
        causal_tiles(1024, 128)[0], INTEGER,
        "8 query blocks × 8 key blocks; query block i needs key blocks 0 … i, so 1 + 2 + … + "
        "8 = 36 tiles, almost half the work saved. Only the 8 on the diagonal need a mask; "
        "the 28 below it are entirely visible."),
)
