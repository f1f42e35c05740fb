"""Kata 06's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

MUTANTS = [
    Mutant(
        'activation-misplaced',
        why='the activation is applied after linear2 instead of after linear1.',
        edits=[
            ("""        hidden = self.dropout(self.activation(self.linear1(x)))
        return self.dropout2(self.linear2(hidden))
""",
             """        hidden = self.dropout(self.linear1(x))
        return self.dropout2(self.activation(self.linear2(hidden)))
"""),
        ],
    ),
    Mutant(
        'activation-misplaced',
        variant='before_linear1',
        why='the activation is applied before linear1.',
        edits=[
            ('        hidden = self.dropout(self.activation(self.linear1(x)))',
             '        hidden = self.dropout(self.linear1(self.activation(x)))'),
        ],
    ),
    Mutant(
        'activation-misplaced',
        variant='missing',
        why='the feed-forward block has no activation.',
        edits=[
            ('        hidden = self.dropout(self.activation(self.linear1(x)))',
             '        hidden = self.dropout(self.linear1(x))'),
        ],
    ),
    Mutant(
        'dropout-in-eval',
        why='the feed-forward dropout uses F.dropout, whose training flag defaults to True.',
        edits=[
            ('        hidden = self.dropout(self.activation(self.linear1(x)))',
             '        hidden = F.dropout(self.activation(self.linear1(x)), self.dropout.p)'),
        ],
    ),
    Mutant(
        'final-norm-missing',
        why='the encoder stores norm but never applies it.',
        edits=[
            ("""        if self.norm is not None:
            output = self.norm(output)
""",
             ''),
        ],
    ),
    Mutant(
        'forbidden-builtin',
        why='the layer wraps nn.TransformerEncoderLayer instead of building it.',
        file='forbidden_builtin.py',
    ),
    Mutant(
        'forbidden-builtin',
        variant='encoder',
        why='the encoder wraps nn.TransformerEncoder around the (correct) layer.',
        edits=[
            ('    """num_layers independent copies of encoder_layer applied in turn, then norm if given."""',
             '    """PyTorch\'s encoder doing the work."""'),
            ("""        # Deep copies: each layer gets its own weights (the given layer is only a template).
        self.layers = nn.ModuleList(copy.deepcopy(encoder_layer) for _ in range(num_layers))
        self.num_layers = num_layers
        self.norm = norm
""",
             """        inner = nn.TransformerEncoder(encoder_layer, num_layers, norm=norm, enable_nested_tensor=False)
        self.layers = inner.layers
        self.norm = inner.norm
        self._forward = inner.forward
"""),
            ('    def forward(\n        self,\n        src: Tensor,\n        mask: Tensor | None = None,\n        src_key_padding_mask: Tensor | None = None,\n    ) -> Tensor:\n        """src as for the layer; every layer gets the same mask and src_key_padding_mask."""\n        output = src\n        for layer in self.layers:\n            output = layer(output, src_mask=mask, src_key_padding_mask=src_key_padding_mask)\n        if self.norm is not None:\n            output = self.norm(output)\n        return output\n',
             """    def forward(self, src: Tensor, mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None) -> Tensor:
        return self._forward(src, mask=mask, src_key_padding_mask=src_key_padding_mask)
"""),
        ],
    ),
    Mutant(
        'mask-not-forwarded',
        why='the layer never passes src_key_padding_mask to self_attn.',
        edits=[
            ("""        attended, _ = self.self_attn(
            x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False
        )
""",
             """        attended, _ = self.self_attn(x, x, x, attn_mask=attn_mask, need_weights=False)
"""),
        ],
    ),
    Mutant(
        'mask-not-forwarded',
        variant='encoder',
        why='the encoder calls its layers without the masks.',
        edits=[
            ('            output = layer(output, src_mask=mask, src_key_padding_mask=src_key_padding_mask)',
             '            output = layer(output)'),
        ],
    ),
    Mutant(
        'mask-not-forwarded',
        variant='first_layer_only',
        why='the encoder gives the masks to its first layer only.',
        edits=[
            ("""        for layer in self.layers:
            output = layer(output, src_mask=mask, src_key_padding_mask=src_key_padding_mask)
""",
             """        for i, layer in enumerate(self.layers):
            if i == 0:
                output = layer(output, src_mask=mask, src_key_padding_mask=src_key_padding_mask)
            else:
                output = layer(output)
"""),
        ],
    ),
    Mutant(
        'mask-not-forwarded',
        variant='src_mask',
        why='the layer never passes src_mask to self_attn.',
        edits=[
            ('            x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False',
             '            x, x, x, key_padding_mask=key_padding_mask, need_weights=False'),
        ],
    ),
    Mutant(
        'missing-residual',
        why='the feed-forward block has no residual connection.',
        edits=[
            ('            x = x + self._ff_block(self.norm2(x))',
             '            x = self._ff_block(self.norm2(x))'),
            ('            x = self.norm2(x + self._ff_block(x))',
             '            x = self.norm2(self._ff_block(x))'),
        ],
    ),
    Mutant(
        'missing-residual',
        variant='attention',
        why='the self-attention block has no residual connection.',
        edits=[
            ('            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask)',
             '            x = self._sa_block(self.norm1(x), src_mask, src_key_padding_mask)'),
            ('            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask))',
             '            x = self.norm1(self._sa_block(x, src_mask, src_key_padding_mask))'),
        ],
    ),
    Mutant(
        'norm-order-swapped',
        why='norm_first is read the wrong way round (Pre-LN and Post-LN swapped).',
        edits=[
            ('        if self.norm_first:',
             '        if not self.norm_first:'),
        ],
    ),
    Mutant(
        'norm-order-swapped',
        variant='always_post',
        why='norm_first is ignored: always Post-LN.',
        edits=[
            ("""            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask)
            x = x + self._ff_block(self.norm2(x))
""",
             """            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask))
            x = self.norm2(x + self._ff_block(x))
"""),
        ],
    ),
    Mutant(
        'norm-order-swapped',
        variant='mixed',
        why='Pre-LN normalises before attention but after the feed-forward residual.',
        edits=[
            ('            x = x + self._ff_block(self.norm2(x))',
             '            x = self.norm2(x + self._ff_block(x))'),
        ],
    ),
    Mutant(
        'norm-inside-residual',
        why="the norm is applied to the sublayer's output before the residual sum: x + norm(f(x)).",
        edits=[
            ("""            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask))
            x = self.norm2(x + self._ff_block(x))
""",
             """            x = x + self.norm1(self._sa_block(x, src_mask, src_key_padding_mask))
            x = x + self.norm2(self._ff_block(x))
"""),
        ],
    ),
    Mutant(
        'residual-from-normed',
        why='Pre-LN overwrites x with norm(x), so the residual adds the normed x.',
        edits=[
            ("""            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask)
            x = x + self._ff_block(self.norm2(x))
""",
             """            x = self.norm1(x)
            x = x + self._sa_block(x, src_mask, src_key_padding_mask)
            x = self.norm2(x)
            x = x + self._ff_block(x)
"""),
        ],
    ),
    Mutant(
        'residual-from-normed',
        variant='feed_forward',
        why='Pre-LN: the feed-forward residual adds norm2(x).',
        edits=[
            ('            x = x + self._ff_block(self.norm2(x))',
             """            h = self.norm2(x)
            x = h + self._ff_block(h)"""),
        ],
    ),
    Mutant(
        'shared-layer-weights',
        why='the encoder repeats the same layer object: all layers share weights.',
        edits=[
            ('        self.layers = nn.ModuleList(copy.deepcopy(encoder_layer) for _ in range(num_layers))',
             '        self.layers = nn.ModuleList([encoder_layer] * num_layers)'),
        ],
    ),
    Mutant(
        'shared-layer-weights',
        variant='kept_template',
        why='the encoder keeps the given layer as a submodule and repeats it in layers.',
        edits=[
            ('        self.layers = nn.ModuleList(copy.deepcopy(encoder_layer) for _ in range(num_layers))',
             """        self.layer = encoder_layer
        self.layers = nn.ModuleList([self.layer for _ in range(num_layers)])"""),
        ],
    ),
    Mutant(
        'shared-layer-weights',
        variant='one_copy',
        why='the encoder deep-copies the layer once and repeats that copy.',
        edits=[
            ('        self.layers = nn.ModuleList(copy.deepcopy(encoder_layer) for _ in range(num_layers))',
             """        layer = copy.deepcopy(encoder_layer)
        self.layers = nn.ModuleList([layer for _ in range(num_layers)])"""),
        ],
    ),
    Mutant(
        'shared-layer-weights',
        variant='prototype_first',
        why='the encoder uses the given layer itself as layers[0] and deep copies for the rest: '
            'editing that layer afterwards changes the encoder.',
        edits=[
            ('        self.layers = nn.ModuleList(copy.deepcopy(encoder_layer) for _ in range(num_layers))',
             """        self.layers = nn.ModuleList(
            [encoder_layer] + [copy.deepcopy(encoder_layer) for _ in range(num_layers - 1)])"""),
        ],
    ),
]
