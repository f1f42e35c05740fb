"""Kata 10's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

MUTANTS = [
    Mutant(
        'patch-flatten-without-transpose',
        why='the conv output (B, D, H/p, W/p) is reshaped straight to (B, N, D), as if the '
            'channels were already last.',
        edits=[
            ('        return x.flatten(2).transpose(1, 2)  # (B, D, N) -> (B, N, D)',
             '        return x.reshape(x.shape[0], -1, x.shape[1])'),
        ],
    ),
    Mutant(
        'patch-flatten-without-transpose',
        variant='flatten_then_view',
        why='flatten(2) is right, but then a view to (B, N, D) stands in for the transpose.',
        edits=[
            ('        return x.flatten(2).transpose(1, 2)  # (B, D, N) -> (B, N, D)',
             '        B, D = x.shape[:2]\n        return x.flatten(2).view(B, -1, D)'),
        ],
    ),
    Mutant(
        'patch-flatten-without-transpose',
        variant='flatten_only',
        why='the grid is flattened to (B, D, N) and returned as it is: the tokens are the '
            'columns, not the rows.',
        edits=[
            ('        return x.flatten(2).transpose(1, 2)  # (B, D, N) -> (B, N, D)',
             '        return x.flatten(2)'),
        ],
    ),
    Mutant(
        'qkv-reshape-order',
        variant='last_axis',
        why='qkv(x) is reshaped to (B, N, h, d, 3), as if q, k and v were interleaved feature '
            'by feature.',
        edits=[
            ('.reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)',
             '.reshape(B, N, self.num_heads, self.head_dim, 3).permute(4, 0, 2, 1, 3)'),
        ],
    ),
    Mutant(
        'qkv-reshape-order',
        why='qkv(x) is reshaped to (B, N, h, 3, d), heads outermost, as if q, k and v were '
            'interleaved per head.',
        edits=[
            ('.reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)',
             '.reshape(B, N, self.num_heads, 3, self.head_dim).permute(3, 0, 2, 1, 4)'),
        ],
    ),
    Mutant(
        'qkv-reshape-order',
        variant='unbind_dim3',
        why='qkv(x) is viewed as (B, N, h, 3, d) and q, k, v are taken along the 3-axis.',
        edits=[
            ("""        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)                          # each (B, h, N, d)
""",
             """        qkv = self.qkv(x).view(B, N, self.num_heads, 3, self.head_dim)
        q, k, v = (t.transpose(1, 2) for t in qkv.unbind(3))
"""),
        ],
    ),
    Mutant(
        'missing-scale',
        why='the scores q @ k^T go into the softmax unscaled.',
        edits=[
            ('        attn = (q * self.scale) @ k.transpose(-2, -1)   # (B, h, N, N)',
             '        attn = q @ k.transpose(-2, -1)'),
        ],
    ),
    Mutant(
        'scale-by-embed-dim',
        why='the scale is taken from the full width dim instead of the head width.',
        edits=[
            ('        self.scale = self.head_dim ** -0.5', '        self.scale = dim ** -0.5'),
        ],
    ),
    Mutant(
        'reshape-without-transpose',
        why='the heads are merged with a reshape alone: (B, h, N, d) read as (B, N, h*d).',
        edits=[
            ('        x = (attn @ v).transpose(1, 2).reshape(B, N, C)  # (B, h, N, d) -> (B, N, h*d)',
             '        x = (attn @ v).reshape(B, N, C)'),
        ],
    ),
    Mutant(
        'norm-order-swapped',
        why='the block is written Post-LN, like the original Transformer: norm after each '
            'residual sum.',
        edits=[
            ("""        x = x + self.drop_path(self.attn(self.norm1(x)))
        return x + self.drop_path(self.mlp(self.norm2(x)))""",
             """        x = self.norm1(x + self.drop_path(self.attn(x)))
        return self.norm2(x + self.drop_path(self.mlp(x)))"""),
        ],
    ),
    Mutant(
        'norm-order-swapped',
        variant='mlp_only',
        why='the attention sublayer is Pre-LN but the Mlp sublayer normalises after its sum.',
        edits=[
            ('        return x + self.drop_path(self.mlp(self.norm2(x)))',
             '        return self.norm2(x + self.drop_path(self.mlp(x)))'),
        ],
    ),
    Mutant(
        'missing-residual',
        why='the Mlp sublayer replaces x instead of adding to it.',
        edits=[
            ('        return x + self.drop_path(self.mlp(self.norm2(x)))',
             '        return self.drop_path(self.mlp(self.norm2(x)))'),
        ],
    ),
    Mutant(
        'residual-from-normed',
        why='x is normalised in place first, so the residual adds norm1(x) instead of x.',
        edits=[
            ('        x = x + self.drop_path(self.attn(self.norm1(x)))',
             '        x = self.norm1(x)\n        x = x + self.drop_path(self.attn(x))'),
        ],
    ),
    Mutant(
        'gelu-tanh-approximation',
        why='the Mlp uses the tanh approximation of GELU (as GPT-2 does).',
        edits=[
            ('        self.act = nn.GELU()', '        self.act = nn.GELU(approximate="tanh")'),
        ],
    ),
    Mutant(
        'gelu-tanh-approximation',
        variant='written_out',
        why='the Mlp writes GELU out by the formula remembered from a paper: the tanh form.',
        edits=[
            ('        x = self.drop(self.act(self.fc1(x)))',
             '        h = self.fc1(x)\n'
             '        h = 0.5 * h * (1 + torch.tanh((2 / torch.pi) ** 0.5 * (h + 0.044715 * h ** 3)))\n'
             '        x = self.drop(h)'),
            ('from torch import Tensor, nn', 'import torch\nfrom torch import Tensor, nn'),
        ],
    ),
    Mutant(
        'drop-path-not-rescaled',
        why='DropPath zeroes whole samples but forgets to divide the kept ones by 1 - p.',
        edits=[
            ("""    if keep_prob > 0.0 and scale_by_keep:
        keep = keep / keep_prob
""", ''),
        ],
    ),
    Mutant(
        'drop-path-in-eval',
        why='drop_path only checks drop_prob, not the training flag.',
        edits=[
            ('    if drop_prob == 0.0 or not training:', '    if drop_prob == 0.0:'),
        ],
    ),
    Mutant(
        'drop-path-in-eval',
        variant='always_training',
        why='DropPath.forward passes training=True instead of self.training.',
        edits=[
            ('        return drop_path(x, self.drop_prob, self.training, self.scale_by_keep)',
             '        return drop_path(x, self.drop_prob, True, self.scale_by_keep)'),
        ],
    ),
    Mutant(
        'drop-path-per-element',
        why='the keep mask is drawn with the shape of x: one draw per element.',
        edits=[
            ('    shape = (x.shape[0],) + (1,) * (x.ndim - 1)  # one draw per sample, broadcast over the rest',
             '    shape = x.shape'),
        ],
    ),
    Mutant(
        'drop-path-per-element',
        variant='per_token',
        why='the keep mask is (B, N, 1): one draw per token instead of per sample.',
        edits=[
            ('    shape = (x.shape[0],) + (1,) * (x.ndim - 1)  # one draw per sample, broadcast over the rest',
             '    shape = x.shape[:2] + (1,) * (x.ndim - 2)'),
        ],
    ),
    Mutant(
        'drop-path-per-element',
        variant='plain_dropout',
        why='DropPath is written as ordinary dropout, F.dropout(x, p, training).',
        edits=[
            ('        return drop_path(x, self.drop_prob, self.training, self.scale_by_keep)',
             '        return nn.functional.dropout(x, self.drop_prob, self.training)'),
        ],
    ),
    Mutant(
        'forbidden-builtin',
        why='the attention is handed to F.scaled_dot_product_attention.',
        edits=[
            ("""        attn = (q * self.scale) @ k.transpose(-2, -1)   # (B, h, N, N)
        attn = self.attn_drop(attn.softmax(dim=-1))
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)  # (B, h, N, d) -> (B, N, h*d)""",
             """        p = self.attn_drop.p if self.training else 0.0
        x = nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=p)
        x = x.transpose(1, 2).reshape(B, N, C)"""),
        ],
    ),
]
