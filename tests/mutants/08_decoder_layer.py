"""Kata 08's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

SA_CALL = "            x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False"
CA_CALL = "            x, memory, memory, attn_mask=attn_mask, key_padding_mask=key_padding_mask,"
PRE_SA = "            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask)"
PRE_CA = "            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask)"
PRE_FF = "            x = x + self._ff_block(self.norm3(x))"
POST_SA = "            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask))"
POST_CA = "            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask))"
POST_FF = "            x = self.norm3(x + self._ff_block(x))"
DEEPCOPY = "        self.layers = nn.ModuleList(copy.deepcopy(decoder_layer) for _ in range(num_layers))"


def both(old: str, new: str, pre: bool = True, post: bool = True) -> list[tuple[str, str]]:
    """The same edit of the Pre-LN and the Post-LN line of a sub-block."""
    return [(o, n) for o, n, keep in ((old[0], new[0], pre), (old[1], new[1], post)) if keep]


MUTANTS = [
    Mutant(
        'cross-attention-query-from-memory',
        why='the cross-attention is called as multihead_attn(memory, x, x): memory asks, the '
            'target answers.',
        edits=[(CA_CALL, "            memory, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,")],
    ),
    Mutant(
        'cross-attention-query-from-memory',
        variant='memory_only',
        why='the cross-attention attends memory to itself: multihead_attn(memory, memory, memory).',
        edits=[(CA_CALL, "            memory, memory, memory, attn_mask=attn_mask, key_padding_mask=key_padding_mask,")],
    ),
    Mutant(
        'tgt-mask-in-cross-attention',
        why='the causal tgt_mask is given to the cross-attention too (and memory_mask nowhere).',
        edits=both((PRE_CA, POST_CA), (PRE_CA.replace("memory, memory_mask", "memory, tgt_mask"),
                                       POST_CA.replace("memory, memory_mask", "memory, tgt_mask"))),
    ),
    Mutant(
        'tgt-mask-in-cross-attention',
        variant='swapped',
        why='tgt_mask and memory_mask are swapped between the two attentions.',
        edits=both((PRE_SA, POST_SA), (PRE_SA.replace("tgt_mask,", "memory_mask,"),
                                       POST_SA.replace("tgt_mask,", "memory_mask,")))
        + both((PRE_CA, POST_CA), (PRE_CA.replace("memory, memory_mask", "memory, tgt_mask"),
                                   POST_CA.replace("memory, memory_mask", "memory, tgt_mask"))),
    ),
    Mutant(
        'tgt-mask-in-cross-attention',
        variant='memory_mask_in_self_attention',
        why='the self-attention gets memory_mask instead of tgt_mask.',
        edits=both((PRE_SA, POST_SA), (PRE_SA.replace("tgt_mask,", "memory_mask,"),
                                       POST_SA.replace("tgt_mask,", "memory_mask,"))),
    ),
    Mutant(
        'padding-masks-swapped',
        why='the two key padding masks are swapped between the attentions.',
        edits=both((PRE_SA, POST_SA), (PRE_SA.replace("tgt_key_padding_mask", "memory_key_padding_mask"),
                                       POST_SA.replace("tgt_key_padding_mask", "memory_key_padding_mask")))
        + both((PRE_CA, POST_CA), (PRE_CA.replace("memory_key_padding_mask", "tgt_key_padding_mask"),
                                   POST_CA.replace("memory_key_padding_mask", "tgt_key_padding_mask"))),
    ),
    Mutant(
        'padding-masks-swapped',
        variant='target_padding_on_memory',
        why="the cross-attention gets tgt_key_padding_mask: the target's padding used on memory keys.",
        edits=both((PRE_CA, POST_CA), (PRE_CA.replace("memory_key_padding_mask", "tgt_key_padding_mask"),
                                       POST_CA.replace("memory_key_padding_mask", "tgt_key_padding_mask"))),
    ),
    Mutant(
        'padding-masks-swapped',
        variant='memory_padding_on_target',
        why='the self-attention gets memory_key_padding_mask instead of the target\'s.',
        edits=both((PRE_SA, POST_SA), (PRE_SA.replace("tgt_key_padding_mask", "memory_key_padding_mask"),
                                       POST_SA.replace("tgt_key_padding_mask", "memory_key_padding_mask"))),
    ),
    Mutant(
        'padding-masks-swapped',
        variant='own_attention',
        base='own_attention',
        why="a hand-written attention's self-attention gets memory_key_padding_mask (with "
            "lengths that differ it raises inside the learner's own code).",
        edits=[("self.self_attn(x, x, tgt_mask, tgt_key_padding_mask)",
                "self.self_attn(x, x, tgt_mask, memory_key_padding_mask)")],
    ),
    Mutant(
        'tgt-mask-in-cross-attention',
        variant='own_attention',
        base='own_attention',
        why="a hand-written attention's cross-attention gets tgt_mask instead of memory_mask.",
        edits=[("self.multihead_attn(x, memory, memory_mask, memory_key_padding_mask)",
                "self.multihead_attn(x, memory, tgt_mask, memory_key_padding_mask)")],
    ),
    Mutant(
        'cross-attention-query-from-memory',
        variant='own_attention',
        base='own_attention',
        why="a hand-written cross-attention is called as multihead_attn(memory, x): memory asks.",
        edits=[("self.multihead_attn(x, memory, memory_mask, memory_key_padding_mask)",
                "self.multihead_attn(memory, x, memory_mask, memory_key_padding_mask)")],
    ),
    Mutant(
        'cross-attention-missing',
        why='the forward pass skips the cross-attention block (copied from the encoder layer).',
        edits=[(PRE_CA + "\n", ""), (POST_CA + "\n", "")],
    ),
    Mutant(
        'cross-attention-missing',
        variant='block_list',
        why='runs the sub-blocks from a list of (norm, block) pairs, Pre-LN or Post-LN, and the '
            'list leaves out the cross-attention: [(norm1, self-attention), (norm2, '
            'feed-forward)], norm3 unused.',
        edits=[("        if self.norm_first:\n" + PRE_SA + "\n" + PRE_CA + "\n" + PRE_FF + "\n        else:\n"
                + POST_SA + "\n" + POST_CA + "\n" + POST_FF + "\n",
                "        blocks = [\n"
                "            (self.norm1, lambda y: self._sa_block(y, tgt_mask, tgt_key_padding_mask)),\n"
                "            (self.norm2, self._ff_block),\n"
                "        ]\n"
                "        for norm, block in blocks:\n"
                "            x = x + block(norm(x)) if self.norm_first else norm(x + block(x))\n")],
    ),
    Mutant(
        'cross-attention-missing',
        variant='norm_kept',
        why='deletes the cross-attention from the Post-LN line and keeps its norm: '
            'x = self.norm2(x).',
        edits=[(POST_CA, "            x = self.norm2(x)")],
    ),
    Mutant(
        'cross-attention-missing',
        variant='keys_from_target',
        why='the cross-attention takes its keys and values from the target: multihead_attn(x, x, x).',
        edits=[(CA_CALL, "            x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,")],
    ),
    Mutant(
        'cross-attention-missing',
        variant='attentions_in_a_plain_list',
        why='keeps the attention modules in a plain Python list (unregistered, so not in the '
            'state dict) and, copying the encoder layer, never calls the cross-attention.',
        edits=[("""        self.self_attn = nn.MultiheadAttention(
            d_model, nhead, dropout=dropout, batch_first=batch_first
        )
        self.multihead_attn = nn.MultiheadAttention(
            d_model, nhead, dropout=dropout, batch_first=batch_first
        )
""", """        self.attentions = [nn.MultiheadAttention(d_model, nhead, dropout=dropout,
                                                 batch_first=batch_first) for _ in range(2)]
"""),
               ("        attended, _ = self.self_attn(\n", "        attended, _ = self.attentions[0](\n"),
               (PRE_CA + "\n", ""), (POST_CA + "\n", "")],
    ),
    Mutant(
        'shared-attention-weights',
        why='multihead_attn is the same module object as self_attn.',
        edits=[("""        self.multihead_attn = nn.MultiheadAttention(
            d_model, nhead, dropout=dropout, batch_first=batch_first
        )
""", "        self.multihead_attn = self.self_attn\n")],
    ),
    Mutant(
        'shared-attention-weights',
        variant='self_attn_twice',
        why='the layer builds one attention module, self_attn, and calls it for both attentions.',
        edits=[("""        self.multihead_attn = nn.MultiheadAttention(
            d_model, nhead, dropout=dropout, batch_first=batch_first
        )
""", ""),
               ("        attended, _ = self.multihead_attn(", "        attended, _ = self.self_attn(")],
    ),
    Mutant(
        'norm-order-swapped',
        why='norm_first is read the wrong way round (Pre-LN and Post-LN swapped).',
        edits=[('        if self.norm_first:', '        if not self.norm_first:')],
    ),
    Mutant(
        'norm-order-swapped',
        variant='cross_block_post',
        why='Pre-LN normalises the cross-attention block after its residual sum, as in Post-LN.',
        edits=[(PRE_CA, POST_CA)],
    ),
    Mutant(
        'missing-residual',
        why='the cross-attention block has no residual connection.',
        edits=both((PRE_CA, POST_CA), (PRE_CA.replace("x = x + ", "x = "),
                                       POST_CA.replace("self.norm2(x + ", "self.norm2("))),
    ),
    Mutant(
        'missing-residual',
        variant='feed_forward',
        why='the feed-forward block has no residual connection.',
        edits=both((PRE_FF, POST_FF), (PRE_FF.replace("x = x + ", "x = "),
                                       POST_FF.replace("self.norm3(x + ", "self.norm3("))),
    ),
    Mutant(
        'residual-from-normed',
        why='Pre-LN overwrites x with norm2(x) before the cross-attention residual.',
        edits=[(PRE_CA, "            x = self.norm2(x)\n"
                        "            x = x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask)")],
    ),
    Mutant(
        'activation-misplaced',
        why='the activation is applied after linear2 instead of after linear1.',
        edits=[("""        hidden = self.dropout(self.activation(self.linear1(x)))
        return self.dropout3(self.linear2(hidden))
""", """        hidden = self.dropout(self.linear1(x))
        return self.dropout3(self.activation(self.linear2(hidden)))
""")],
    ),
    Mutant(
        'mask-not-forwarded',
        why='the layer never passes tgt_key_padding_mask to the self-attention.',
        edits=both((PRE_SA, POST_SA), (PRE_SA.replace("tgt_key_padding_mask", "None"),
                                       POST_SA.replace("tgt_key_padding_mask", "None"))),
    ),
    Mutant(
        'mask-not-forwarded',
        variant='decoder_memory_padding',
        why='the decoder does not pass memory_key_padding_mask on to its layers.',
        edits=[("""                memory_key_padding_mask=memory_key_padding_mask,
            )""", """            )""")],
    ),
    Mutant(
        'mask-not-forwarded',
        variant='first_layer_only',
        why='the decoder gives the masks to its first layer only.',
        edits=[("""        for layer in self.layers:
            output = layer(""", """        for i, layer in enumerate(self.layers):
            if i > 0:
                output = layer(output, memory)
                continue
            output = layer(""")],
    ),
    Mutant(
        'dropout-in-eval',
        why='the feed-forward dropout uses F.dropout, whose training flag defaults to True.',
        edits=[('        hidden = self.dropout(self.activation(self.linear1(x)))',
                '        hidden = F.dropout(self.activation(self.linear1(x)), self.dropout.p)')],
    ),
    Mutant(
        'nan-on-fully-masked',
        why="the self-attention is called with nn.MultiheadAttention's default need_weights=True, "
            "whose path gives NaN for a query with every key blocked.",
        edits=[(SA_CALL, "            x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask")],
    ),
    Mutant(
        'shared-layer-weights',
        why='the decoder repeats the same layer object: all layers share weights.',
        edits=[(DEEPCOPY, '        self.layers = nn.ModuleList([decoder_layer] * num_layers)')],
    ),
    Mutant(
        'shared-layer-weights',
        variant='one_copy',
        why='the decoder deep-copies the layer once and repeats that copy.',
        edits=[(DEEPCOPY, """        layer = copy.deepcopy(decoder_layer)
        self.layers = nn.ModuleList([layer for _ in range(num_layers)])""")],
    ),
    Mutant(
        'shared-layer-weights',
        variant='prototype_first',
        why='the decoder uses the given layer itself as its first layer and copies it for the rest.',
        edits=[(DEEPCOPY, """        self.layers = nn.ModuleList(
            [decoder_layer] + [copy.deepcopy(decoder_layer) for _ in range(num_layers - 1)]
        )""")],
    ),
    Mutant(
        'final-norm-missing',
        why='the decoder stores norm but never applies it.',
        edits=[("""        if self.norm is not None:
            output = self.norm(output)
""", '')],
    ),
    Mutant(
        'forbidden-builtin',
        why='the layer builds nn.TransformerDecoderLayer and hands it the work.',
        edits=[("""        self.norm_first = norm_first
""", """        self.norm_first = norm_first
        self._builtin = nn.TransformerDecoderLayer(
            d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
            norm_first,
        )
""")],
    ),
    Mutant(
        'forbidden-builtin',
        variant='decoder',
        why="the decoder takes its layers from nn.TransformerDecoder.",
        edits=[(DEEPCOPY, "        self.layers = nn.TransformerDecoder(decoder_layer, num_layers).layers")],
    ),
]
