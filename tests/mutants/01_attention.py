"""Kata 01's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

MUTANTS = [
    Mutant(
        'forbidden-builtin',
        why='uses F.scaled_dot_product_attention for the output.',
        edits=[
            ('    return weights @ value, weights',
             """    output = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=None if attn_mask is None else (~attn_mask if attn_mask.dtype == torch.bool else attn_mask))
    return output, weights"""),
        ],
    ),
    Mutant(
        'mask-after-softmax',
        why='zeroes the blocked weights after the softmax.',
        edits=[
            ('    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))',
             """    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    weights = torch.softmax(scores, dim=-1)"""),
            ('            scores = scores.masked_fill(attn_mask, float("-inf"))',
             '            weights = weights.masked_fill(attn_mask, 0.0)'),
            ('            scores = scores + attn_mask',
             '            weights = weights * torch.exp(attn_mask)'),
            ('    weights = torch.softmax(scores, dim=-1).masked_fill(all_blocked, 0.0)',
             '    weights = weights.masked_fill(all_blocked, 0.0)'),
        ],
    ),
    Mutant(
        'mask-inverted',
        why="treats True as 'may attend'.",
        edits=[
            ('            scores = scores.masked_fill(attn_mask, float("-inf"))',
             '            scores = scores.masked_fill(~attn_mask, float("-inf"))'),
        ],
    ),
    Mutant(
        'mask-inverted',
        variant='where',
        why='keeps the scores where the mask is True (torch.where).',
        edits=[
            ('            scores = scores.masked_fill(attn_mask, float("-inf"))',
             '            scores = torch.where(attn_mask, scores, torch.full_like(scores, float("-inf")))'),
        ],
    ),
    Mutant(
        'missing-out-proj',
        why='returns the attended values without out_proj.',
        edits=[
            ('        output = self.out_proj(attended)',
             '        output = attended'),
        ],
    ),
    Mutant(
        'missing-scale',
        why='the scores are not scaled by 1/sqrt(d_k).',
        edits=[
            ('    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))',
             '    scores = query @ key.transpose(-2, -1)'),
        ],
    ),
    Mutant(
        'nan-on-fully-masked',
        why="lets a fully masked row's softmax be NaN.",
        edits=[
            ("""    all_blocked = torch.isneginf(scores).all(dim=-1, keepdim=True)
    scores = scores.masked_fill(all_blocked, 0.0)
    weights = torch.softmax(scores, dim=-1).masked_fill(all_blocked, 0.0)
""",
             """    weights = torch.softmax(scores, dim=-1)
"""),
        ],
    ),
    Mutant(
        'nan-on-fully-masked',
        variant='zeroed_after_softmax_only',
        why="zeroes a fully masked row's weights after the softmax only (torch.where): the "
            "forward is right, but with a float -inf mask the query and key gradients are NaN.",
        edits=[
            ("""    scores = scores.masked_fill(all_blocked, 0.0)
    weights = torch.softmax(scores, dim=-1).masked_fill(all_blocked, 0.0)
""",
             """    weights = torch.where(all_blocked, 0.0, torch.softmax(scores, dim=-1))
"""),
        ],
    ),
    Mutant(
        'finite-mask-fill',
        why="fills blocked scores with -1e9 (the annotated transformer's masked_fill): a fully "
            "masked row attends uniformly instead of getting zero weights.",
        edits=[
            ('            scores = scores.masked_fill(attn_mask, float("-inf"))',
             '            scores = scores.masked_fill(attn_mask, -1e9)'),
        ],
    ),
    Mutant(
        'softmax-wrong-dim',
        why='softmax over the queries (dim=-2).',
        edits=[
            ('    weights = torch.softmax(scores, dim=-1)',
             '    weights = torch.softmax(scores, dim=-2)'),
        ],
    ),
    Mutant(
        'softmax-wrong-dim',
        variant='first_axis',
        why='softmax over dim=1, which is the query axis for 3-D inputs.',
        edits=[
            ('    weights = torch.softmax(scores, dim=-1)',
             '    weights = torch.softmax(scores, dim=1)'),
        ],
    ),
    Mutant(
        'wrong-projection',
        why='projects the value with the key weights.',
        edits=[
            ('            self.q_proj(query), self.k_proj(key), self.v_proj(value), attn_mask',
             '            self.q_proj(query), self.k_proj(key), self.k_proj(value), attn_mask'),
        ],
    ),
    Mutant(
        'wrong-projection',
        variant='self_attention',
        why='projects the query for key and value (self-attention habit).',
        edits=[
            ('            self.q_proj(query), self.k_proj(key), self.v_proj(value), attn_mask',
             '            self.q_proj(query), self.k_proj(query), self.v_proj(query), attn_mask'),
        ],
    ),
    Mutant(
        'wrong-scale',
        why='the scores are divided by d_k instead of sqrt(d_k).',
        edits=[
            ('    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))',
             '    scores = query @ key.transpose(-2, -1) / query.size(-1)'),
        ],
    ),
    Mutant(
        'wrong-scale',
        variant='value_width',
        why='the scores are scaled by the value width d_v.',
        edits=[
            ('    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))',
             '    scores = query @ key.transpose(-2, -1) / math.sqrt(value.size(-1))'),
        ],
    ),
]
