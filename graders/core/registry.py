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
            "The scores of the queries against the keys form an (..., n, m) matrix: one row "
            "per query, one column per key. Scale by 1/sqrt(d_k) (d_k = query.size(-1)) "
            "*before* the softmax, which normalises each row (dim=-1). A bool mask is True where a key is "
            "blocked (fill with -inf); a float mask is added. An all -inf row gives NaN: give "
            "such rows harmless scores *before* the softmax and zero their weights after. "
            "Zeroing the NaN weights alone (torch.where after the softmax) still leaves NaN "
            "gradients with a float -inf mask. SingleHeadAttention: q_proj/k_proj/v_proj, "
            "attend, out_proj; batch_first=False means (seq, batch, d).",
            "# scores (..., n, m): scaled, the blocked keys already at -inf\n"
            "all_blocked = torch.isneginf(scores).all(dim=-1, keepdim=True)   # (..., n, 1)\n"
            "# neutralise those rows *before* the softmax (no NaN, forward or backward), then\n"
            "# give them zero weights\n"
            "weights = scores.masked_fill(all_blocked, 0.0).softmax(dim=-1).masked_fill(all_blocked, 0.0)",
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
            "heads = x.view(b, n, h, d).transpose(1, 2)   # (b, n, E) -> (b, n, h, d) -> (b, h, n, d)\n"
            "# merging: the same two steps backwards; after a transpose, reshape (view refuses).\n"
            "# seq-first: the same cut of the columns, (b, h) folded batch-major: row i*h + j",
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
            "w_q, w_k, w_v = self.in_proj_weight.chunk(3)                      # (E, E) each, q first\n"
            "q = F.linear(query, w_q, b_q).view(b, n, h, d).transpose(1, 2)   # (b, h, n, d); k, v alike\n"
            "weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d), dim=-1)   # (b, h, n, m), d = E // h",
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
            "padded = torch.arange(max_len, device=lengths.device)[None, :] >= lengths[:, None]   # (b, max_len)\n"
            "pad = pad.repeat_interleave(num_heads, dim=0).unsqueeze(1)   # (b, m) -> (b*h, 1, m): row i*h + j\n"
            "# causal: triu(diagonal=1) keeps the diagonal open. merge: both masks as additive\n"
            "# floats in `dtype` (a float mask keeps its values), added: (b*h, n, m)",
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
            "# pos (max_len, 1) = 0, 1, 2, ...; two_i (ceil(d/2),) = 0, 2, 4, ...; pe (max_len, d_model)\n"
            "angles = pos / base ** (two_i / d_model)        # (max_len, ceil(d/2))\n"
            "pe[:, 0::2] = angles.sin()                      # even columns\n"
            "pe[:, 1::2] = angles[:, : d_model // 2].cos()   # odd columns: one fewer for an odd d_model",
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
            "proj = 2 * (l * b) * d * d              # one projection: (l*b, d) @ (d, d)\n"
            "qk = b * h * (2 * l * (d // h) * l)     # Q Kᵀ: (l, d/h) @ (d/h, l) per batch and head\n"
            "# weights @ V costs what Q Kᵀ costs; h cancels: qk == 2 * b * l * l * d",
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
            "pe-dropout-rate",
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
            "# decode: y (b, t, d) is the embedded target, memory (b, s, d) the encoder's output\n"
            "causal = torch.ones(t, t, dtype=torch.bool, device=tgt.device).triu(1)   # (t, t), True = blocked\n"
            "out = self.decoder(y, memory, tgt_mask=causal, tgt_key_padding_mask=tgt == self.pad_idx,\n"
            "                   memory_key_padding_mask=src == self.pad_idx)      # (b, t, d)\n"
            "# greedy, one step: nxt = model.generator(model.decode(ys, memory, src)[:, -1]).argmax(-1)\n"
            "#                   nxt = nxt.masked_fill(done, model.pad_idx)   # (b,): finished rows pad",
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
            "qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads)   # q, k, v outermost\n"
            "q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)                             # (B, h, N, d) each\n"
            "# DropPath in training: one draw per sample, then x * keep / (1 - p)\n"
            "keep = x.new_empty((x.shape[0],) + (1,) * (x.ndim - 1)).bernoulli_(1 - p)  # (B, 1, 1)",
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
            "if cache is not None:   # k, v: (b, h, t, d), the new positions only\n"
            "    k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)   # (b, h, s + t, d)\n"
            "s = k.size(2) - t   # positions cached before this call\n"
            "blocked = torch.ones(t, s + t, dtype=torch.bool, device=x.device).triu(diagonal=s + 1)   # (t, s + t)",
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
            "angles = positions.to(torch.float64)[..., None] * base ** (-2 * pair / head_dim)   # (..., d/2), float64\n"
            "# apply_rope: (n, d/2), or (b, 1, n, d/2) for (b, n) positions: add the heads axis\n"
            "x1, x2 = (x[..., 0::2], x[..., 1::2]) if interleaved else x.chunk(2, dim=-1)   # (..., d/2) each",
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
            "keys after the query, a fully blocked row gets zero weights. For the cache, count "
            "what is stored per layer and per token: keys and values, for the kv heads only, "
            "in the dtype's bytes - exact Python ints.",
            "# k, v: (b, kv, n, d); query head j reads kv head j // (h // kv)\n"
            "k, v = k.repeat_interleave(h // kv, dim=1), v.repeat_interleave(h // kv, dim=1)  # (b, h, n, d)\n"
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
            "The invariant: after each key block, l = Σ exp(s - m) and acc = Σ exp(s - m) v "
            "over the keys seen so far, with m their largest score (start at -inf: exp(-inf) = "
            "0 clears the empty start). A block that raises the maximum to m_new moves every "
            "old term to the new maximum: multiply l and acc by exp(m - m_new), then add the "
            "block's own exp(s - m_new) terms. After the last block: output = acc / l, lse = "
            "m + log(l). Causal: block key start + t when it is greater than the query's index.",
            "# one key block: s (b, h, n, B) scaled scores; m, l (b, h, n, 1); acc (b, h, n, d)\n"
            "m_new = torch.maximum(m, s.amax(-1, keepdim=True))   # (b, h, n, 1)\n"
            "alpha = torch.exp(m - m_new)                         # (b, h, n, 1): old terms to m_new\n"
            "l = alpha * l + torch.exp(s - m_new).sum(-1, keepdim=True)\n"
            "acc = alpha * acc + torch.exp(s - m_new) @ v_block   # (b, h, n, d)",
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
    partial = partial_matches(text)
    if len(partial) == 1:  # "flash", "kv": one kata's name holds it
        return partial[0]
    parts = Path(text).resolve().parts
    for kata in KATAS:
        if kata.name in parts:
            return kata
    known = ", ".join(f"{kata.name} ({int(kata.id)}, {kata.name[3:]})" for kata in KATAS)
    raise KeyError(f"no kata called {text!r}; the katas are: {known}")


def partial_matches(key: str) -> list[Kata]:
    """The katas whose short name contains ``key`` (a word such as "flash" or "kv", any
    case, two characters at least); none for a key that could be a path."""
    text = str(key).strip().lower()
    if len(text) < 2 or "/" in text or "\\" in text or text.isdigit():
        return []
    return [kata for kata in KATAS if text in kata.name[3:].lower()]


# --- kata 19 (moves to graders/attention_backward/meta.py with the layout step) ---
TRACKS.setdefault("llm", "Decoder-only LLMs")
KATAS += (
    Kata(
        id="19",
        name="19_attention_backward",
        file="attention_backward.py",
        title="The backward pass of attention, by hand",
        track="llm",
        difficulty="hard",
        target_minutes=40,
        prerequisites=("01", "14"),
        mistakes=(
            "softmax-jacobian-missing-d",
            "missing-scale-in-grad",
            "dk-not-transposed",
            "dv-not-transposed",
            "causal-mask-missing-in-backward",
            "lse-not-subtracted",
            "lse-wrong",
            "saves-probabilities",
            "autograd-in-backward",
            "d-from-wrong-terms",
            "missing-scale",
            "full-score-matrix",
        ),
        forbidden=ATTENTION_BUILTINS,
        hints=(
            "Write the forward as four steps, S = s q kᵀ, P = softmax(S), O = P V, and walk "
            "them backwards one at a time: which gradient does each step need, and which "
            "tensors from the forward does it read? Then ask which of those you could "
            "recompute instead of keeping.",
            "Backwards through O = P V: dV = Pᵀ dO and dP = dO Vᵀ. Through the softmax, row by "
            "row: dS = P ∘ (dP - D), where D_i = Σ_j P_ij dP_ij is one number per query - and "
            "since O_i = Σ_j P_ij V_j, it equals rowsum(dO ∘ O), which needs no (n, m) matrix. "
            "Through S = s q kᵀ: dQ = s dS K and dK = s dSᵀ Q. Never keep P: the forward's lse "
            "gives it back exactly, tile by tile, as exp(S - lse) (with the causal mask), "
            "so the ctx keeps q, k, v, out and lse only.",
            "# per tile: q_i, do_i (b, h, Bq, d); k_j, v_j (b, h, Bk, d); lse_i, D_i (b, h, Bq, 1)\n"
            "p = torch.exp(q_i @ k_j.transpose(-2, -1) * scale - lse_i)  # (b, h, Bq, Bk), masked if causal\n"
            "ds = p * (do_i @ v_j.transpose(-2, -1) - D_i)  # D = (dO * O).sum(-1, keepdim=True)",
        ),
    ),
)
