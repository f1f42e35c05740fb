"""Kata 03's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

MUTANTS = [
    Mutant(
        'batch-first-ignored',
        why='always reads the inputs as (batch, seq, E), whatever batch_first says.',
        edits=[
            ("""        if not self.batch_first:
            query, key, value = (x.transpose(0, 1) for x in (query, key, value))
""",
             ''),
            ("""        if not self.batch_first:
            output = output.transpose(0, 1)
""",
             ''),
        ],
    ),
    Mutant(
        'batch-first-ignored',
        variant='always_seq_first',
        why='always treats the inputs as (seq, batch, E), even with batch_first=True.',
        base='einsum',
        edits=[
            ("""    def forward(self, query, key, value, need_weights=True):
        if not self.batch_first:
""",
             """    def forward(self, query, key, value, need_weights=True):
        if True:
"""),
            ("""        out = self.out_proj(heads.flatten(2))
        if not self.batch_first:
""",
             """        out = self.out_proj(heads.flatten(2))
        if True:
"""),
        ],
    ),
    Mutant(
        'batch-first-ignored',
        variant='output',
        why='moves batch first on the way in but never back on the way out.',
        edits=[
            ("""        if not self.batch_first:
            output = output.transpose(0, 1)
""",
             ''),
        ],
    ),
    Mutant(
        'batch-head-order',
        why='reads the batch-major (batch*heads) rows of the weights as head-major, (h, b, n, m).',
        base='bmm_seq_first',
        edits=[
            ('        return out, attn.view(bsz, self.num_heads, tgt_len, src_len)',
             '        return out, attn.view(self.num_heads, bsz, tgt_len, src_len).transpose(0, 1)'),
        ],
    ),
    Mutant(
        'dropout-in-eval',
        why="applies dropout to the weights in eval mode too (F.dropout's default training=True).",
        edits=[
            ('        weights = F.dropout(weights, self.dropout, training=self.training)',
             '        weights = F.dropout(weights, self.dropout)'),
        ],
    ),
    Mutant(
        'dropout-in-eval',
        variant='output_only',
        why='drops weights even in eval mode for the output, but returns the undropped weights.',
        edits=[
            ('        weights = F.dropout(weights, self.dropout, training=self.training)',
             '        dropped = F.dropout(weights, self.dropout, training=True)'),
            ('        attended = (weights @ v).transpose(1, 2).reshape(b, n, self.embed_dim)',
             '        attended = (dropped @ v).transpose(1, 2).reshape(b, n, self.embed_dim)'),
        ],
    ),
    Mutant(
        'dropout-in-eval',
        variant='where',
        why='draws the dropout mask whenever p > 0, in eval mode too.',
        base='fused_projection_where',
        edits=[
            ('        if self.training and self.p > 0:',
             '        if self.p > 0:'),
        ],
    ),
    Mutant(
        'forbidden-builtin',
        why='computes the attended values with F.scaled_dot_product_attention.',
        edits=[
            ('        attended = (weights @ v).transpose(1, 2).reshape(b, n, self.embed_dim)',
             '        attended = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0).transpose(1, 2).reshape(b, n, self.embed_dim)'),
        ],
    ),
    Mutant(
        'heads-interleaved',
        why='splits the last dimension as (head_dim, num_heads): head i gets every h-th column.',
        edits=[
            ('        return x.view(b, length, self.num_heads, self.head_dim).transpose(1, 2)',
             '        return x.view(b, length, self.head_dim, self.num_heads).permute(0, 3, 1, 2)'),
            ('        attended = (weights @ v).transpose(1, 2).reshape(b, n, self.embed_dim)',
             '        attended = (weights @ v).permute(0, 2, 3, 1).reshape(b, n, self.embed_dim)'),
        ],
    ),
    Mutant(
        'heads-interleaved',
        variant='einsum',
        why='lays the head index innermost: head i gets every h-th row of each projection.',
        base='einsum',
        edits=[
            ("""        weights = self.in_proj_weight.unflatten(0, (3, h, -1))  # (3, h, d, E)
        biases = None if self.in_proj_bias is None else self.in_proj_bias.unflatten(0, (3, h, -1))
""",
             """        weights = self.in_proj_weight.unflatten(0, (3, -1, h)).transpose(1, 2)  # (3, h, d, E)
        biases = None if self.in_proj_bias is None else self.in_proj_bias.unflatten(0, (3, -1, h)).transpose(1, 2)
"""),
            ('        heads = torch.einsum("bhnm,bhmd->bnhd", attn, v)',
             '        heads = torch.einsum("bhnm,bhmd->bndh", attn, v)'),
        ],
    ),
    Mutant(
        'missing-bias',
        why='leaves in_proj_bias out of the input projections.',
        edits=[
            ('            b_q, b_k, b_v = self.in_proj_bias.chunk(3)',
             '            pass'),
        ],
    ),
    Mutant(
        'missing-bias',
        variant='fused',
        why='projects without in_proj_bias.',
        base='fused_projection_where',
        edits=[
            ("""        q = self.heads(F.linear(query, self.in_proj_weight, self.in_proj_bias)[..., :e])
        k = self.heads(F.linear(key, self.in_proj_weight, self.in_proj_bias)[..., e:2 * e])
        v = self.heads(F.linear(value, self.in_proj_weight, self.in_proj_bias)[..., 2 * e:])
""",
             """        q = self.heads(F.linear(query, self.in_proj_weight)[..., :e])
        k = self.heads(F.linear(key, self.in_proj_weight)[..., e:2 * e])
        v = self.heads(F.linear(value, self.in_proj_weight)[..., 2 * e:])
"""),
        ],
    ),
    Mutant(
        'missing-bias',
        variant='value_only',
        why="leaves the value's third of in_proj_bias out.",
        edits=[
            ('        v = self._split_heads(F.linear(value, w_v, b_v))  # (b, h, m, d)',
             '        v = self._split_heads(F.linear(value, w_v))  # (b, h, m, d)'),
        ],
    ),
    Mutant(
        'missing-out-proj',
        why='returns the merged heads without the output projection.',
        edits=[
            ('        output = self.out_proj(attended)',
             '        output = attended'),
        ],
    ),
    Mutant(
        'missing-out-proj',
        variant='loop',
        why='concatenates the heads and stops there.',
        base='per_head_loop',
        edits=[
            ('        out = self.out_proj(torch.cat(outputs, dim=-1))',
             '        out = torch.cat(outputs, dim=-1)'),
        ],
    ),
    Mutant(
        'missing-scale',
        why='does not scale the scores at all.',
        edits=[
            ('        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # (b, h, n, m)',
             '        scores = q @ k.transpose(-2, -1)'),
        ],
    ),
    Mutant(
        'missing-scale',
        variant='loop',
        why='never scales the scores.',
        base='per_head_loop',
        edits=[
            ('            w = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(self.head_dim), dim=2)',
             '            w = torch.softmax(q @ k.transpose(1, 2), dim=2)'),
        ],
    ),
    Mutant(
        'non-contiguous-view',
        why='merges the heads with .view() on the transposed tensor, which raises.',
        edits=[
            ('        attended = (weights @ v).transpose(1, 2).reshape(b, n, self.embed_dim)',
             '        attended = (weights @ v).transpose(1, 2).view(b, n, self.embed_dim)'),
        ],
    ),
    Mutant(
        'qkv-chunk-order',
        why='cuts in_proj_weight and in_proj_bias in the order k, q, v.',
        edits=[
            ('        w_q, w_k, w_v = self.in_proj_weight.chunk(3)',
             '        w_k, w_q, w_v = self.in_proj_weight.chunk(3)'),
            ('            b_q, b_k, b_v = self.in_proj_bias.chunk(3)',
             '            b_k, b_q, b_v = self.in_proj_bias.chunk(3)'),
        ],
    ),
    Mutant(
        'qkv-chunk-order',
        variant='fused_per_head_layout',
        why='adds a fused path for self-attention (query is key is value): one F.linear with '
            'in_proj_weight, its output viewed as (b, n, h, 3, d), each head\'s q, k, v side by '
            'side (Megatron\'s layout), where PyTorch stacks (3, h, d).',
        edits=[
            ("        if not self.batch_first:\n            query, key, value = (x.transpose(0, 1) for x in (query, key, value))\n",
             "        fused = query is key and key is value\n"
             "        if not self.batch_first:\n            query, key, value = (x.transpose(0, 1) for x in (query, key, value))\n"),
            ("        q = self._split_heads(F.linear(query, w_q, b_q))  # (b, h, n, d)\n"
             "        k = self._split_heads(F.linear(key, w_k, b_k))  # (b, h, m, d)\n"
             "        v = self._split_heads(F.linear(value, w_v, b_v))  # (b, h, m, d)\n",
             "        if fused:\n"
             "            qkv = F.linear(query, self.in_proj_weight, self.in_proj_bias)\n"
             "            qkv = qkv.view(b, n, self.num_heads, 3, self.head_dim).permute(3, 0, 2, 1, 4)\n"
             "            q, k, v = qkv[0], qkv[1], qkv[2]\n"
             "        else:\n"
             "            q = self._split_heads(F.linear(query, w_q, b_q))  # (b, h, n, d)\n"
             "            k = self._split_heads(F.linear(key, w_k, b_k))  # (b, h, m, d)\n"
             "            v = self._split_heads(F.linear(value, w_v, b_v))  # (b, h, m, d)\n"),
        ],
    ),
    Mutant(
        'qkv-chunk-order',
        variant='bias_only',
        why='cuts in_proj_bias in the order v, k, q (the weights are right).',
        edits=[
            ('            b_q, b_k, b_v = self.in_proj_bias.chunk(3)',
             '            b_v, b_k, b_q = self.in_proj_bias.chunk(3)'),
        ],
    ),
    Mutant(
        'qkv-chunk-order',
        variant='slices',
        why='slices in_proj as v, k, q.',
        base='bmm_seq_first',
        edits=[
            ('        q = F.linear(query, w[:e], None if b is None else b[:e])',
             '        q = F.linear(query, w[2 * e:], None if b is None else b[2 * e:])'),
            ('        v = F.linear(value, w[2 * e:], None if b is None else b[2 * e:])',
             '        v = F.linear(value, w[:e], None if b is None else b[:e])'),
        ],
    ),
    Mutant(
        'reshape-without-transpose',
        why='split and merge the heads with a reshape alone, no transpose.',
        edits=[
            ('        return x.view(b, length, self.num_heads, self.head_dim).transpose(1, 2)',
             '        return x.reshape(b, self.num_heads, length, self.head_dim)'),
            ('        attended = (weights @ v).transpose(1, 2).reshape(b, n, self.embed_dim)',
             '        attended = (weights @ v).reshape(b, n, self.embed_dim)'),
        ],
    ),
    Mutant(
        'reshape-without-transpose',
        variant='merge_only',
        why='splits correctly but merges the heads with a reshape alone.',
        edits=[
            ('        attended = (weights @ v).transpose(1, 2).reshape(b, n, self.embed_dim)',
             '        attended = (weights @ v).reshape(b, n, self.embed_dim)'),
        ],
    ),
    Mutant(
        'reshape-without-transpose',
        variant='seq_first',
        why='reshapes (seq, batch, E) straight to (batch*heads, seq, d) and back, no transpose.',
        base='bmm_seq_first',
        edits=[
            ("""        q = q.reshape(tgt_len, bsz * self.num_heads, head_dim).transpose(0, 1)
        k = k.reshape(src_len, bsz * self.num_heads, head_dim).transpose(0, 1)
        v = v.reshape(src_len, bsz * self.num_heads, head_dim).transpose(0, 1)
""",
             """        q = q.reshape(bsz * self.num_heads, tgt_len, head_dim)
        k = k.reshape(bsz * self.num_heads, src_len, head_dim)
        v = v.reshape(bsz * self.num_heads, src_len, head_dim)
"""),
            ('        out = out.transpose(0, 1).contiguous().view(tgt_len, bsz, embed_dim)',
             '        out = out.contiguous().view(tgt_len, bsz, embed_dim)'),
        ],
    ),
    Mutant(
        'scale-by-embed-dim',
        why='scales the scores by 1/sqrt(embed_dim) instead of 1/sqrt(head_dim).',
        edits=[
            ('        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # (b, h, n, m)',
             '        scores = q @ k.transpose(-2, -1) / math.sqrt(self.embed_dim)'),
        ],
    ),
    Mutant(
        'scale-by-embed-dim',
        variant='premultiplied',
        why='multiplies q by embed_dim ** -0.5 instead of head_dim ** -0.5.',
        base='bmm_seq_first',
        edits=[
            ('        q = q * head_dim ** -0.5',
             '        q = q * embed_dim ** -0.5'),
        ],
    ),
    Mutant(
        'softmax-wrong-dim',
        why='normalises the weights over the queries (dim=-2).',
        edits=[
            ('        weights = torch.softmax(scores, dim=-1)',
             '        weights = torch.softmax(scores, dim=-2)'),
        ],
    ),
    Mutant(
        'softmax-wrong-dim',
        variant='batch_heads_rows',
        why="normalises over the (batch*heads) rows: softmax(dim=0) in PyTorch's layout.",
        base='bmm_seq_first',
        edits=[
            ('        attn = torch.baddbmm(zeros, q, k.transpose(1, 2)).softmax(dim=-1)',
             '        attn = torch.baddbmm(zeros, q, k.transpose(1, 2)).softmax(dim=0)'),
        ],
    ),
    Mutant(
        'softmax-wrong-dim',
        variant='heads',
        why='normalises the weights over the heads (dim=1).',
        edits=[
            ('        weights = torch.softmax(scores, dim=-1)',
             '        weights = torch.softmax(scores, dim=1)'),
        ],
    ),
    Mutant(
        'weights-averaged',
        why='returns the weights averaged over the heads, (b, n, m).',
        edits=[
            ('        return output, (weights if need_weights else None)',
             '        return output, (weights.mean(dim=1) if need_weights else None)'),
        ],
    ),
    Mutant(
        'weights-averaged',
        variant='bmm',
        why='returns the weights averaged over heads.',
        base='bmm_seq_first',
        edits=[
            ('        return out, attn.view(bsz, self.num_heads, tgt_len, src_len)',
             '        return out, attn.view(bsz, self.num_heads, tgt_len, src_len).mean(dim=1)'),
        ],
    ),
    Mutant(
        'wrong-projection',
        why="projects the value with the key's weights and bias.",
        edits=[
            ('        v = self._split_heads(F.linear(value, w_v, b_v))  # (b, h, m, d)',
             '        v = self._split_heads(F.linear(value, w_k, b_k))  # (b, h, m, d)'),
        ],
    ),
    Mutant(
        'wrong-projection',
        variant='key_from_value',
        why='projects the key from the value input.',
        base='einsum',
        edits=[
            ('        for i, x in enumerate((query, key, value)):',
             '        for i, x in enumerate((query, value, value)):'),
        ],
    ),
    Mutant(
        'wrong-projection',
        variant='self_attention',
        why='projects the query for key and value too (self-attention only).',
        edits=[
            ("""        k = self._split_heads(F.linear(key, w_k, b_k))  # (b, h, m, d)
        v = self._split_heads(F.linear(value, w_v, b_v))  # (b, h, m, d)
""",
             """        k = self._split_heads(F.linear(query, w_k, b_k))  # (b, h, m, d)
        v = self._split_heads(F.linear(query, w_v, b_v))  # (b, h, m, d)
"""),
        ],
    ),
    Mutant(
        'wrong-scale',
        why='scales the scores by 1/head_dim instead of 1/sqrt(head_dim).',
        edits=[
            ('        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # (b, h, n, m)',
             '        scores = q @ k.transpose(-2, -1) / self.head_dim'),
        ],
    ),
]
