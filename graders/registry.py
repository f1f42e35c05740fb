"""The one list of katas.

Graders, self-tests, notebooks and the CLI all read this module; nothing else
hard-codes a kata's folder, file or mistakes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
KATAS_DIR = REPO_ROOT / "katas"
SOLUTIONS_DIR = REPO_ROOT / "solutions"
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"

# Forbidden *calls*, detected while learner code runs (see graders.guard).
ATTENTION_BUILTINS = (
    "torch.nn.functional.scaled_dot_product_attention",
    "torch.nn.functional.multi_head_attention_forward",
    "torch.nn.MultiheadAttention",
)
ENCODER_BUILTINS = (
    "torch.nn.TransformerEncoderLayer",
    "torch.nn.TransformerEncoder",
)


@dataclass(frozen=True)
class Kata:
    id: str  # "01"
    name: str  # "01_attention": the folder under katas/, solutions/, notebooks/
    file: str  # "attention.py": the file the learner edits
    title: str
    difficulty: str  # "easy" | "medium" | "hard"
    prerequisites: tuple[str, ...]
    mistakes: tuple[str, ...]  # the catalogued slugs this kata's grader recognises (at least)
    forbidden: tuple[str, ...]
    hints: tuple[str, ...]

    @property
    def folder(self) -> Path:
        return KATAS_DIR / self.name

    @property
    def skeleton_path(self) -> Path:
        return self.folder / self.file

    @property
    def solution_path(self) -> Path:
        return SOLUTIONS_DIR / self.name / self.file

    @property
    def readme_path(self) -> Path:
        return self.folder / "README.md"

    @property
    def notebook_path(self) -> Path:
        return NOTEBOOKS_DIR / f"{self.name}.ipynb"

    @property
    def grader_module(self) -> str:
        return "graders." + self.file.removesuffix(".py")


KATAS: tuple[Kata, ...] = (
    Kata(
        id="01",
        name="01_attention",
        file="attention.py",
        title="Single-head scaled dot-product attention",
        difficulty="easy",
        prerequisites=(),
        mistakes=(
            "missing-scale",
            "wrong-scale",
            "softmax-wrong-dim",
            "mask-inverted",
            "mask-after-softmax",
            "wrong-projection",
            "missing-out-proj",
            "nan-on-fully-masked",
        ),
        forbidden=ATTENTION_BUILTINS,
        hints=(
            "scores = query @ key.transpose(-2, -1): one row per query, one column per key, "
            "shape (..., n, m).",
            "Divide the scores by sqrt(d_k), the width of query and key (query.size(-1)), "
            "before the softmax.",
            "The softmax normalises over the keys: dim=-1. Each row of the weights sums to 1.",
            "A bool mask is True where a key is *blocked*: scores.masked_fill(mask, -inf). "
            "A float mask is simply added to the scores.",
            "A row whose keys are all blocked is all -inf: its softmax is NaN. Replace those "
            "rows of the weights with zeros (torch.where / nan_to_num on just those rows).",
            "SingleHeadAttention: project query with q_proj, key with k_proj, value with "
            "v_proj, attend, then apply out_proj. With batch_first=False the inputs are "
            "(seq, batch, d_model): move batch to the front first.",
        ),
    ),
    Kata(
        id="02",
        name="02_heads",
        file="heads.py",
        title="Splitting into h heads and merging them back",
        difficulty="easy",
        prerequisites=("01",),
        mistakes=(
            "reshape-without-transpose",
            "heads-interleaved",
            "batch-head-order",
            "non-contiguous-view",
        ),
        forbidden=ATTENTION_BUILTINS,
        hints=(
            "split_heads: view (b, n, h*d) as (b, n, h, d), then transpose(1, 2) to get "
            "(b, h, n, d). A reshape straight to (b, h, n, d) mixes tokens across heads.",
            "Head i owns columns i*d:(i+1)*d, so the head index is the *outer* factor of the "
            "last dimension: view(b, n, h, d), not view(b, n, d, h).",
            "merge_heads: transpose(1, 2) back to (b, n, h, d), then reshape (or "
            ".contiguous().view) to (b, n, h*d). .view() on a transposed tensor raises.",
            "Seq-first: (n, b, h*d) -> reshape (n, b*h, d) -> transpose(0, 1) gives (b*h, n, d) "
            "with row i*h + j = batch i, head j, exactly PyTorch's layout (PyTorch may use view "
            "there because its projected q is contiguous; your input may not be).",
        ),
    ),
    Kata(
        id="03",
        name="03_mha",
        file="mha.py",
        title="A minimal multi-head attention",
        difficulty="medium",
        prerequisites=("01", "02"),
        mistakes=(
            "reshape-without-transpose",
            "scale-by-embed-dim",
            "missing-scale",
            "softmax-wrong-dim",
            "qkv-chunk-order",
            "wrong-projection",
            "missing-bias",
            "missing-out-proj",
            "batch-first-ignored",
            "weights-averaged",
            "dropout-in-eval",
            "wrong-scale",
            "heads-interleaved",
            "batch-head-order",
            "non-contiguous-view",
        ),
        forbidden=ATTENTION_BUILTINS,
        hints=(
            "in_proj_weight stacks the three projections in the order q, k, v: rows "
            "0:E are W_q, E:2E are W_k, 2E:3E are W_v. The same for in_proj_bias.",
            "Project with F.linear(query, W_q, b_q) and friends; key and value may be longer "
            "than query (cross-attention), so project them separately.",
            "Each head has width head_dim = E // num_heads; scale the scores by "
            "1/sqrt(head_dim), not 1/sqrt(E).",
            "Split heads with view + transpose (kata 02); merge them back before out_proj.",
            "Return the per-head weights (b, h, n, m), not their mean over heads.",
            "Dropout on the attention weights only when self.training is True: "
            "F.dropout(w, p, training=self.training).",
            "batch_first=False means (seq, batch, E): transpose to batch-first on the way in "
            "and back on the way out.",
        ),
    ),
    Kata(
        id="04",
        name="04_masks",
        file="masks.py",
        title="Causal, padding and merged masks",
        difficulty="medium",
        prerequisites=("01", "02"),
        mistakes=(
            "mask-inverted",
            "padding-mask-head-order",
            "causal-diagonal",
            "mask-and-instead-of-or",
            "float-mask-as-bool",
        ),
        forbidden=ATTENTION_BUILTINS,
        hints=(
            "causal_mask: torch.triu(torch.full((size, size), -inf), diagonal=1) blocks the "
            "future but keeps the diagonal: a token may attend to itself.",
            "padding_mask: torch.arange(max_len) >= lengths[:, None] is True at the padding.",
            "A position is blocked if *either* mask blocks it: combine bool masks with |, "
            "or add their float versions (-inf + 0 = -inf).",
            "key_padding_mask (b, m) becomes (b, 1, 1, m), broadcast over heads and queries, "
            "then flattened to (b*h, 1, m): batch-major, so repeat_interleave over heads, "
            "not repeat.",
            "A float attn_mask holds values to add, not a yes/no: keep them, don't turn them "
            "into -inf/0 by testing != 0.",
        ),
    ),
    Kata(
        id="05",
        name="05_positional_encoding",
        file="positional_encoding.py",
        title="Sinusoidal positional encoding",
        difficulty="easy",
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
            "The angle for position p and column pair i is p / base**(2*i / d_model): the "
            "exponent 2i/d_model needs its own parentheses.",
            "Even columns (0, 2, 4, ...) get sin, odd columns get cos: pe[:, 0::2] and "
            "pe[:, 1::2], not the first and second halves.",
            "With an odd d_model there is one more sin column than cos columns: slice the "
            "frequencies for the cos columns to fit.",
            "Positions start at 0: torch.arange(max_len).",
            "Store the table with self.register_buffer('pe', table) so that .to() moves it "
            "and the optimiser never sees it.",
            "batch_first=False: x is (seq, batch, d) and needs pe[:seq, None, :]; "
            "batch_first=True: x is (batch, seq, d) and needs pe[None, :seq, :].",
        ),
    ),
    Kata(
        id="06",
        name="06_encoder_layer",
        file="encoder_layer.py",
        title="A Transformer encoder layer and stack",
        difficulty="hard",
        prerequisites=("03", "04"),
        mistakes=(
            "norm-order-swapped",
            "missing-residual",
            "residual-from-normed",
            "shared-layer-weights",
            "activation-misplaced",
            "mask-not-forwarded",
            "final-norm-missing",
            "dropout-in-eval",
        ),
        forbidden=ENCODER_BUILTINS,
        hints=(
            "Post-LN (norm_first=False): x = norm1(x + sa(x)); x = norm2(x + ff(x)).",
            "Pre-LN (norm_first=True): x = x + sa(norm1(x)); x = x + ff(norm2(x)). The "
            "residual adds the *un-normalised* x.",
            "ff(x) = dropout2(linear2(dropout(activation(linear1(x))))): the activation sits "
            "between the two linears.",
            "Pass src_mask as attn_mask and src_key_padding_mask as key_padding_mask to "
            "self_attn, with need_weights=False.",
            "TransformerEncoder: copy.deepcopy the layer num_layers times into an "
            "nn.ModuleList; apply norm at the end when it is given.",
        ),
    ),
    Kata(
        id="07",
        name="07_flops",
        file="flops.py",
        title="Parameters and FLOPs of attention",
        difficulty="medium",
        prerequisites=("03", "06"),
        mistakes=(
            "macs-not-flops",
            "missing-out-proj-flops",
            "missing-attention-flops",
            "per-head-divided",
            "bias-not-counted",
            "batch-ignored",
        ),
        forbidden=(),
        hints=(
            "A (p, q) @ (q, r) product does p*r dot products of length q: p*q*r "
            "multiply-adds, 2*p*q*r FLOPs.",
            "Four d x d projections (q, k, v, out) over l*b tokens: 4 * 2*l*b*d*d.",
            "Scores QK^T and the weighted sum AV are each 2*l*l*d per batch element, "
            "summed over heads: the head count cancels out.",
            "Parameters: four d x d weight matrices plus four bias vectors of length d.",
            "The score matrix has b*h*l*l elements of dtype's itemsize bytes each.",
        ),
    ),
)


def get(key: str | Path) -> Kata:
    """Find a kata by id ("03"), folder name ("03_mha"), short name ("mha"), or a path in it."""
    text = str(key)
    for kata in KATAS:
        if text in (kata.id, kata.name, kata.name[3:], kata.file.removesuffix(".py")):
            return kata
    parts = Path(text).resolve().parts
    for kata in KATAS:
        if kata.name in parts:
            return kata
    raise KeyError(f"no kata called {text!r}; known: {', '.join(k.name for k in KATAS)}")
