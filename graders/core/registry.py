"""The one list of katas.

Graders, self-tests, notebooks and the CLI all read this module; nothing else
hard-codes a kata's folder, file or mistakes.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
KATAS_DIR = REPO_ROOT / "katas"
SOLUTIONS_DIR = REPO_ROOT / "solutions"
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
# Untouched copies of the skeletons, shipped with the package: `kata reset` restores from
# here and `kata list` compares against them, so neither needs git (or a pristine checkout).
SKELETONS_DIR = REPO_ROOT / "graders" / "skeletons"

# A kata's hints form a ladder, revealed one rung per `kata hint`.
HINT_LEVELS = ("nudge", "the key idea", "near-code")

# Forbidden *calls*, detected while learner code runs (see graders.core.guard).
ATTENTION_BUILTINS = (
    "torch.nn.functional.scaled_dot_product_attention",
    "torch.nn.functional.multi_head_attention_forward",
    "torch.nn.MultiheadAttention",
)
# The two tracks, in order: `kata list`, the README and the notebooks group katas by them.
TRACKS = {
    "foundations": "Foundations",
    "models": "Full models and modern inference",
}

ENCODER_BUILTINS = (
    "torch.nn.TransformerEncoderLayer",
    "torch.nn.TransformerEncoder",
)
DECODER_BUILTINS = (
    "torch.nn.TransformerDecoderLayer",
    "torch.nn.TransformerDecoder",
)


@dataclass(frozen=True)
class Kata:
    id: str  # "01"
    name: str  # "01_attention": the folder under katas/, solutions/, notebooks/
    file: str  # "attention.py": the file the learner edits
    title: str
    track: str  # a key of TRACKS
    difficulty: str  # "easy" | "medium" | "hard"
    target_minutes: int  # a fair time for the kata in a mock interview (`kata mock`)
    prerequisites: tuple[str, ...]
    mistakes: tuple[str, ...]  # the catalogued slugs this kata's grader recognises (at least)
    forbidden: tuple[str, ...]
    hints: tuple[str, str, str]  # one per HINT_LEVELS: nudge, the key idea, near-code

    @property
    def folder(self) -> Path:
        return KATAS_DIR / self.name

    @property
    def skeleton_path(self) -> Path:
        return self.folder / self.file

    @property
    def pristine_skeleton_path(self) -> Path:
        """The skeleton as shipped (katas/NN_name/<file> before the learner edits it)."""
        return SKELETONS_DIR / self.name / self.file

    @property
    def public_names(self) -> tuple[str, ...]:
        """The functions and classes the skeleton defines at top level, in order: what the
        learner writes and the grader looks up."""
        tree = ast.parse(self.pristine_skeleton_path.read_text())
        return tuple(node.name for node in tree.body
                     if isinstance(node, (ast.FunctionDef, ast.ClassDef))
                     and not node.name.startswith("_"))

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
        track="foundations",
        difficulty="easy",
        target_minutes=15,
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
            "Write the formula down before any code: softmax(Q Kᵀ / √d_k + mask) V. Which "
            "axis of the scores runs over the keys? And what should a query whose keys are "
            "all blocked get?",
            "scores = query @ key.transpose(-2, -1) has shape (..., n, m): one row per query, "
            "one column per key. Scale by 1/sqrt(d_k) (d_k = query.size(-1)) *before* the "
            "softmax, which normalises each row (dim=-1). A bool mask is True where a key is "
            "blocked (fill with -inf); a float mask is added. An all -inf row gives NaN: make "
            "its weights zeros. SingleHeadAttention: q_proj/k_proj/v_proj, attend, out_proj; "
            "batch_first=False means (seq, batch, d).",
            "scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))\n"
            "if attn_mask is not None and attn_mask.dtype == torch.bool:\n"
            "    scores = scores.masked_fill(attn_mask, float('-inf'))\n"
            "elif attn_mask is not None:\n"
            "    scores = scores + attn_mask\n"
            "weights = torch.softmax(scores, dim=-1)\n"
            "weights = weights.masked_fill(torch.isneginf(scores).all(-1, keepdim=True), 0.0)\n"
            "return weights @ value, weights\n"
            "# forward: unless batch_first, transpose(0, 1) on the way in and out; in between\n"
            "#   out, w = scaled_dot_product_attention(self.q_proj(q), self.k_proj(k), ...)\n"
            "#   return self.out_proj(out), w",
        ),
    ),
    Kata(
        id="02",
        name="02_heads",
        file="heads.py",
        title="Splitting into h heads and merging them back",
        track="foundations",
        difficulty="easy",
        target_minutes=10,
        prerequisites=("01",),
        mistakes=(
            "reshape-without-transpose",
            "heads-interleaved",
            "batch-head-order",
            "non-contiguous-view",
        ),
        forbidden=ATTENTION_BUILTINS,
        hints=(
            "Draw the last dimension of (b, n, h*d) as h blocks of d columns. Head i is block "
            "i. Which reshape keeps each block together, and which axis then has to move?",
            "Split the last dimension as (h, d) - head outermost - with view(b, n, h, d), "
            "then transpose(1, 2) to (b, h, n, d). Reshaping straight to (b, h, n, d) mixes "
            "tokens across heads. Merging is the inverse: transpose back first, then reshape "
            "(view fails on a transposed tensor). Seq-first: rows are batch-major, row i*h + "
            "j = batch i, head j.",
            "split_heads:           x.view(b, n, h, d).transpose(1, 2)\n"
            "merge_heads:           x.transpose(1, 2).reshape(b, n, h * d)\n"
            "split_heads_seq_first: x.reshape(n, b * h, d).transpose(0, 1)\n"
            "merge_heads_seq_first: x.transpose(0, 1).reshape(n, batch_size, h * d)",
        ),
    ),
    Kata(
        id="03",
        name="03_mha",
        file="mha.py",
        title="A minimal multi-head attention",
        track="foundations",
        difficulty="medium",
        target_minutes=25,
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
            "Multi-head attention is kata 01 run h times side by side on narrower slices, "
            "glued back together by out_proj. Start from PyTorch's parameter names: "
            "in_proj_weight, in_proj_bias, out_proj.",
            "in_proj_weight (3E, E) stacks W_q, W_k, W_v in that order (same for the bias): "
            "project query, key and value separately (key/value may be longer than query). "
            "Split into heads of width E // h (kata 02), scale by 1/sqrt(head_dim) - not "
            "1/sqrt(E) - softmax over the keys, dropout only in training, merge the heads, "
            "out_proj. Return per-head weights (b, h, n, m), not their mean.",
            "# unless batch_first: query, key, value = (x.transpose(0, 1) for x in ...)\n"
            "w_q, w_k, w_v = self.in_proj_weight.chunk(3)   # biases likewise, or None\n"
            "q = F.linear(query, w_q, b_q).view(b, n, h, d).transpose(1, 2)   # k, v: length m\n"
            "weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d), dim=-1)\n"
            "weights = F.dropout(weights, self.dropout, training=self.training)\n"
            "out = self.out_proj((weights @ v).transpose(1, 2).reshape(b, n, E))\n"
            "# transpose out back unless batch_first; return out, weights if need_weights else None",
        ),
    ),
    Kata(
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
            "row i*h + j is batch i.",
            "causal = torch.triu(torch.full((size, size), float('-inf'), device=device), diagonal=1)\n"
            "padded = torch.arange(max_len)[None, :] >= torch.as_tensor(lengths)[:, None]\n"
            "merged = attn_mask.to(dtype) if float, else zeros(shape).masked_fill(attn_mask, -inf)\n"
            "pad = zeros((b, m), dtype).masked_fill(key_padding_mask, -inf)\n"
            "pad = pad.repeat_interleave(num_heads, dim=0).unsqueeze(1)   # (b*h, 1, m)\n"
            "return pad if merged is None else merged + pad   # None when both are None",
        ),
    ),
    Kata(
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
            "pos = torch.arange(max_len, dtype=torch.float64)[:, None]\n"
            "two_i = torch.arange(0, d_model, 2, dtype=torch.float64)\n"
            "angles = pos / base ** (two_i / d_model)\n"
            "pe = torch.empty(max_len, d_model, dtype=torch.float64)\n"
            "pe[:, 0::2] = angles.sin(); pe[:, 1::2] = angles[:, : d_model // 2].cos()\n"
            "# __init__: self.register_buffer('pe', table.to(torch.get_default_dtype()))\n"
            "# forward: pe = self.pe[:seq].to(x.dtype); unsqueeze(0) if batch_first else unsqueeze(1)\n"
            "#          raise ValueError when seq > max_len; return self.dropout(x + pe)",
        ),
    ),
    Kata(
        id="06",
        name="06_encoder_layer",
        file="encoder_layer.py",
        title="A Transformer encoder layer and stack",
        track="foundations",
        difficulty="hard",
        target_minutes=30,
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
            "A layer is two sub-blocks - self-attention, then feed-forward - each wrapped in "
            "a residual connection and a LayerNorm. The only question is where the norm goes: "
            "norm_first decides.",
            "Post-LN (norm_first=False): x = norm1(x + sa(x)); x = norm2(x + ff(x)). Pre-LN: "
            "x = x + sa(norm1(x)); x = x + ff(norm2(x)) - the residual adds the un-normalised "
            "x. ff = dropout2(linear2(dropout(activation(linear1(x))))). Pass both masks to "
            "self_attn. The encoder deep-copies the layer num_layers times (independent "
            "weights) and applies norm at the end when given.",
            "self.self_attn = nn.MultiheadAttention(d_model, nhead, dropout, batch_first=batch_first)\n"
            "def _sa(self, x, mask, pad):\n"
            "    return self.dropout1(self.self_attn(x, x, x, attn_mask=mask, key_padding_mask=pad,\n"
            "                                        need_weights=False)[0])\n"
            "def _ff(self, x):\n"
            "    return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))\n"
            "# forward: Pre-LN x = x + self._sa(self.norm1(x), ...); x = x + self._ff(self.norm2(x))\n"
            "#          Post-LN x = self.norm1(x + self._sa(x, ...)); x = self.norm2(x + self._ff(x))\n"
            "# encoder: nn.ModuleList(copy.deepcopy(encoder_layer) for _ in range(num_layers))",
        ),
    ),
    Kata(
        id="07",
        name="07_flops",
        file="flops.py",
        title="Parameters and FLOPs of attention",
        track="foundations",
        difficulty="medium",
        target_minutes=20,
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
            "Count only matrix multiplications, and write each one as a (p, q) @ (q, r) "
            "product: that is p*q*r multiply-adds, 2*p*q*r FLOPs. List the products an "
            "attention layer does.",
            "Projections: q, k, v and out are each (tokens, d) @ (d, d) over l*b tokens. "
            "Attention: Q Kᵀ and weights @ V are (l, d/h) @ (d/h, l) per batch element and "
            "head - summed over the h heads, the head count cancels out. Cross-attention: Q "
            "and out run over tgt_len tokens, K and V over src_len. Parameters: four d x d "
            "weights plus four length-d biases. Memory: b*h*l*l elements of the dtype's size.",
            "params = 4*d*d + (4*d if bias else 0)\n"
            "cross  = 2*(2*n*b*d*d) + 2*(2*m*b*d*d) + 2*(2*b*n*m*d)   # n = tgt_len, m = src_len\n"
            "mha    = cross_attention_flops(l, l, b, d, h)            # 8*l*b*d*d + 4*l*l*b*d\n"
            "layer  = mha + 2*(2*l*b*d*d_ff)                           # the two feed-forward linears\n"
            "bytes  = b*h*l*l * torch.empty((), dtype=dtype).element_size()",
        ),
    ),
    Kata(
        id="08",
        name="08_decoder_layer",
        file="decoder_layer.py",
        title="A Transformer decoder layer and stack",
        track="models",
        difficulty="hard",
        target_minutes=30,
        prerequisites=("06",),
        mistakes=(
            "cross-attention-query-from-memory",
            "tgt-mask-in-cross-attention",
            "padding-masks-swapped",
            "cross-attention-missing",
            "shared-attention-weights",
            "norm-order-swapped",
            "missing-residual",
            "shared-layer-weights",
            "final-norm-missing",
            "residual-from-normed",
            "activation-misplaced",
            "mask-not-forwarded",
            "dropout-in-eval",
            "nan-on-fully-masked",
        ),
        forbidden=DECODER_BUILTINS,
        hints=(
            "Kata 06's layer with one more sub-block in the middle. Ask of each attention: "
            "where do its queries come from, where do its keys and values come from, and "
            "which two of the four masks belong to it?",
            "Three sub-blocks, each with its own residual and norm (norm1, norm2, norm3): "
            "self-attention over the target (tgt_mask, tgt_key_padding_mask); cross-attention "
            "with queries from the target and keys/values from memory (memory_mask, "
            "memory_key_padding_mask), in its own module multihead_attn; the feed-forward "
            "block. Post-LN normalises after each residual sum, Pre-LN before each sub-block. "
            "The decoder deep-copies the layer and gives every layer the same memory and masks.",
            "def _sa(self, x, mask, pad):\n"
            "    return self.dropout1(self.self_attn(x, x, x, attn_mask=mask, key_padding_mask=pad,\n"
            "                                        need_weights=False)[0])\n"
            "def _ca(self, x, mem, mask, pad):   # queries x, keys and values mem\n"
            "    return self.dropout2(self.multihead_attn(x, mem, mem, attn_mask=mask,\n"
            "                                             key_padding_mask=pad, need_weights=False)[0])\n"
            "# Pre-LN:  x = x + self._sa(self.norm1(x), tgt_mask, tgt_key_padding_mask)\n"
            "#          x = x + self._ca(self.norm2(x), memory, memory_mask, memory_key_padding_mask)\n"
            "#          x = x + self._ff(self.norm3(x))   # _ff as in kata 06, ending in dropout3\n"
            "# Post-LN: x = self.norm1(x + self._sa(x, ...)), and so on for norm2 and norm3",
        ),
    ),
)


def get(key: str | Path) -> Kata:
    """Find a kata by id ("03"), number ("3"), folder name ("03_mha"), short name ("mha"),
    or a path inside its folder. Raises KeyError naming the katas there are."""
    text = str(key).strip()
    for kata in KATAS:
        names = (kata.id, kata.name, kata.name[3:], kata.file.removesuffix(".py"))
        if text in names or (text.isdigit() and int(text) == int(kata.id)):
            return kata
    parts = Path(text).resolve().parts
    for kata in KATAS:
        if kata.name in parts:
            return kata
    known = ", ".join(f"{kata.name} ({int(kata.id)}, {kata.name[3:]})" for kata in KATAS)
    raise KeyError(f"no kata called {text!r}; the katas are: {known}")
