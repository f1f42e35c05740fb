"""The catalogue of recognised mistakes: slug -> one sentence of explanation and a hint.

Slugs are stable identifiers (see CONTRACT.md, section 4). Graders recognise a
mistake by *behaviour* (graders.core.mistakes); this module only holds the words: here
the mistakes several katas share, and beside each kata (``graders/<module>/meta.py``,
``MISTAKES``) the ones only its grader names. :data:`MISTAKES` gathers them all. A kata may
word a shared mistake in its own terms (its meta's ``WORDINGS``): :func:`mistake` gives the
words of the kata being graded.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from graders.core import registry
from graders.core.kata import Mistake

# Shared by several katas (or by the grading core): a slug one kata alone names lives in
# that kata's meta.
SHARED = (
    # --- attention arithmetic (01, 03) ---
    Mistake("missing-scale",
            "The scores were not divided by sqrt(d_k) before the softmax.",
            "scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))."),
    Mistake("wrong-scale",
            "The scores were scaled, but not by 1/sqrt(d_k) (e.g. by 1/d_k, by d_v, or by a "
            "sequence length).",
            "d_k is the width shared by query and key: query.size(-1). Take its square root."),
    Mistake("scale-by-embed-dim",
            "The scores were scaled with the full embedding width E instead of the head "
            "width E / num_heads.",
            "Each head is its own attention of width head_dim = E // num_heads: divide by "
            "sqrt(head_dim)."),
    Mistake("softmax-wrong-dim",
            "The softmax normalised over the wrong axis: the weights of each query must sum "
            "to 1 over the keys (a router's, over the experts).",
            "Use softmax(dim=-1) on scores of shape (..., n_queries, m_keys) (a router's "
            "logits: (T, num_experts))."),
    Mistake("mask-inverted",
            "The boolean mask was read the wrong way round: True means *blocked* here (as "
            "in nn.MultiheadAttention), not 'may attend'.",
            "True means blocked: masked_fill(mask, float('-inf')) with the mask as given (no "
            "~); a mask you build is True (or -inf) where attending is not allowed."),
    Mistake("wrong-projection",
            "A projection was applied to the wrong input (e.g. the key weights used for the "
            "value).",
            "query goes through W_q, key through W_k, value through W_v, each exactly once."),
    Mistake("missing-out-proj",
            "The output projection was not applied to the attended values.",
            "Finish with out_proj(attended) after merging the heads."),
    Mistake("nan-on-fully-masked",
            "A query whose keys are all blocked gave NaN, in its weights or in the gradients "
            "through it; the contract says its weights are all zero and its gradients finite.",
            "Before the softmax, give the rows where every key is blocked finite scores "
            "(all_blocked = torch.isneginf(scores).all(-1, keepdim=True); "
            "scores = scores.masked_fill(all_blocked, 0.0)), then zero their weights after "
            "it (weights.masked_fill(all_blocked, 0.0)). Zeroing after the softmax alone "
            "leaves NaN gradients. With nn.MultiheadAttention, pass need_weights=False "
            "(with weights, PyTorch gives NaN there)."),
    Mistake("finite-mask-fill",
            "Blocked scores were filled with a large finite number (masked_fill(mask, -1e9)) "
            "instead of -inf: right until a query's keys are all blocked, where it attends "
            "uniformly to them instead of getting zero weights.",
            "Fill with float('-inf'), then give fully blocked rows zero weights (their "
            "scores finite before the softmax, their weights zeroed after it)."),
    # --- heads (02, 03) ---
    Mistake("reshape-without-transpose",
            "The heads were made with a reshape alone, which mixes tokens of different "
            "positions into one head.",
            "view(b, n, h, d) first, then transpose(1, 2) to (b, h, n, d); undo it the same "
            "way."),
    Mistake("heads-interleaved",
            "The last dimension was split as (d, h) instead of (h, d): head i got every h-th "
            "column instead of columns i*d:(i+1)*d.",
            "view(..., num_heads, head_dim): the head index is the outer factor."),
    Mistake("batch-head-order",
            "The (batch, head) rows were ordered head-major; PyTorch's layout is batch-major: "
            "row i*h + j is batch i, head j.",
            "Split (n, b, h*d) into (n, b*h, d) and transpose: batch varies slowest."),
    Mistake("non-contiguous-view",
            ".view() was asked to merge dimensions that are not laid out in that order in "
            "memory (typically right after a transpose), which PyTorch refuses.",
            "Use .reshape(), or .contiguous().view(), after a transpose."),
    # --- multi-head attention (03) ---
    Mistake("dropout-in-eval",
            "Dropout was applied in eval mode; it must act only while training.",
            "Use nn.Dropout (module.eval() switches it off) or "
            "F.dropout(x, p, training=self.training)."),
    # --- masks (04) ---
    Mistake("causal-diagonal",
            "The causal mask's diagonal is wrong: a token must see itself but no later "
            "token.",
            "torch.triu(..., diagonal=1) blocks strictly above the diagonal."),
    # --- positional encoding (05) ---
    Mistake("positions-from-one",
            "Positions were counted from 1; the first row of the table is position 0 "
            "(all sin 0, cos 1).",
            "torch.arange(max_len), not arange(1, max_len + 1)."),
    Mistake("pe-not-buffer",
            "The table is not a registered buffer: it is a parameter (trained, and counted "
            "as a weight) or a plain attribute (left behind by .to()).",
            "self.register_buffer('pe', table)."),
    Mistake("pe-wrong-axis",
            "The table was added along the wrong axis of x (batch instead of sequence).",
            "(seq, batch, d) needs pe[:seq].unsqueeze(1); (batch, seq, d) needs "
            "pe[:seq].unsqueeze(0)."),
    # --- encoder layer (06) ---
    Mistake("norm-order-swapped",
            "Pre-LN and Post-LN are mixed up: Pre-LN (norm_first=True, and the ViT block) "
            "normalises each sublayer's input, Post-LN (norm_first=False) the residual sum.",
            "Post-LN: x = norm(x + f(x)). Pre-LN: x = x + f(norm(x))."),
    Mistake("missing-residual",
            "A residual connection is missing: the sublayer's output must be added to its "
            "input.",
            "x = x + sublayer(...) (Pre-LN) or norm(x + sublayer(x)) (Post-LN)."),
    Mistake("residual-from-normed",
            "In Pre-LN the residual added the normalised x instead of the un-normalised one.",
            "h = norm(x); x = x + f(h): add f(h) to x, not to h."),
    Mistake("shared-layer-weights",
            "The stack's layers (encoder or decoder) share weights, with each other or with "
            "the layer passed in; each must be an independent deep copy.",
            "nn.ModuleList(copy.deepcopy(layer) for _ in range(num_layers))."),
    Mistake("activation-misplaced",
            "The activation is in the wrong place (or missing): it goes between linear1 and "
            "linear2, nowhere else.",
            "linear2(dropout(activation(linear1(x))))."),
    Mistake("mask-not-forwarded",
            "A mask was not passed on to its attention (e.g. src_mask, tgt_mask or a key "
            "padding mask), or not to every layer.",
            "self_attn(x, x, x, attn_mask=src_mask, key_padding_mask=src_key_padding_mask), "
            "and every layer of a stack gets the masks."),
    Mistake("final-norm-missing",
            "The stack's final norm (the encoder's or decoder's norm) was not applied.",
            "if self.norm is not None: output = self.norm(output)."),
    # --- key/value cache (11) ---
    Mistake("causal-mask-missing",
            "No causal mask in the (decoder's or cached) self-attention: each position could "
            "see the positions after it.",
            "Block key j for query i when j > i (with a cache of s positions before the "
            "chunk: j > s + i), e.g. torch.ones(t, t, dtype=torch.bool).triu(1) (True = "
            "blocked) or nn.Transformer.generate_square_subsequent_mask(t)."),
    # --- RoPE (12, 15), grouped-query heads (13, 15), masks (04, 15), norms (06, 15) ---
    Mistake("rope-pairs-mismatch",
            "The wrong features were paired: halves (i, i + d/2) where interleaved pairs "
            "(2i, 2i+1) were asked, or the reverse, or a cos/sin table laid out for one "
            "pairing used with the other, or pairs read one way and written back the other "
            "(the right values with the features permuted).",
            "Default (rotate half): x1, x2 = x[..., :d/2], x[..., d/2:], results concatenated. "
            "interleaved=True: x1, x2 = x[..., 0::2], x[..., 1::2], results interleaved back."),
    Mistake("rope-wrong-frequency",
            "The angles are off: pair i turns by position * base^(-2i / head_dim), with "
            "the frequencies right and computed at least in float32 (in float16 or bfloat16 "
            "an angle is already off by a large fraction of a radian at positions in the "
            "hundreds).",
            "pair = arange(head_dim // 2); inv_freq = base ** (-2 * pair / head_dim) - mind "
            "the brackets, and with arange(0, head_dim, 2) the 2 is already in it. Compute "
            "the angles in float32 or float64 whatever x's dtype; cast only cos and sin to "
            "x.dtype."),
    Mistake("rope-rotation-reversed",
            "The rotation goes the wrong way (by -θ): the signs of the sin terms are swapped.",
            "(x1, x2) -> (x1 cos θ - x2 sin θ, x1 sin θ + x2 cos θ); in rotate-half form "
            "x * cos + cat(-x2, x1) * sin."),
    Mistake("rope-positions-ignored",
            "The positions given were ignored: the angles are those of 0 ... n-1 (or of "
            "another batch row's positions).",
            "Use positions when it is not None: (n,) for the whole batch, (b, n) one row per "
            "batch element, broadcast over heads as (b, 1, n, d/2)."),
    Mistake("swiglu-gate-swapped",
            "SiLU was applied to the up projection instead of the gate: the gate is the branch "
            "that goes through the activation (Llama's gate_proj, Mixtral's w1; up_proj and w3 "
            "are the other branch).",
            "down_proj(F.silu(gate_proj(x)) * up_proj(x)); in Mixtral's names, "
            "w2(F.silu(w1(x)) * w3(x))."),
    Mistake("kv-heads-tiled",
            "The key/value heads were tiled (repeat) instead of repeated in place "
            "(repeat_interleave): query head j got kv head j % num_kv_heads instead of "
            "j // (num_heads // num_kv_heads).",
            "Consecutive query heads share a kv head: k.repeat_interleave(num_heads // "
            "num_kv_heads, dim=1) on (b, num_kv_heads, n, d), not k.repeat(1, group, 1, 1)."),
    Mistake("causal-mask-transposed",
            "The causal mask blocks the past instead of the future: query i may see the keys "
            "after it and not those before (torch.tril where torch.triu belongs).",
            "Block key j > query i, strictly above the diagonal: "
            "torch.triu(torch.full((size, size), float('-inf')), diagonal=1)."),
    Mistake("norm-inside-residual",
            "The norm was applied to the sublayer's output inside the residual, x + norm(f(x)): "
            "neither Post-LN nor Pre-LN, and the residual stream itself is never normalised.",
            "Post-LN normalises the sum, x = norm(x + f(x)); Pre-LN normalises the sublayer's "
            "input, x = x + f(norm(x))."),
    # --- log-sum-exp (14, 19) ---
    Mistake("lse-wrong",
            "The log-sum-exp is off: it is the natural log of sum_j exp(s_ij) over each "
            "query's scaled scores (the keys it sees); computed block by block, m + log(l) "
            "with the final running maximum m and sum l.",
            "lse = torch.logsumexp(scores, dim=-1) over the scaled, masked scores (block by "
            "block: m + torch.log(l) after the last block; not log(l) alone, nor m alone, "
            "nor in base 2)."),
    # --- memory rules (14, 18) ---
    Mistake("full-score-matrix",
            "A tensor the size of the whole (n, m) score matrix (all the scores, or an (n, m) "
            "mask) was built: flash attention only ever holds one (n, block_size) block of "
            "scores (the GPU kernel also tiles the queries, holding B_r × B_c tiles in SRAM), "
            "sliding-window attention one band of (n, window + num_sinks) scores.",
            "Flash attention: loop over key blocks k[..., start:start + block_size, :] and "
            "compute q @ k_block.transpose(-2, -1) per block. Sliding window: score each query "
            "against the keys it may see only (a band, or query blocks against their keys)."),
    # --- shared by every kata ---
    Mistake("forbidden-builtin",
            "The solution called a PyTorch built-in that does this kata's work for you.",
            "Write the computation yourself with matmul / softmax / linear."),
    # --- sampling (16, 21) ---
    Mistake("sampling-ignores-generator",
            "The draws did not come from the generator given: they used (or also moved) "
            "the global RNG, so the same generator state does not reproduce them.",
            "Pass generator=generator to every random call (torch.multinomial(probs, 1, "
            "generator=g), torch.rand(..., generator=g)); no *_like random helpers, which "
            "take no generator."),
    Mistake("input-modified-in-place",
            "An input was modified in place: the logits (logits /= T, masked_fill_, an "
            "in-place sort) or the prefix (a token written into it, a resize). The caller may "
            "still need it, e.g. for the next step or a second sample.",
            "Build new tensors: logits / T, logits.masked_fill(remove, float('-inf')), "
            "torch.cat([prefix, token])."),
    # --- the key/value cache (11, 23) ---
    Mistake("causal-mask-offset",
            "The causal mask was not shifted by the cache length s: new query i sits at "
            "position s + i and must see every cached key, but the mask was aligned top-left "
            "(as is_causal=True aligns it).",
            "For scores (t, s + t) block key j of query i when j > s + i: "
            "torch.ones(t, s + t, dtype=torch.bool).triu(diagonal=s + 1)."),
    Mistake("cache-modified-in-place",
            "A cache was modified in place: the one passed in (its values, its shape, or the "
            "storage behind it), or one returned earlier, overwritten by a later call; a "
            "caller may branch from one cache twice, as beam search does.",
            "Build the new cache with torch.cat, which returns a new tensor, under "
            "torch.no_grad() too; never write into (or resize, or .data-assign) the tensors "
            "you were given, nor into a buffer behind a cache you returned."),
    # --- the next-token shift and the response mask (26, 29, 30) ---
    Mistake("labels-not-shifted",
            "The labels were not shifted: the logits at position t were scored against the "
            "token at t (the one the model was given) instead of the token at t + 1 (the one "
            "it must predict).",
            "Pair logits[:, :-1] with labels[:, 1:]; the last position predicts nothing."),
    Mistake("padding-counted",
            "Positions outside the mask were counted: padding (or prompt) tokens added their "
            "terms to the sum, or their number to the count it was divided by.",
            "Multiply each token's term by the mask as a float and divide by the mask's sum, "
            "never by the sequence length."),
)

MISTAKES: dict[str, Mistake] = {
    m.slug: m for m in (*SHARED, *(mistake for meta in registry.METAS for mistake in meta.MISTAKES))}

# A shared mistake in one kata's own terms (kata 25's causal-mask-offset speaks of m_j − n_j,
# not of kata 11's cache length s): (kata id, slug) -> its entry, from each meta's WORDINGS.
WORDINGS: dict[tuple[str, str], Mistake] = {
    (meta.KATA.id, m.slug): m for meta in registry.METAS for m in getattr(meta, "WORDINGS", ())}

_grading: list[str | None] = []  # the kata whose checks run now (graders.core.plugin)


def mistake(slug: str, kata_id: str | None = None) -> Mistake:
    """The entry for ``slug`` in the words of kata ``kata_id`` (by default the kata whose
    check runs now), or the catalogue's own where that kata has none."""
    if kata_id is None and _grading:
        kata_id = _grading[-1]
    return WORDINGS.get((kata_id, slug)) or MISTAKES[slug]


@contextlib.contextmanager
def grading(kata_id: str | None) -> Iterator[None]:
    """While a check of kata ``kata_id`` runs, :func:`mistake` speaks in its words."""
    _grading.append(kata_id)
    try:
        yield
    finally:
        _grading.pop()
