"""The catalogue of recognised mistakes: slug -> one sentence of explanation and a hint.

Slugs are stable identifiers (see ../shared/KATAS.md, section 4). Graders recognise a
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
            "True means blocked (or padded): masked_fill(mask, float('-inf')) with the mask as "
            "given, and padding is position >= length."),
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
            "A query whose keys are all blocked gave NaN; the contract says its weights are "
            "all zero.",
            "After the softmax, zero the rows where every key is blocked, e.g. "
            "torch.where(all_blocked, 0.0, weights); with nn.MultiheadAttention, pass "
            "need_weights=False."),
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
            ".view() was called on a transposed (non-contiguous) tensor, which PyTorch "
            "refuses.",
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
            "Write base ** (2 * i / d_model), or exp(-(2i/d_model) * log(base))."),
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
    Mistake("pe-wrong-axis",
            "The table was added along the wrong axis of x (batch instead of sequence).",
            "(seq, batch, d) needs pe[:seq].unsqueeze(1); (batch, seq, d) needs "
            "pe[:seq].unsqueeze(0)."),
    # --- encoder layer (06) ---
    Mistake("norm-order-swapped",
            "Pre-LN and Post-LN are mixed up: norm_first=True normalises before each "
            "sublayer, False after the residual sum.",
            "Post-LN: x = norm(x + f(x)). Pre-LN: x = x + f(norm(x))."),
    Mistake("missing-residual",
            "A residual connection is missing: the sublayer's output must be added to its "
            "input.",
            "x = x + sublayer(...) (Pre-LN) or norm(x + sublayer(x)) (Post-LN)."),
    Mistake("residual-from-normed",
            "In Pre-LN the residual added the normalised x instead of the un-normalised one.",
            "h = norm(x); x = x + f(h): add f(h) to x, not to h."),
    Mistake("shared-layer-weights",
            "The stack's layers (encoder or decoder) share one set of weights; each must be an "
            "independent copy.",
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
)

MISTAKES: dict[str, Mistake] = {m.slug: m for m in _ENTRIES}
