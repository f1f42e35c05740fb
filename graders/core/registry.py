"""The one list of katas.

Graders, self-tests, notebooks and the CLI all read this module; nothing else
hard-codes a kata's folder, file or mistakes.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from graders.core.i18n import N_

REPO_ROOT = Path(__file__).resolve().parents[2]
KATAS_DIR = REPO_ROOT / "katas"
SOLUTIONS_DIR = REPO_ROOT / "solutions"
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
# Untouched copies of the skeletons, shipped with the package: `kata reset` restores from
# here and `kata list` compares against them, so neither needs git (or a pristine checkout).
SKELETONS_DIR = REPO_ROOT / "graders" / "skeletons"

# How hard a kata is, in the words `kata list` and the notebooks show (translated there).
DIFFICULTIES = (N_("easy"), N_("medium"), N_("hard"))

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
# Kata 09: building an nn.Transformer (its static generate_square_subsequent_mask is fine;
# PyTorch's encoder and decoder classes and nn.MultiheadAttention are allowed).
TRANSFORMER_BUILTINS = ("torch.nn.Transformer",)
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
    difficulty: str  # one of DIFFICULTIES
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
            "finite-mask-fill",
        ),
        forbidden=ATTENTION_BUILTINS,
        hints=(
            "Write the formula down before any code: softmax(Q Kᵀ / √d_k + mask) V. Which "
            "axis of the scores runs over the keys? And what should a query whose keys are "
            "all blocked get - in the forward pass and in the backward pass?",
            "scores = query @ key.transpose(-2, -1) has shape (..., n, m): one row per query, "
            "one column per key. Scale by 1/sqrt(d_k) (d_k = query.size(-1)) *before* the "
            "softmax, which normalises each row (dim=-1). A bool mask is True where a key is "
            "blocked (fill with -inf); a float mask is added. An all -inf row gives NaN: give "
            "such rows harmless scores *before* the softmax and zero their weights after. "
            "Zeroing the NaN weights alone (torch.where after the softmax) still leaves NaN "
            "gradients with a float -inf mask. SingleHeadAttention: q_proj/k_proj/v_proj, "
            "attend, out_proj; batch_first=False means (seq, batch, d).",
            "# scores (..., n, m) already scaled; attn_mask bool (True = blocked), float or None\n"
            "if attn_mask is not None and attn_mask.dtype == torch.bool:\n"
            "    scores = scores.masked_fill(attn_mask, float('-inf'))\n"
            "elif attn_mask is not None:\n"
            "    scores = scores + attn_mask\n"
            "all_blocked = torch.isneginf(scores).all(dim=-1, keepdim=True)   # (..., n, 1)\n"
            "# neutralise the blocked rows *before* the softmax (no NaN, forward or backward),\n"
            "# then give them zero weights\n"
            "weights = scores.masked_fill(all_blocked, 0.0).softmax(dim=-1).masked_fill(all_blocked, 0.0)\n"
            "# then: output = weights @ value. The module: unless batch_first, transpose(0, 1)\n"
            "# on the way in and out; project, attend, out_proj.",
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
            "Two steps, not one: first cut the last axis into (heads, width) with the head "
            "index as the *outer* factor - a cut changes no memory, so each block stays "
            "together - then move the head axis next to the batch. A single reshape to "
            "(b, h, n, d) has the right shape but deals whole tokens to the heads. Merging is "
            "the same two steps in reverse; after moving an axis the memory is out of order, "
            "so gluing axes needs a copy (view refuses, reshape copies when it must). "
            "Seq-first: fold batch and heads into one axis with the batch as the outer factor "
            "(row i*h + j = batch i, head j).",
            "b, n, E = x.shape; h = num_heads; d = E // h         # x (b, n, E)\n"
            "heads = x.view(b, n, h, d).transpose(1, 2)           # split_heads: (b, h, n, d)\n"
            "merged = heads.transpose(1, 2).reshape(b, n, h * d)  # merge_heads: reshape, not view\n"
            "# seq-first x_sf (n, b, E): cut the columns, fold (b, h) batch-major, tokens second\n"
            "rows = x_sf.reshape(x_sf.size(0), x_sf.size(1) * h, d).transpose(0, 1)   # (b*h, n, d)\n"
            "# merge_heads_seq_first undoes it: transpose back, then reshape to (n, b, h*d)",
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
            "# batch first here (unless batch_first, transpose(0, 1) on the way in and out):\n"
            "b, n, E = query.shape; m = key.size(1); h = self.num_heads; d = E // h\n"
            "w_q, w_k, w_v = self.in_proj_weight.chunk(3)\n"
            "b_q, b_k, b_v = (None,) * 3 if self.in_proj_bias is None else self.in_proj_bias.chunk(3)\n"
            "q = F.linear(query, w_q, b_q).view(b, n, h, d).transpose(1, 2)   # (b, h, n, d)\n"
            "k = F.linear(key, w_k, b_k).view(b, m, h, d).transpose(1, 2)     # (b, h, m, d)\n"
            "v = F.linear(value, w_v, b_v).view(b, m, h, d).transpose(1, 2)   # (b, h, m, d)\n"
            "weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d), dim=-1)\n"
            "weights = F.dropout(weights, self.dropout, training=self.training)\n"
            "out = self.out_proj((weights @ v).transpose(1, 2).reshape(b, n, E))   # (b, n, E)\n"
            "# return out, weights if need_weights else None",
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
            "causal = torch.full((size, size), float('-inf'), device=device).triu(diagonal=1)\n"
            "lengths = torch.as_tensor(lengths)\n"
            "max_len = int(lengths.max()) if max_len is None else max_len\n"
            "padded = torch.arange(max_len, device=lengths.device)[None, :] >= lengths[:, None]\n"
            "# merge_masks, when neither mask is None (otherwise use the one there is, or None):\n"
            "def additive(mask):   # bool -> 0 / -inf; float -> its values, in `dtype`\n"
            "    if mask.dtype != torch.bool:\n"
            "        return mask.to(dtype)\n"
            "    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(mask, float('-inf'))\n"
            "pad = additive(key_padding_mask).repeat_interleave(num_heads, dim=0).unsqueeze(1)   # (b*h, 1, m)\n"
            "merged = additive(attn_mask) + pad   # broadcasts to (b*h, n, m)",
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
            "pos = torch.arange(max_len, dtype=torch.float64)[:, None]          # (max_len, 1)\n"
            "two_i = torch.arange(0, d_model, 2, dtype=torch.float64)           # (ceil(d/2),)\n"
            "angles = pos / base ** (two_i / d_model)                           # (max_len, ceil(d/2))\n"
            "pe = torch.empty(max_len, d_model, dtype=torch.float64)\n"
            "pe[:, 0::2] = angles.sin()\n"
            "pe[:, 1::2] = angles[:, : d_model // 2].cos()\n"
            "# __init__: self.register_buffer('pe', pe.to(torch.get_default_dtype()))\n"
            "# forward: raise ValueError when seq > max_len; pe = self.pe[:seq].to(x.dtype),\n"
            "#          unsqueeze(0) if batch_first else unsqueeze(1); return self.dropout(x + pe)",
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
            "norm-inside-residual",
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
            "x. Where people stumble: activation is a string (\"relu\", \"gelu\") *or* a "
            "callable - turn it into a function once; self_attn returns a tuple (output, "
            "weights): take [0], and need_weights=False skips the weights; pass src_mask as "
            "attn_mask and src_key_padding_mask as key_padding_mask. The encoder's layers are "
            "copy.deepcopy copies (not [layer] * n), it hands its `mask` to each layer as "
            "src_mask, and applies norm at the end when given.",
            "activation = {'relu': F.relu, 'gelu': F.gelu}[activation] if isinstance(activation, str) else activation\n"
            "def _sa(self, x, attn_mask, key_padding_mask):   # self-attention sub-block\n"
            "    out = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,\n"
            "                         need_weights=False)[0]   # a tuple: (output, weights)\n"
            "    return self.dropout1(out)\n"
            "def _ff(self, x):                                  # feed-forward sub-block\n"
            "    return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))\n"
            "# forward: Pre-LN x = x + self._sa(self.norm1(x), ...); x = x + self._ff(self.norm2(x))\n"
            "#          Post-LN x = self.norm1(x + self._sa(x, ...)); x = self.norm2(x + self._ff(x))\n"
            "layers = nn.ModuleList(copy.deepcopy(encoder_layer) for _ in range(num_layers))",
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
            "Attention: Q Kᵀ is (l, d/h) @ (d/h, l) and weights @ V is (l, l) @ (l, d/h) per "
            "batch element and head - summed over the h heads, the head count cancels out. "
            "Cross-attention: Q "
            "and out run over tgt_len tokens, K and V over src_len. Parameters: four d x d "
            "weights plus four length-d biases. Memory: b*h*l*l elements of the dtype's size.",
            "params = 4*d*d + (4*d if bias else 0)\n"
            "cross  = 2*(2*n*b*d*d) + 2*(2*m*b*d*d) + 2*(2*b*n*m*d)   # n = tgt_len, m = src_len\n"
            "mha    = 2*(2*l*b*d*d) + 2*(2*l*b*d*d) + 2*(2*b*l*l*d)   # cross-attention with n = m = l\n"
            "layer  = mha + 2*(2*l*b*d*d_ff)                           # the two feed-forward linears\n"
            "nbytes = b*h*l*l * torch.empty((), dtype=dtype).element_size()",
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
    Kata(
        id="09",
        name="09_transformer",
        file="transformer.py",
        title="The whole encoder-decoder Transformer and greedy decoding",
        track="models",
        difficulty="hard",
        target_minutes=35,
        prerequisites=("05", "08"),
        mistakes=(
            "embedding-not-scaled",
            "positional-encoding-missing",
            "causal-mask-missing",
            "src-padding-mask-missing",
            "memory-padding-mask-missing",
            "tgt-padding-mask-missing",
            "decode-wrong-position",
            "decode-continues-after-eos",
            "generator-softmax",
            "pe-wrong-axis",
            "positions-from-one",
            "pe-not-buffer",
            "final-norm-missing",
            "dropout-in-eval",
        ),
        forbidden=TRANSFORMER_BUILTINS,
        hints=(
            "Follow one batch through: token ids -> vectors -> encoder -> memory; target ids "
            "-> vectors -> decoder (looking at memory) -> generator -> logits. At each arrow, "
            "ask which positions must be hidden from which, and why.",
            "Vectors: embedding(tokens) * sqrt(d_model), plus the sinusoidal table along the "
            "sequence axis (axis 1: batch-first), then dropout. Three masks, all True = "
            "blocked: src == pad_idx for the encoder's keys and again for the decoder's "
            "memory keys, tgt == pad_idx for the decoder's own keys, plus a causal mask so "
            "position i sees only positions <= i. The generator returns raw logits. Greedy "
            "decoding feeds the growing prefix back in and reads only the last position; "
            "finished rows get pad_idx and the loop stops once every row has its eos.",
            "x = self.positional_encoding(self.src_embed(src) * math.sqrt(self.d_model))\n"
            "memory = self.encoder(x, src_key_padding_mask=src == self.pad_idx)\n"
            "y, t = self.positional_encoding(self.tgt_embed(tgt) * math.sqrt(self.d_model)), tgt.size(1)\n"
            "causal = torch.ones(t, t, dtype=torch.bool, device=tgt.device).triu(1)\n"
            "out = self.decoder(y, memory, tgt_mask=causal, tgt_key_padding_mask=tgt == self.pad_idx,\n"
            "                   memory_key_padding_mask=src == self.pad_idx)\n"
            "# greedy: ys = torch.full((b, 1), bos_idx); done = torch.zeros(b, dtype=torch.bool)\n"
            "#   while ys.size(1) < max_len and not done.all():\n"
            "#       nxt = model.generator(model.decode(ys, memory, src)[:, -1]).argmax(-1)\n"
            "#       nxt = nxt.masked_fill(done, model.pad_idx); ys = torch.cat([ys, nxt[:, None]], 1)\n"
            "#       done |= nxt == eos_idx",
        ),
    ),
    Kata(
        id="10",
        name="10_vit",
        file="vit.py",
        title="The Vision Transformer's block (timm)",
        track="models",
        difficulty="hard",
        target_minutes=35,
        prerequisites=("03", "06"),
        mistakes=(
            "patch-flatten-without-transpose",
            "qkv-reshape-order",
            "missing-scale",
            "scale-by-embed-dim",
            "reshape-without-transpose",
            "norm-order-swapped",
            "missing-residual",
            "residual-from-normed",
            "gelu-tanh-approximation",
            "drop-path-not-rescaled",
            "drop-path-in-eval",
            "drop-path-per-element",
        ),
        forbidden=ATTENTION_BUILTINS,
        hints=(
            "Follow one image through the model and write the shape after every step: "
            "(B, C, H, W) -> patches -> tokens -> heads -> back. Which axis must move at each "
            "reshape, and which random draw covers a whole sample?",
            "PatchEmbed: the conv gives (B, D, H/p, W/p); flatten(2) then transpose(1, 2) makes "
            "(B, N, D) - a reshape alone mixes channels into tokens. Attention: qkv(x) is "
            "(B, N, 3*dim) with q, k, v outermost, so reshape to (B, N, 3, h, d) and permute to "
            "(3, B, h, N, d); scale by head_dim ** -0.5; merge with transpose(1, 2) before the "
            "reshape. Mlp uses the exact GELU. DropPath draws one keep/drop per sample, shape "
            "(B, 1, 1, ...), divides the kept ones by 1 - p, and does nothing in eval mode. "
            "Block is Pre-LN: x = x + drop_path(attn(norm1(x))).",
            "qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads)\n"
            "q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)            # (B, h, N, d) each\n"
            "attn = self.attn_drop((q @ k.transpose(-2, -1) * self.scale).softmax(dim=-1))\n"
            "x = self.proj_drop(self.proj((attn @ v).transpose(1, 2).reshape(B, N, C)))\n"
            "# PatchEmbed: return self.proj(x).flatten(2).transpose(1, 2)\n"
            "# DropPath (training, p > 0): keep = x.new_empty((x.shape[0],) + (1,) * (x.ndim - 1))\n"
            "#     keep = keep.bernoulli_(1 - p); return x * keep / (1 - p)   # not when p == 1\n"
            "# Block: x = x + self.drop_path(self.attn(self.norm1(x))); same with norm2 and mlp",
        ),
    ),
    Kata(
        id="11",
        name="11_kv_cache",
        file="kv_cache.py",
        title="Causal self-attention with a key/value cache",
        track="models",
        difficulty="medium",
        target_minutes=25,
        prerequisites=("03", "04"),
        mistakes=(
            "cache-not-updated",
            "cache-wrong-dim",
            "causal-mask-offset",
            "causal-mask-missing",
            "cache-modified-in-place",
            "reshape-without-transpose",
        ),
        forbidden=ATTENTION_BUILTINS,
        hints=(
            "Write down which position each of the t new queries sits at when s positions "
            "are already in the cache, and which keys it may see. Then ask what the next call "
            "needs from this one.",
            "Project x into q, k, v and split them into heads (b, h, t, d). Append the new k "
            "and v to the cached ones along the positions axis (dim 2) with torch.cat - a new "
            "tensor, never a write into the cache you were given. The scores are (b, h, t, "
            "s + t): new query i is position s + i, so it sees every cached key and the new "
            "keys up to its own - the causal mask is shifted right by s. Return the "
            "concatenated (k, v), unscaled, as the new cache.",
            "q, k, v = (self._split_heads(p(x)) for p in (self.q_proj, self.k_proj, self.v_proj))\n"
            "if cache is not None:\n"
            "    k = torch.cat([cache[0], k], dim=2)   # (b, h, s + t, d)\n"
            "    v = torch.cat([cache[1], v], dim=2)\n"
            "s = k.size(2) - t\n"
            "scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)   # (b, h, t, s + t)\n"
            "blocked = torch.ones(t, s + t, dtype=torch.bool, device=x.device).triu(diagonal=s + 1)\n"
            "weights = torch.softmax(scores.masked_fill(blocked, float('-inf')), dim=-1)\n"
            "# merge the heads of weights @ v back to (b, t, E), out_proj, return (output, (k, v))",
        ),
    ),
    Kata(
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
            "angles = positions.to(torch.float64)[..., None] * base ** (-2 * pair / head_dim)\n"
            "# apply_rope: angles (n, d/2), or (b, 1, n, d/2) for (b, n) positions\n"
            "cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)\n"
            "x1, x2 = (x[..., 0::2], x[..., 1::2]) if interleaved else x.chunk(2, dim=-1)\n"
            "y1, y2 = x1 * cos - x2 * sin, x1 * sin + x2 * cos\n"
            "# interleaved: torch.stack((y1, y2), -1).flatten(-2); else torch.cat((y1, y2), -1)",
        ),
    ),
    Kata(
        id="13",
        name="13_gqa",
        file="gqa.py",
        title="Grouped-query and multi-query attention",
        track="models",
        difficulty="medium",
        target_minutes=25,
        prerequisites=("03", "04"),
        mistakes=(
            "kv-heads-tiled",
            "kv-proj-full-width",
            "missing-scale",
            "mask-inverted",
            "kv-cache-missing-values",
            "kv-cache-per-query-head",
            "kv-cache-dtype-ignored",
            "scale-by-embed-dim",
            "causal-diagonal",
            "nan-on-fully-masked",
            "finite-mask-fill",
        ),
        forbidden=ATTENTION_BUILTINS,
        hints=(
            "Start from kata 03's multi-head attention and ask what changes when there are "
            "fewer key/value heads than query heads: which parameters shrink, and which key/"
            "value head does each query head read?",
            "k_proj and v_proj project to num_kv_heads * head_dim (head_dim = E // num_heads). "
            "Split k and v into (b, num_kv_heads, n, d) and give every kv head to group = "
            "num_heads // num_kv_heads *consecutive* query heads (query head j reads kv head "
            "j // group): repeat_interleave on the head axis, not repeat. The rest is kata 01 "
            "attention: scale 1/sqrt(head_dim), bool mask True = blocked, is_causal blocks "
            "keys after the query, a fully blocked row gets zero weights. The cache holds keys "
            "and values: 2 * b * seq * layers * num_kv_heads * head_dim * bytes.",
            "q = self.q_proj(x).view(b, n, h, d).transpose(1, 2)    # (b, h, n, d)\n"
            "k = self.k_proj(x).view(b, n, kv, d).transpose(1, 2)   # (b, kv, n, d)\n"
            "v = self.v_proj(x).view(b, n, kv, d).transpose(1, 2)\n"
            "k, v = k.repeat_interleave(h // kv, dim=1), v.repeat_interleave(h // kv, dim=1)  # (b, h, n, d)\n"
            "scores = q @ k.transpose(-2, -1) / math.sqrt(d)\n"
            "# bool mask: masked_fill(mask, -inf); float: + mask; is_causal: triu(ones, 1) -> -inf\n"
            "blocked = torch.isneginf(scores).all(-1, keepdim=True)\n"
            "w = torch.softmax(scores.masked_fill(blocked, 0), -1).masked_fill(blocked, 0)\n"
            "return self.o_proj((w @ v).transpose(1, 2).reshape(b, n, h * d))\n"
            "# kv_cache_bytes: 2 * b * seq * layers * kv * (E // h) * dtype.itemsize",
        ),
    ),
    Kata(
        id="14",
        name="14_flash_attention",
        file="flash_attention.py",
        title="Flash attention: the online softmax, block by block",
        track="models",
        difficulty="hard",
        target_minutes=30,
        prerequisites=("01",),
        mistakes=(
            "accumulator-not-rescaled",
            "running-max-missing",
            "normalized-per-block",
            "lse-wrong",
            "causal-block-off-by-one",
            "full-score-matrix",
            "missing-scale",
            "wrong-scale",
        ),
        forbidden=ATTENTION_BUILTINS,
        hints=(
            "Forget blocks for a moment: how would you compute softmax(s) @ v in one pass over "
            "the keys, seeing each score once, if you may keep only a few numbers per query? "
            "What do you do when a later score is larger than every score so far?",
            "Keep per query a running maximum m (start at -inf), a running sum l of exp(s - m) "
            "and an accumulator acc of exp(s - m) @ v. For each key block: s = q @ k_blockᵀ / "
            "sqrt(d) (b, h, n, B); m_new = max(m, s.max(-1)); rescale the old l and acc by "
            "exp(m - m_new), add the block's exp(s - m_new) and its @ v_block. After the last "
            "block: output = acc / l, lse = m + log(l). Causal: block key start + t when it is "
            "greater than the query's index.",
            "m = q.new_full((b, h, n, 1), float('-inf'))     # running maximum\n"
            "l = q.new_zeros((b, h, n, 1))                   # running sum\n"
            "acc = torch.zeros_like(q)                       # output accumulator\n"
            "for start in range(0, k.size(-2), block_size):\n"
            "    s = q @ k[..., start:start + block_size, :].transpose(-2, -1) / math.sqrt(d)\n"
            "    # causal: s = s.masked_fill(key_index > query_index, -inf) with global indices\n"
            "    m_new = torch.maximum(m, s.amax(-1, keepdim=True))\n"
            "    p, alpha = torch.exp(s - m_new), torch.exp(m - m_new)\n"
            "    l = alpha * l + p.sum(-1, keepdim=True)\n"
            "    acc = alpha * acc + p @ v[..., start:start + block_size, :]\n"
            "    m = m_new\n"
            "return acc / l, (m + torch.log(l)).squeeze(-1)",
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
