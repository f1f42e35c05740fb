"""The catalogue of recognised mistakes: slug -> one sentence of explanation and a hint.

Slugs are stable identifiers (see CONTRACT.md, section 4). Graders recognise a
mistake by *behaviour* (graders.core.mistakes); this module only holds the words.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mistake:
    slug: str
    explanation: str
    hint: str


_ENTRIES = (
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
            "to 1 over the keys.",
            "Use softmax(dim=-1) on scores of shape (..., n_queries, m_keys)."),
    Mistake("mask-inverted",
            "The boolean mask was read the wrong way round: True means *blocked* here (as "
            "in nn.MultiheadAttention), not 'may attend'.",
            "True means blocked: masked_fill(mask, float('-inf')) with the mask as given (no "
            "~); a mask you build is True (or -inf) where attending is not allowed."),
    Mistake("mask-after-softmax",
            "The mask was applied after the softmax, so the remaining weights no longer sum "
            "to 1.",
            "Fill the blocked *scores* with -inf, then take the softmax."),
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
    Mistake("qkv-chunk-order",
            "in_proj_weight was cut in the wrong order; PyTorch stacks it q, k, v.",
            "W_q, W_k, W_v = in_proj_weight.chunk(3) (and the same for in_proj_bias)."),
    Mistake("missing-bias",
            "A projection bias was left out: in_proj_bias (or one of its thirds) or "
            "out_proj's bias.",
            "F.linear(x, W_q, b_q) with the matching third of in_proj_bias, and keep "
            "out_proj's bias."),
    Mistake("batch-first-ignored",
            "batch_first was ignored: (batch, seq, E) inputs were treated as (seq, batch, E) "
            "or the other way round.",
            "With batch_first=False transpose(0, 1) on the way in and on the way out."),
    Mistake("weights-averaged",
            "The attention weights were averaged over heads; this kata returns them per "
            "head, (b, h, n, m).",
            "Return the weights before any .mean(dim=1)."),
    Mistake("dropout-in-eval",
            "Dropout was applied in eval mode; it must act only while training.",
            "Use nn.Dropout (module.eval() switches it off) or "
            "F.dropout(x, p, training=self.training)."),
    # --- masks (04) ---
    Mistake("padding-mask-head-order",
            "The key padding mask was repeated over heads in the wrong order, so heads "
            "got another batch element's padding.",
            "Rows are batch-major (i*h + j): use repeat_interleave(num_heads, dim=0), or "
            "view (b, 1, 1, m) -> expand (b, h, 1, m) -> reshape (b*h, 1, m)."),
    Mistake("causal-diagonal",
            "The causal mask's diagonal is wrong: a token must see itself but no later "
            "token.",
            "torch.triu(..., diagonal=1) blocks strictly above the diagonal."),
    Mistake("causal-mask-transposed",
            "The causal mask blocks the past instead of the future: query i may see the keys "
            "after it and not those before (torch.tril where torch.triu belongs).",
            "Block key j > query i, strictly above the diagonal: "
            "torch.triu(torch.full((size, size), float('-inf')), diagonal=1)."),
    Mistake("mask-and-instead-of-or",
            "The masks were combined with AND: a position must be blocked when *either* "
            "mask blocks it.",
            "Combine bool masks with |, or add their -inf/0 float forms."),
    Mistake("float-mask-as-bool",
            "A float attn_mask was treated as a yes/no mask; its values must be added to "
            "the logits.",
            "Only a torch.bool mask becomes -inf/0; a float mask is added as it is."),
    # --- positional encoding (05) ---
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
    Mistake("positions-from-one",
            "Positions were counted from 1; the first row of the table is position 0 "
            "(all sin 0, cos 1).",
            "torch.arange(max_len), not arange(1, max_len + 1)."),
    Mistake("pe-not-buffer",
            "The table is not a registered buffer: it is a parameter (trained, and counted "
            "as a weight) or a plain attribute (left behind by .to()).",
            "self.register_buffer('pe', table)."),
    Mistake("pe-dropout-rate",
            "The positional encoding's dropout does not use the model's rate: it acts on the "
            "sum, but at a rate of its own (kata 05's default 0.1, say) or not at all.",
            "Give it the model's dropout: PositionalEncoding(d_model, dropout, max_len). One "
            "rate for the whole model, like nn.Transformer's dropout."),
    Mistake("pe-wrong-axis",
            "The table was added along the wrong axis of x (batch instead of sequence).",
            "(seq, batch, d) needs pe[:seq].unsqueeze(1); (batch, seq, d) needs "
            "pe[:seq].unsqueeze(0)."),
    # --- encoder layer (06) ---
    Mistake("norm-order-swapped",
            "Pre-LN and Post-LN are mixed up: Pre-LN (norm_first=True, and the ViT block) "
            "normalises each sublayer's input, Post-LN (norm_first=False) the residual sum.",
            "Post-LN: x = norm(x + f(x)). Pre-LN: x = x + f(norm(x))."),
    Mistake("norm-inside-residual",
            "The norm was applied to the sublayer's output inside the residual, x + norm(f(x)): "
            "neither Post-LN nor Pre-LN, and the residual stream itself is never normalised.",
            "Post-LN normalises the sum, x = norm(x + f(x)); Pre-LN normalises the sublayer's "
            "input, x = x + f(norm(x))."),
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
    # --- FLOPs (07) ---
    Mistake("macs-not-flops",
            "Multiply-adds were counted instead of FLOPs: the answer is off by exactly a "
            "factor 2.",
            "A (p, q) @ (q, r) product is 2*p*q*r FLOPs: one multiply and one add each."),
    Mistake("missing-out-proj-flops",
            "The output projection's matmul was left out of the count.",
            "There are four d x d projections: q, k, v and out."),
    Mistake("missing-attention-flops",
            "The attention matmuls (QK^T and weights @ V) were left out of the count.",
            "They add 2 * 2*l*l*d per batch element: quadratic in the sequence length."),
    Mistake("per-head-divided",
            "The count was divided (or multiplied) by the number of heads; the head count "
            "cancels out.",
            "h heads of width d/h cost as much as one head of width d."),
    Mistake("bias-not-counted",
            "The bias vectors were left out of the parameter count.",
            "Four d x d weights plus four length-d biases: 4d^2 + 4d."),
    Mistake("batch-ignored",
            "The batch size was left out: every sequence in the batch is computed (and "
            "stored) separately.",
            "Multiply by batch_size."),
    # --- Vision Transformer (10) ---
    Mistake("patch-flatten-without-transpose",
            "The conv's grid (B, D, H/p, W/p) became tokens without moving D last: flattened "
            "and left (B, D, N), or reshaped straight to (B, N, D), which mixes one channel of "
            "several patches into each token.",
            "self.proj(x).flatten(2).transpose(1, 2): (B, D, N) first, then move D last."),
    Mistake("qkv-reshape-order",
            "qkv(x) was read as (B, N, h, 3, d) instead of (B, N, 3, h, d): its output "
            "features are all of q, then all of k, then all of v.",
            "reshape(B, N, 3, num_heads, head_dim).permute(2, 0, 3, 1, 4): the 3 is the outer "
            "factor."),
    Mistake("gelu-tanh-approximation",
            "The MLP used the tanh approximation of GELU; the ViT block uses the exact (erf) "
            "GELU, nn.GELU() with its default approximate='none'.",
            "self.act = nn.GELU(), or F.gelu(x) without approximate='tanh'."),
    Mistake("drop-path-not-rescaled",
            "DropPath zeroed samples but did not divide the kept ones by 1 - p, so the "
            "branch's expected value shrinks in training.",
            "keep = keep / (1 - p) when scale_by_keep (and p < 1), then return x * keep."),
    Mistake("drop-path-in-eval",
            "DropPath dropped samples in eval mode; stochastic depth acts only while training.",
            "if self.drop_prob == 0.0 or not self.training: return x."),
    Mistake("drop-path-per-element",
            "DropPath drew its keep/drop decision per element (or per token); it must keep or "
            "drop each sample's whole residual branch.",
            "Draw a mask of shape (B, 1, 1, ...): x.new_empty((x.shape[0],) + (1,) * (x.ndim - "
            "1)).bernoulli_(1 - p)."),
    # --- key/value cache (11) ---
    Mistake("cache-not-updated",
            "The returned cache was not extended with the new positions: it is the cache "
            "that came in (or None), or only the new positions' keys and values.",
            "Return (torch.cat([past_k, k], dim=2), torch.cat([past_v, v], dim=2)): every "
            "position so far, s + t of them; with no cache, the new k and v."),
    Mistake("cache-wrong-dim",
            "The new keys and values were appended along the wrong axis of the cache (heads, "
            "batch or features instead of positions).",
            "The cache is (b, h, s, head_dim): positions are dim 2, so torch.cat(..., dim=2) "
            "(or dim=-2)."),
    Mistake("causal-mask-offset",
            "The causal mask was not shifted by the cache length s: new query i sits at "
            "position s + i and must see every cached key, but the mask was aligned top-left "
            "(as is_causal=True aligns it).",
            "For scores (t, s + t) block key j of query i when j > s + i: "
            "torch.ones(t, s + t, dtype=torch.bool).triu(diagonal=s + 1)."),
    Mistake("causal-mask-missing",
            "No causal mask in the (decoder's or cached) self-attention: each position could "
            "see the positions after it.",
            "Block key j for query i when j > i (with a cache of s positions before the "
            "chunk: j > s + i), e.g. torch.ones(t, t, dtype=torch.bool).triu(1) (True = "
            "blocked) or nn.Transformer.generate_square_subsequent_mask(t)."),
    Mistake("cache-modified-in-place",
            "The cache passed in was modified in place (its values, its shape, or the "
            "storage behind it); a caller may branch from one cache twice, as beam search "
            "does.",
            "Build the new cache with torch.cat, which returns a new tensor; never write into "
            "(or resize, or .data-assign) the tensors you were given."),
    # --- rotary position embedding (12) ---
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
    Mistake("rope-cos-sin-swapped",
            "cos and sin are swapped in the rotation.",
            "x1' = x1 cos θ - x2 sin θ, x2' = x1 sin θ + x2 cos θ: at position 0 (θ = 0) the "
            "vector must come out unchanged."),
    # --- the whole Transformer and greedy decoding (09) ---
    Mistake("embedding-not-scaled",
            "The token embeddings were not multiplied by sqrt(d_model) before the positions "
            "were added (or were scaled by something else, or after the positions).",
            "x = embedding(tokens) * math.sqrt(d_model), then add the positional encoding."),
    Mistake("positional-encoding-missing",
            "The positional encoding was not added to the source or the target embeddings, "
            "so the model cannot tell the token order.",
            "Send both embeddings through the same positional_encoding: "
            "positional_encoding(embedding(tokens) * math.sqrt(d_model))."),
    Mistake("src-padding-mask-missing",
            "The encoder got no src_key_padding_mask, so real source tokens attended to "
            "padding.",
            "encoder(x, src_key_padding_mask=src == pad_idx)."),
    Mistake("tgt-padding-mask-missing",
            "The decoder's self-attention got no tgt_key_padding_mask, so target tokens "
            "attended to padding inside the target.",
            "decoder(..., tgt_key_padding_mask=tgt == pad_idx), next to the causal tgt_mask."),
    Mistake("memory-padding-mask-missing",
            "The decoder's cross-attention got no memory_key_padding_mask, so the target "
            "attended to the source's padded positions.",
            "decoder(..., memory_key_padding_mask=src == pad_idx): the same mask as the "
            "encoder's."),
    Mistake("decode-wrong-position",
            "Greedy decoding took the argmax at a position other than the last one.",
            "The next token is predicted by the last position: "
            "generator(decode(ys, memory, src)[:, -1]).argmax(-1)."),
    Mistake("decode-continues-after-eos",
            "Greedy decoding went on after eos: a finished row's later tokens are not "
            "pad_idx, or the loop did not stop once every row had produced eos.",
            "Keep a finished flag per row: masked_fill(finished, model.pad_idx) on each new "
            "token, and break as soon as finished.all()."),
    Mistake("generator-softmax",
            "forward returned probabilities or log-probabilities instead of the generator's "
            "raw logits.",
            "Return self.generator(decoded) as it is: nn.CrossEntropyLoss applies "
            "log-softmax itself."),
    # --- decoder layer (08) ---
    Mistake("cross-attention-query-from-memory",
            "The cross-attention took its queries from memory; they come from the target, "
            "and only the keys and values come from memory.",
            "multihead_attn(x, memory, memory, ...): query first, then key and value."),
    Mistake("tgt-mask-in-cross-attention",
            "The masks went to the wrong attention: tgt_mask belongs to the self-attention "
            "and memory_mask to the cross-attention.",
            "self_attn(..., attn_mask=tgt_mask); multihead_attn(..., attn_mask=memory_mask)."),
    Mistake("padding-masks-swapped",
            "The padding masks went to the wrong attention: tgt_key_padding_mask blocks "
            "target keys in the self-attention, memory_key_padding_mask memory keys in the "
            "cross-attention.",
            "Each key padding mask goes with its keys: the target's to self_attn, the "
            "memory's to multihead_attn."),
    Mistake("cross-attention-missing",
            "The cross-attention to memory is missing (skipped, or its keys and values came "
            "from the target), so the output ignores memory.",
            "Between self-attention and feed-forward: x = x + multihead_attn(x, memory, "
            "memory, ...) with its own residual and norm2."),
    Mistake("shared-attention-weights",
            "One attention module served as both self-attention and cross-attention; they "
            "are two modules with their own weights.",
            "Build two: self.self_attn = nn.MultiheadAttention(...) and self.multihead_attn "
            "= nn.MultiheadAttention(...)."),
    # --- shared by every kata ---
    Mistake("forbidden-builtin",
            "The solution called a PyTorch built-in that does this kata's work for you.",
            "Write the computation yourself with matmul / softmax / linear."),
    # --- grouped-query attention (13) ---
    Mistake("kv-heads-tiled",
            "The key/value heads were tiled (repeat) instead of repeated in place "
            "(repeat_interleave): query head j got kv head j % num_kv_heads instead of "
            "j // (num_heads // num_kv_heads).",
            "Consecutive query heads share a kv head: k.repeat_interleave(num_heads // "
            "num_kv_heads, dim=1) on (b, num_kv_heads, n, d), not k.repeat(1, group, 1, 1)."),
    Mistake("kv-proj-full-width",
            "k_proj and v_proj project to the full width E; in GQA they project to "
            "num_kv_heads * head_dim, which is the whole point (fewer kv heads to cache).",
            "nn.Linear(embed_dim, num_kv_heads * head_dim) for k_proj and v_proj, "
            "head_dim = embed_dim // num_heads."),
    Mistake("kv-cache-missing-values",
            "Only the keys were counted: the cache holds the values too (twice as many bytes).",
            "Multiply by 2: keys and values, each (batch, num_kv_heads, seq_len, head_dim) per "
            "layer."),
    Mistake("kv-cache-per-query-head",
            "The cache was sized with num_heads key/value heads; only num_kv_heads are stored.",
            "Query heads share kv heads: 2 * batch * seq_len * layers * num_kv_heads * head_dim "
            "* bytes per element."),
    Mistake("kv-cache-dtype-ignored",
            "The bytes per element were not taken from dtype (e.g. 2 assumed whatever the "
            "dtype): float16 and bfloat16 take 2 bytes, float32 4, float64 8.",
            "torch.empty((), dtype=dtype).element_size(), or dtype.itemsize."),
    # --- flash attention (14) ---
    Mistake("accumulator-not-rescaled",
            "When the running maximum grew, the output accumulator (or the running sum) was "
            "not rescaled by exp(old_max - new_max), so earlier blocks keep a wrong weight.",
            "alpha = exp(m_old - m_new); l = alpha * l + p.sum(-1); acc = alpha * acc + p @ v_block."),
    Mistake("running-max-missing",
            "The exponentials were taken without subtracting a running maximum (or from one "
            "that starts at 0, or that stops being updated after the first block), so large "
            "scores overflow to inf or small ones underflow to 0.",
            "Start the running maximum at -inf and take exp(scores - m_new) with m_new = "
            "max(m_old, scores.amax(-1))."),
    Mistake("normalized-per-block",
            "Each block was normalised by its own sum (a softmax per block) instead of by the "
            "sum over all keys.",
            "Accumulate unnormalised exp(scores - m) @ v and the running sum l; divide by l "
            "once, after the last block."),
    Mistake("lse-wrong",
            "The returned log-sum-exp is off: it is the natural log of sum_j exp(s_ij) over "
            "the scaled scores, i.e. m + log(l) with the final running maximum m and sum l.",
            "lse = m + torch.log(l) after the last block (not log(l) alone, nor m alone, nor "
            "in base 2)."),
    Mistake("causal-block-off-by-one",
            "The causal mask inside a key block is misplaced (off by one, or by the block's "
            "start): query i must see keys 0..i, the diagonal included, and no later key.",
            "Compare global indices: key start + t of the block is blocked for query i when "
            "start + t > i."),
    Mistake("full-score-matrix",
            "A tensor the size of the whole (n, m) score matrix (all the scores, or an (n, m) "
            "mask) was built: this kata's loop only ever holds one (n, block_size) block of "
            "scores (the GPU kernel also tiles the queries, holding B_r × B_c tiles in SRAM).",
            "Loop over key blocks k[..., start:start + block_size, :] and compute "
            "q @ k_block.transpose(-2, -1) per block."),
)

# --- the backward pass of attention (19) (moves to graders/attention_backward/meta.py with the layout step) ---
_ENTRIES += (
    Mistake("softmax-jacobian-missing-d",
            "The softmax's backward was taken as dS = P ∘ dP: the softmax's Jacobian also "
            "has a term from the normalisation, so every row loses D_i = Σ_j P_ij dP_ij.",
            "dS = P ∘ (dP - D) with D = rowsum(dO ∘ O), one number per query."),
    Mistake("missing-scale-in-grad",
            "dQ or dK lacks the 1/sqrt(d) factor: the scores were S = s q kᵀ, so the chain "
            "rule brings s back into both of their gradients.",
            "dQ = s · dS K and dK = s · dSᵀ Q, with s = 1 / math.sqrt(d)."),
    Mistake("dk-not-transposed",
            "dK was computed from dS instead of dSᵀ: dS is (queries, keys), and dK needs one "
            "row per key (with n != m the product does not even fit).",
            "dK = s · dS.transpose(-2, -1) @ Q: (b, h, m, n) @ (b, h, n, d)."),
    Mistake("dv-not-transposed",
            "dV was computed as P dO instead of Pᵀ dO: P is (queries, keys), and dV needs one "
            "row per key (with n != m the product does not even fit).",
            "dV = P.transpose(-2, -1) @ dO: (b, h, m, n) @ (b, h, n, d)."),
    Mistake("causal-mask-missing-in-backward",
            "The recomputed probabilities are not causally masked (everywhere, or in the tiles "
            "on the diagonal): P = exp(S - lse) gives future keys weight unless their scores "
            "are -inf as in the forward.",
            "Mask S with -inf where key > query before exp(S - lse), in every tile that "
            "crosses the diagonal, from the tile's global indices."),
    Mistake("lse-not-subtracted",
            "P was recomputed as exp(S), without subtracting the forward's log-sum-exp: those "
            "are unnormalised weights (and overflow for large scores).",
            "P = torch.exp(S - lse[..., None]): exactly the forward's softmax, row by row."),
    Mistake("saves-probabilities",
            "The forward kept an (n, m) tensor (the probabilities, the scores or a mask) in "
            "ctx: that is the O(n·m) memory FlashAttention's backward avoids by recomputing P.",
            "ctx.save_for_backward(q, k, v, out, lse) and nothing larger; recompute P = "
            "exp(S - lse) in the backward."),
    Mistake("autograd-in-backward",
            "The backward called autograd (torch.autograd.grad, .backward() or a torch.func "
            "transform) instead of computing the gradients by hand.",
            "Write dV, dP, D, dS, dQ and dK from the formulas with matmuls and elementwise "
            "ops only."),
    Mistake("d-from-wrong-terms",
            "D, the softmax's correction per query, was built from the wrong terms: it is "
            "Σ_j P_ij dP_ij over all the keys (= rowsum(dO ∘ O)), not rowsum(dP), not "
            "rowsum(dO), not a sum over one key block.",
            "D = (dO * O).sum(-1, keepdim=True), computed once before the loop over tiles."),
)

MISTAKES: dict[str, Mistake] = {m.slug: m for m in _ENTRIES}
