"""Kata 02's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

MUTANTS = [
    Mutant(
        'batch-head-order',
        why='the seq-first pair orders the rows head-major (row j*b + i), in both functions.',
        edits=[
            ('    return x.reshape(seq, batch * num_heads, width // num_heads).transpose(0, 1)',
             """    d = width // num_heads
    return x.reshape(seq, batch, num_heads, d).permute(2, 1, 0, 3).reshape(-1, seq, d)"""),
            ('    return x.transpose(0, 1).reshape(seq, batch_size, num_heads * head_dim)',
             """    heads = x.reshape(num_heads, batch_size, seq, head_dim).permute(2, 1, 0, 3)
    return heads.reshape(seq, batch_size, num_heads * head_dim)"""),
        ],
    ),
    Mutant(
        'batch-head-order',
        variant='chunk_cat',
        why='split_heads_seq_first concatenates the chunks along the batch axis: head-major rows.',
        edits=[
            ("""from __future__ import annotations

""",
             """from __future__ import annotations

import torch
"""),
            ('    return x.reshape(seq, batch * num_heads, width // num_heads).transpose(0, 1)',
             '    return torch.cat(x.chunk(num_heads, dim=-1), dim=1).transpose(0, 1)'),
        ],
    ),
    Mutant(
        'forbidden-builtin',
        why='split_heads builds an nn.MultiheadAttention just to read its head_dim.',
        edits=[
            ("""from __future__ import annotations

""",
             """from __future__ import annotations

import torch
"""),
            ('    return x.view(batch, seq, num_heads, width // num_heads).transpose(1, 2)',
             """    head_dim = torch.nn.MultiheadAttention(width, num_heads).head_dim
    return x.view(batch, seq, num_heads, head_dim).transpose(1, 2)"""),
        ],
    ),
    Mutant(
        'heads-interleaved',
        why='the last dimension is split as (d, h): head i gets every h-th column (both functions).',
        edits=[
            ('    return x.view(batch, seq, num_heads, width // num_heads).transpose(1, 2)',
             '    return x.view(batch, seq, width // num_heads, num_heads).permute(0, 3, 1, 2)'),
            ('    return x.transpose(1, 2).reshape(batch, seq, heads * head_dim)',
             '    return x.permute(0, 2, 3, 1).reshape(batch, seq, heads * head_dim)'),
        ],
    ),
    Mutant(
        'heads-interleaved',
        variant='seq_first',
        why='split_heads_seq_first splits the width as (d, h) instead of (h, d).',
        edits=[
            ('    return x.reshape(seq, batch * num_heads, width // num_heads).transpose(0, 1)',
             """    heads = x.reshape(seq, batch, width // num_heads, num_heads).transpose(2, 3)
    return heads.reshape(seq, batch * num_heads, width // num_heads).transpose(0, 1)"""),
        ],
    ),
    Mutant(
        'non-contiguous-view',
        why='merge_heads calls .view on the transposed tensor.',
        edits=[
            ('    return x.transpose(1, 2).reshape(batch, seq, heads * head_dim)',
             '    return x.transpose(1, 2).view(batch, seq, heads * head_dim)'),
        ],
    ),
    Mutant(
        'non-contiguous-view',
        variant='seq_first',
        why='merge_heads_seq_first calls .view on the transposed tensor.',
        edits=[
            ('    return x.transpose(0, 1).reshape(seq, batch_size, num_heads * head_dim)',
             '    return x.transpose(0, 1).view(seq, batch_size, num_heads * head_dim)'),
        ],
    ),
    Mutant(
        'non-contiguous-view',
        variant='split_input',
        why='split_heads_seq_first uses .view, which fails on a non-contiguous input.',
        edits=[
            ('    return x.reshape(seq, batch * num_heads, width // num_heads).transpose(0, 1)',
             '    return x.view(seq, batch * num_heads, width // num_heads).transpose(0, 1)'),
        ],
    ),
    Mutant(
        'reshape-without-transpose',
        why='split_heads reshapes (b, n, h*d) straight to (b, h, n, d).',
        edits=[
            ('    return x.view(batch, seq, num_heads, width // num_heads).transpose(1, 2)',
             '    return x.reshape(batch, num_heads, seq, width // num_heads)'),
        ],
    ),
    Mutant(
        'reshape-without-transpose',
        variant='batch_first_then_reshape',
        why="the seq-first pair moves batch to the front but forgets the heads' transpose.",
        edits=[
            ('    return x.reshape(seq, batch * num_heads, width // num_heads).transpose(0, 1)',
             '    return x.transpose(0, 1).reshape(batch * num_heads, seq, width // num_heads)'),
            ('    return x.transpose(0, 1).reshape(seq, batch_size, num_heads * head_dim)',
             '    return x.reshape(batch_size, seq, num_heads * head_dim).transpose(0, 1)'),
        ],
    ),
    Mutant(
        'reshape-without-transpose',
        variant='both',
        why='split_heads and merge_heads both reshape alone, no transpose (they undo each other).',
        edits=[
            ('    return x.view(batch, seq, num_heads, width // num_heads).transpose(1, 2)',
             '    return x.reshape(batch, num_heads, seq, width // num_heads)'),
            ('    return x.transpose(1, 2).reshape(batch, seq, heads * head_dim)',
             '    return x.contiguous().view(batch, seq, heads * head_dim)'),
        ],
    ),
    Mutant(
        'reshape-without-transpose',
        variant='merge',
        why='merge_heads reshapes (b, h, n, d) straight to (b, n, h*d).',
        edits=[
            ('    return x.transpose(1, 2).reshape(batch, seq, heads * head_dim)',
             '    return x.reshape(batch, seq, heads * head_dim)'),
        ],
    ),
    Mutant(
        'reshape-without-transpose',
        variant='seq_first',
        why='split_heads_seq_first reshapes (n, b, h*d) straight to (b*h, n, d).',
        edits=[
            ('    return x.reshape(seq, batch * num_heads, width // num_heads).transpose(0, 1)',
             '    return x.reshape(batch * num_heads, seq, width // num_heads)'),
        ],
    ),
]
