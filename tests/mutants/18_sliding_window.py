"""Kata 18's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

MUTANTS = [
    Mutant(
        'window-off-by-one',
        why='the mask lets in keys with i - j <= window: one key more than the window, as '
            "Mistral's original triu(diagonal=-window) did.",
        edits=[
            ('    allowed = (j <= i) & ((i - j < window) | (j < num_sinks))',
             '    allowed = (j <= i) & ((i - j <= window) | (j < num_sinks))'),
        ],
    ),
    Mutant(
        'window-off-by-one',
        variant='window_minus_one_keys',
        base='query_blocks_sdpa',
        why='each query sees window - 1 keys: itself and window - 2 before it.',
        edits=[
            ('        may = (kj <= qi) & ((qi - kj < window) | (kj < num_sinks))',
             '        may = (kj <= qi) & ((qi - kj < window - 1) | (kj < num_sinks))'),
        ],
    ),
    Mutant(
        'window-off-by-one',
        variant='cache_keeps_one_more',
        why='the cache keeps the last window + 1 positions.',
        edits=[
            ('        self.recent_k = k[..., -self.window:, :].clone()\n'
             '        self.recent_v = v[..., -self.window:, :].clone()',
             '        self.recent_k = k[..., -(self.window + 1):, :].clone()\n'
             '        self.recent_v = v[..., -(self.window + 1):, :].clone()'),
        ],
    ),
    Mutant(
        'window-not-causal',
        why='the j <= i term was lost: every future key is visible.',
        edits=[
            ('    allowed = (j <= i) & ((i - j < window) | (j < num_sinks))',
             '    allowed = (i - j < window) | (j < num_sinks)'),
        ],
    ),
    Mutant(
        'window-not-causal',
        variant='symmetric_band',
        base='per_query_deque',
        why='each query gathers a symmetric band, window - 1 keys on each side of it.',
        edits=[
            ('list(range(lo, i + 1))', 'list(range(lo, min(n, i + window)))'),
        ],
    ),
    Mutant(
        'sinks-dropped',
        why='the sinks are never gathered: plain sliding-window attention.',
        base='per_query_gather',
        edits=[
            ('    sinks, width = min(num_sinks, n), min(window, n)',
             '    sinks, width = 0, min(window, n)'),
        ],
    ),
    Mutant(
        'sinks-dropped',
        variant='mask',
        base='banded_scores',
        why='the mask blocks every key older than the window, sinks included.',
        edits=[
            ('    too_old = (idx[:, None] - idx[None, :] >= window) & (idx[None, :] >= num_sinks)',
             '    too_old = idx[:, None] - idx[None, :] >= window'),
        ],
    ),
    Mutant(
        'sinks-ignore-causality',
        why='the sinks are allowed to every query, even those before them.',
        edits=[
            ('    allowed = (j <= i) & ((i - j < window) | (j < num_sinks))',
             '    allowed = ((j <= i) & (i - j < window)) | (j < num_sinks)'),
        ],
    ),
    Mutant(
        'sinks-ignore-causality',
        variant='band',
        base='banded_scores',
        why='the sink scores are blocked where the sink is inside the window, but not where it '
            'comes after the query.',
        edits=[
            ('    sink = sink.masked_fill(dist < W, float("-inf"))',
             '    sink = sink.masked_fill((dist < W) & (dist >= 0), float("-inf"))'),
        ],
    ),
    Mutant(
        'sinks-counted-twice',
        why='a gathered sink column is kept even when the sink is also inside the window.',
        base='per_query_gather',
        edits=[
            ('    valid = torch.cat([i - sink_keys >= width, window_keys >= 0], dim=1)',
             '    valid = torch.cat([i - sink_keys >= 0, window_keys >= 0], dim=1)'),
        ],
    ),
    Mutant(
        'sinks-counted-twice',
        variant='band',
        base='banded_scores',
        why='the sink scores are only blocked in the future, so a sink inside the window is '
            'scored twice.',
        edits=[
            ('    sink = sink.masked_fill(dist < W, float("-inf"))',
             '    sink = sink.masked_fill(dist < 0, float("-inf"))'),
        ],
    ),
    Mutant(
        'full-score-matrix',
        base='query_blocks_sdpa',
        why='the (n, n) mask is built once and sliced per query block.',
        edits=[
            ('    outs = []\n    for start in range(0, n, window):',
             '    full = ~sliding_window_mask(n, window, num_sinks, q.device)\n'
             '    outs = []\n    for start in range(0, n, window):'),
            ('        may = (kj <= qi) & ((qi - kj < window) | (kj < num_sinks))',
             '        may = full[start:end][:, key_idx]'),
        ],
    ),
    Mutant(
        'full-score-matrix',
        variant='sdpa_on_the_whole_sequence',
        base='query_blocks_sdpa',
        why='SDPA on the whole sequence with the inverted (n, n) mask: right numbers, (n, n) '
            'memory.',
        edits=[
            ('    n = q.shape[2]\n    outs = []\n',
             '    n = q.shape[2]\n'
             '    return F.scaled_dot_product_attention(\n'
             '        q, k, v, attn_mask=~sliding_window_mask(n, window, num_sinks, q.device))\n'
             '    outs = []\n'),
        ],
    ),
    Mutant(
        'missing-scale',
        why='the scores are not divided by sqrt(d).',
        base='per_query_gather',
        edits=[
            ('    scores = (q.unsqueeze(-2) * k_seen).sum(-1) / math.sqrt(d)  # (b, h, n, S + W)',
             '    scores = (q.unsqueeze(-2) * k_seen).sum(-1)  # (b, h, n, S + W)'),
        ],
    ),
    Mutant(
        'mask-inverted',
        why='the mask function returns the allowed pairs (True = may attend).',
        edits=[
            ('    return ~allowed\n', '    return allowed\n'),
        ],
    ),
    Mutant(
        'cache-evicts-sinks',
        why='the sinks are taken from the first append only, which may hold fewer than '
            'num_sinks positions.',
        edits=[
            ('        take = max(0, min(t, self.num_sinks - self.length))',
             '        take = min(t, self.num_sinks) if self.length == 0 else 0'),
        ],
    ),
    Mutant(
        'cache-evicts-sinks',
        variant='ring_only',
        base='query_blocks_sdpa',
        why='keys_values() returns the ring buffer alone: the sinks leave with the window.',
        edits=[
            ('        outside = min(self.num_sinks, first)', '        outside = 0'),
        ],
    ),
    Mutant(
        'cache-unbounded',
        why='the cache keeps every position it was given.',
        edits=[
            ('        self.recent_k = k[..., -self.window:, :].clone()\n'
             '        self.recent_v = v[..., -self.window:, :].clone()',
             '        self.recent_k = k.clone()\n        self.recent_v = v.clone()'),
        ],
    ),
    Mutant(
        'cache-unbounded',
        variant='views_of_the_chunks',
        why='the sinks are kept as slices of the appended chunk, without clone(): views that '
            'keep the whole prefill alive.',
        edits=[
            ('            new_k, new_v = k[..., :take, :].clone(), v[..., :take, :].clone()',
             '            new_k, new_v = k[..., :take, :], v[..., :take, :]'),
        ],
    ),
    Mutant(
        'cache-out-of-order',
        base='query_blocks_sdpa',
        why='the ring buffer is read in slot order, not from its oldest slot.',
        edits=[
            ('        order = torch.arange(first, self.seen, device=self.ring_k.device) % self.window',
             '        order = torch.arange(filled, device=self.ring_k.device)'),
        ],
    ),
    Mutant(
        'cache-out-of-order',
        variant='sinks_last',
        why='keys_values() puts the window first and the sinks after it.',
        edits=[
            ('        return (torch.cat([self.sink_k[..., :outside, :], self.recent_k], -2),\n'
             '                torch.cat([self.sink_v[..., :outside, :], self.recent_v], -2))',
             '        return (torch.cat([self.recent_k, self.sink_k[..., :outside, :]], -2),\n'
             '                torch.cat([self.recent_v, self.sink_v[..., :outside, :]], -2))'),
        ],
    ),
    Mutant(
        'forbidden-builtin',
        why='the attention is left to flex_attention with a mask_mod.',
        base='per_query_gather',
        edits=[
            ('    n, d = q.size(-2), q.size(-1)\n    sinks, width',
             '    from torch.nn.attention.flex_attention import create_block_mask, flex_attention\n'
             '    n, d = q.size(-2), q.size(-1)\n'
             '    def mask_mod(b, h, i, j):\n'
             '        return (j <= i) & ((i - j < window) | (j < num_sinks))\n'
             '    return flex_attention(q, k, v, block_mask=create_block_mask(\n'
             '        mask_mod, None, None, n, n, device=str(q.device)))\n'
             '    sinks, width'),
        ],
    ),
]
MUTANTS += [
    Mutant(
        'window-not-causal',
        variant='block_mask_not_causal',
        base='query_blocks_sdpa',
        why='the block mask has no j <= i term: inside its block, a query sees the later keys.',
        edits=[
            ('        may = (kj <= qi) & ((qi - kj < window) | (kj < num_sinks))',
             '        may = (qi - kj < window) | (kj < num_sinks)'),
        ],
    ),
]
MUTANTS += [
    Mutant(
        'mask-inverted',
        variant='project_mask_to_sdpa',
        base='query_blocks_sdpa',
        why="the block's mask is built the project's way (True = blocked) and handed to SDPA, "
            'whose True means may attend.',
        edits=[
            ('        may = (kj <= qi) & ((qi - kj < window) | (kj < num_sinks))  # SDPA: True = may attend',
             '        may = ~((kj <= qi) & ((qi - kj < window) | (kj < num_sinks)))'),
        ],
    ),
]

# Issue 23: sinks forgotten outside the first block of queries, seen only at large n
MUTANTS += [
    Mutant(
        'sinks-dropped',
        variant='outside_the_first_block',
        base='fixed_blocks',
        why='query blocks of 32 rows see the keys [start - window + 1, end) only: the first '
            "block's keys start at 0 and hold the sinks, every later block lacks them.",
        edits=[
            ('        sink_idx = torch.arange(min(num_sinks, lo), device=q.device)  # sinks before it\n',
             '        sink_idx = torch.arange(0, device=q.device)  # (the sinks forgotten)\n'),
        ],
    ),
]
