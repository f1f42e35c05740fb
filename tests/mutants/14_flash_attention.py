"""Kata 14's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

MUTANTS = [
    Mutant(
        'accumulator-not-rescaled',
        why='the running sum is rescaled when the maximum grows, but the output accumulator '
            'is not: the easiest line of the update to forget.',
        edits=[
            ('        acc = acc * correction + p @ v_block', '        acc = acc + p @ v_block'),
        ],
    ),
    Mutant(
        'accumulator-not-rescaled',
        variant='neither',
        base='einsum_split',
        why='neither the running sum nor the accumulator is multiplied by exp(m_old - m_new).',
        edits=[
            ('        l_i = alpha * l_i + p.sum(-1)', '        l_i = l_i + p.sum(-1)'),
            ('        o_i = alpha.unsqueeze(-1) * o_i + torch.einsum("bhnm,bhmd->bhnd", p, v_j)',
             '        o_i = o_i + torch.einsum("bhnm,bhmd->bhnd", p, v_j)'),
        ],
    ),
    Mutant(
        'running-max-missing',
        why='the exponentials are taken of the raw scores, with no maximum subtracted: exact '
            'for scores of order 1, inf and NaN for large ones.',
        edits=[
            ('        p = torch.exp(scores - new_max)  # (b, h, n, B), each at most 1',
             '        p = torch.exp(scores)'),
            ('        correction = torch.exp(row_max - new_max)  # 0 on the first block (exp(-inf))',
             '        correction = 1.0'),
            ('    lse = (row_max + torch.log(row_sum)).squeeze(-1)  # (b, h, n)',
             '    lse = torch.log(row_sum).squeeze(-1)'),
        ],
    ),
    Mutant(
        'running-max-missing',
        variant='starts_at_zero',
        why='the running maximum starts at 0 instead of -inf, so a row whose scores are all '
            'far below 0 underflows to 0 / 0.',
        edits=[
            ('    row_max = q.new_full((*q.shape[:-1], 1), float("-inf"))  # (b, h, n, 1)',
             '    row_max = q.new_zeros((*q.shape[:-1], 1))  # (b, h, n, 1)'),
        ],
    ),
    Mutant(
        'normalized-per-block',
        why='each block is normalised by its own sum (a softmax per block) and the blocks\' '
            'outputs are added up.',
        edits=[
            ('        acc = acc * correction + p @ v_block',
             '        acc = acc + (p / p.sum(dim=-1, keepdim=True)) @ v_block'),
            ('    output = acc / row_sum\n', '    output = acc\n'),
        ],
    ),
    Mutant(
        'normalized-per-block',
        variant='averaged',
        base='einsum_split',
        why='each block gets its own softmax and the blocks\' outputs are averaged.',
        edits=[
            ('        o_i = alpha.unsqueeze(-1) * o_i + torch.einsum("bhnm,bhmd->bhnd", p, v_j)',
             '        o_i = o_i + torch.einsum("bhnm,bhmd->bhnd", torch.softmax(s, -1), v_j)'),
            ('    return (o_i / l_i.unsqueeze(-1)).to(out_dtype), m_i + torch.log(l_i)',
             '    return (o_i / math.ceil(k.shape[2] / block_size)).to(out_dtype), m_i + torch.log(l_i)'),
        ],
    ),
    Mutant(
        'lse-wrong',
        why='lse is returned as log(l), forgetting to add back the running maximum.',
        edits=[
            ('    lse = (row_max + torch.log(row_sum)).squeeze(-1)  # (b, h, n)',
             '    lse = torch.log(row_sum).squeeze(-1)  # (b, h, n)'),
        ],
    ),
    Mutant(
        'lse-wrong',
        variant='left_in_bits',
        base='tiled_exp2',
        why='the base-2 log-sum-exp of the exp2 kernel is returned without converting it back '
            'to natural log.',
        edits=[
            ('        lses.append(((m2 + torch.log2(l)) / LOG2_E).squeeze(-1))',
             '        lses.append((m2 + torch.log2(l)).squeeze(-1))'),
        ],
    ),
    Mutant(
        'causal-block-off-by-one',
        why='the causal mask blocks the diagonal too (>= instead of >), so query 0 sees nothing.',
        edits=[
            ('            scores = scores.masked_fill(key_index > query_index, float("-inf"))',
             '            scores = scores.masked_fill(key_index >= query_index, float("-inf"))'),
        ],
    ),
    Mutant(
        'causal-block-off-by-one',
        variant='block_local_index',
        base='einsum_split',
        why='the causal mask compares the key\'s index inside its block with the query\'s, '
            'forgetting the block\'s start.',
        edits=[
            ('            cols = start + torch.arange(k_j.shape[2], device=q.device).unsqueeze(0)',
             '            cols = torch.arange(k_j.shape[2], device=q.device).unsqueeze(0)'),
        ],
    ),
    Mutant(
        'causal-block-off-by-one',
        variant='one_ahead',
        base='tiled_exp2',
        why='the causal mask lets each query see one key ahead (kj > qi + 1).',
        edits=[
            ('                s2 = s2.masked_fill(kj > qi, -math.inf)',
             '                s2 = s2.masked_fill(kj > qi + 1, -math.inf)'),
            ('        last_key = min(m, q_start + rows) if causal else m',
             '        last_key = min(m, q_start + rows + 1) if causal else m'),
        ],
    ),
    Mutant(
        'causal-block-off-by-one',
        variant='diagonal_tile_unmasked',
        base='tiled_exp2',
        why='masks only the key tiles left of the diagonal tile (which need no mask), so in '
            'the diagonal tile each query sees the later keys of its tile.',
        edits=[
            ('            if causal:\n                qi = ',
             '            if causal and k_start < q_start:\n                qi = '),
        ],
    ),
    Mutant(
        'causal-block-off-by-one',
        variant='last_key_off_by_one',
        base='tiled_exp2',
        why='stops the key loop one key early (q_start + rows - 1, an inclusive end used as '
            'an exclusive one), so a query tile of one row never sees its own key.',
        edits=[
            ('        last_key = min(m, q_start + rows) if causal else m',
             '        last_key = min(m, q_start + rows - 1) if causal else m'),
        ],
    ),
    Mutant(
        'full-score-matrix',
        why='all the scores are computed at once and only then walked through block by '
            'block: right numbers, O(n·m) memory.',
        edits=[
            ('    for start in range(0, m, block_size):\n'
             '        k_block = k[..., start:start + block_size, :]  # (b, h, B, d), a view\n',
             '    all_scores = q @ k.transpose(-2, -1) * scale  # (b, h, n, m)\n'
             '    for start in range(0, m, block_size):\n'
             '        k_block = k[..., start:start + block_size, :]  # (b, h, B, d), a view\n'),
            ('        scores = q @ k_block.transpose(-2, -1) * scale  # (b, h, n, B): one block of scores',
             '        scores = all_scores[..., start:start + block_size]'),
        ],
    ),
    Mutant(
        'full-score-matrix',
        variant='full_causal_mask',
        base='einsum_split',
        why='the causal mask is built once for all (n, m) positions and sliced per block.',
        edits=[
            ('    rows = torch.arange(n, device=q.device).unsqueeze(1)\n',
             '    future = torch.ones(n, k.shape[2], dtype=torch.bool, device=q.device).triu(1)\n'),
            ('            cols = start + torch.arange(k_j.shape[2], device=q.device).unsqueeze(0)\n'
             '            s = torch.where(cols <= rows, s, torch.tensor(-math.inf, dtype=s.dtype, device=s.device))',
             '            s = s.masked_fill(future[:, start:start + k_j.shape[2]], -math.inf)'),
        ],
    ),
    Mutant(
        'missing-scale',
        why='the scores are not divided by sqrt(d).',
        edits=[
            ('        scores = q @ k_block.transpose(-2, -1) * scale  # (b, h, n, B): one block of scores',
             '        scores = q @ k_block.transpose(-2, -1)  # (b, h, n, B): one block of scores'),
        ],
    ),
    Mutant(
        'forbidden-builtin',
        why='the output comes from F.scaled_dot_product_attention; only lse is computed by hand.',
        edits=[
            ('    output = acc / row_sum\n',
             '    import torch.nn.functional as F\n'
             '    output = F.scaled_dot_product_attention(q, k, v, is_causal=causal)\n'),
        ],
    ),
]
MUTANTS += [
    Mutant(
        'wrong-scale',
        variant='by_d',
        base='normalized_lse_merge',
        why='the scores are scaled by 1/d instead of 1/sqrt(d).',
        edits=[
            ('    scale = q.shape[-1] ** -0.5', '    scale = 1 / q.shape[-1]'),
        ],
    ),
]
