"""Kata 07's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

MUTANTS = [
    Mutant(
        'batch-ignored',
        why='batch_size is left out of every count (FLOPs and bytes).',
        edits=[
            ("""    projections = 2 * (2 * n * b * d * d) + 2 * (2 * m * b * d * d)
    attention = 2 * (2 * b * n * m * d)
""",
             """    projections = 2 * (2 * n * d * d) + 2 * (2 * m * d * d)
    attention = 2 * (2 * n * m * d)
"""),
            ('    tokens = seq_len * batch_size',
             '    tokens = seq_len'),
            ('    return batch_size * num_heads * seq_len * seq_len * itemsize',
             '    return num_heads * seq_len * seq_len * itemsize'),
        ],
    ),
    Mutant(
        'batch-ignored',
        variant='attention_term',
        why='batch_size multiplies the projections but not the l x l attention matmuls.',
        edits=[
            ('    attention = 2 * (2 * b * n * m * d)',
             '    attention = 2 * (2 * n * m * d)'),
        ],
    ),
    Mutant(
        'batch-ignored',
        variant='bytes',
        why="the score memory leaves out batch_size: one sequence's (h, l, l) scores.",
        edits=[
            ('    return batch_size * num_heads * seq_len * seq_len * itemsize',
             '    return num_heads * seq_len * seq_len * itemsize'),
        ],
    ),
    Mutant(
        'bias-not-counted',
        why='the parameter count leaves out the four bias vectors.',
        edits=[
            ('    biases = 4 * d_model if bias else 0',
             '    biases = 0'),
        ],
    ),
    Mutant(
        'bias-not-counted',
        variant='in_proj',
        why='only out_proj.bias is counted; in_proj_bias (3d) is left out.',
        edits=[
            ('    biases = 4 * d_model if bias else 0',
             '    biases = d_model if bias else 0'),
        ],
    ),
    Mutant(
        'macs-not-flops',
        why='multiply-adds counted, not FLOPs (p*q*r per product instead of 2*p*q*r).',
        edits=[
            ("""    projections = 2 * (2 * n * b * d * d) + 2 * (2 * m * b * d * d)
    attention = 2 * (2 * b * n * m * d)
""",
             """    projections = 2 * (n * b * d * d) + 2 * (m * b * d * d)
    attention = 2 * (b * n * m * d)
"""),
            ('    feed_forward = 2 * (2 * tokens * d_model * dim_feedforward)',
             '    feed_forward = 2 * (tokens * d_model * dim_feedforward)'),
        ],
    ),
    Mutant(
        'missing-attention-flops',
        why='only the four projections are counted; QK^T and weights @ V are left out.',
        edits=[
            ('    attention = 2 * (2 * b * n * m * d)',
             '    attention = 0'),
        ],
    ),
    Mutant(
        'missing-attention-flops',
        variant='weighted_sum',
        why='the scores QK^T are counted but not the weighted sum weights @ V.',
        edits=[
            ('    attention = 2 * (2 * b * n * m * d)',
             '    attention = 2 * b * n * m * d'),
        ],
    ),
    Mutant(
        'missing-out-proj-flops',
        why='only the q, k, v projections are counted; the output projection is left out.',
        edits=[
            ('    projections = 2 * (2 * n * b * d * d) + 2 * (2 * m * b * d * d)',
             '    projections = 2 * n * b * d * d + 2 * (2 * m * b * d * d)'),
        ],
    ),
    Mutant(
        'per-head-divided',
        why='the attention matmuls are counted for one head of width d // h, not for all h.',
        edits=[
            ('    attention = 2 * (2 * b * n * m * d)',
             """    d_head = d // num_heads
    attention = 2 * (2 * b * n * m * d_head)"""),
        ],
    ),
    Mutant(
        'per-head-divided',
        variant='full_width_heads',
        why='a loop over heads counts each head at the full width d (q, k, v, out and the attention matmuls), so everything is h times too large.',
        base='per_head_loop',
        edits=[
            ("""    total = 0
    for _ in ("q", "k", "v", "out"):
        total += d_model * d_model + (d_model if bias else 0)
    return total
""",
             """    return 4 * d_model * d_model + (4 * d_model if bias else 0)
"""),
            ('    d_head = d_model // num_heads',
             '    n, m, b, d = tgt_len, src_len, batch_size, d_model'),
            ("""        # this head's slice of each projection: (tokens, d_model) @ (d_model, d_head)
        total += 2 * tgt_len * batch_size * d_model * d_head        # W_q
        total += 2 * 2 * src_len * batch_size * d_model * d_head    # W_k, W_v
        total += 2 * tgt_len * batch_size * d_head * d_model        # this head's rows of W_out
        # scores and weighted sum for this head, per batch element
        total += batch_size * 2 * tgt_len * d_head * src_len
        total += batch_size * 2 * tgt_len * src_len * d_head
""",
             """        total += 2 * n * b * d * d * 2 + 2 * m * b * d * d * 2   # q, out; k, v
        total += 2 * b * n * m * d * 2                            # QK^T, AV
"""),
            ("""    feed_forward = 0
    for fan_in, fan_out in ((d_model, dim_feedforward), (dim_feedforward, d_model)):
        feed_forward += 2 * seq_len * batch_size * fan_in * fan_out
""",
             """    feed_forward = 4 * seq_len * batch_size * d_model * dim_feedforward
"""),
            ("""    # A meta tensor has a shape and a dtype but no storage: any size is free.
    scores = torch.empty(batch_size, num_heads, seq_len, seq_len, dtype=dtype, device="meta")
    return scores.nbytes
""",
             """    return batch_size * num_heads * seq_len * seq_len * torch.empty((), dtype=dtype).element_size()
"""),
        ],
    ),
    Mutant(
        'per-head-divided',
        variant='whole_count',
        why='every count is divided by num_heads ("FLOPs per head").',
        base='closed_form',
        edits=[
            ("""    d = d_model
    return 4 * d * d + 4 * d if bias else 4 * d * d
""",
             """    return 4 * d_model * d_model + (4 * d_model if bias else 0)
"""),
            ('    return 8 * l * b * d**2 + 4 * l**2 * b * d',
             '    return (8 * l * b * d * d + 4 * l * l * b * d) // num_heads'),
            ('    return 4 * n * b * d**2 + 4 * m * b * d**2 + 4 * n * m * b * d',
             '    return (4 * n * b * d * d + 4 * m * b * d * d + 4 * n * m * b * d) // num_heads'),
            ('    return mha_flops(l, b, d, num_heads) + 4 * l * b * d * dim_feedforward',
             '    return (8 * l * b * d * d + 4 * l * l * b * d + 4 * l * b * d * dim_feedforward) // num_heads'),
            ('    return batch_size * num_heads * seq_len**2 * (torch.finfo(dtype).bits // 8)',
             '    return batch_size * num_heads * seq_len * seq_len * torch.empty((), dtype=dtype).element_size()'),
        ],
    ),
]
