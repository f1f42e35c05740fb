"""Kata 04's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

MUTANTS = [
    Mutant(
        'causal-diagonal',
        why='causal_mask blocks the diagonal too (triu with diagonal=0).',
        edits=[
            ('    return torch.triu(full, diagonal=1)',
             '    return torch.triu(full, diagonal=0)'),
        ],
    ),
    Mutant(
        'causal-diagonal',
        variant='tril',
        why='causal_mask keeps only keys strictly before the query (tril with diagonal=-1).',
        edits=[
            ("""    full = torch.full((size, size), float("-inf"), device=device)
    # diagonal=1 keeps the diagonal at 0: a token may attend to itself.
    return torch.triu(full, diagonal=1)
""",
             """    allowed = torch.tril(torch.ones(size, size, device=device), diagonal=-1)
    return torch.zeros(size, size, device=device).masked_fill(allowed == 0, float("-inf"))
"""),
        ],
    ),
    Mutant(
        'float-mask-as-bool',
        why='merge_masks turns a float attn_mask into -inf/0 with .bool(), dropping its values.',
        edits=[
            ("            merged = attn_mask.to(dtype)  # a float mask's values are added as they are",
             """            merged = torch.zeros(attn_mask.shape, dtype=dtype)
            merged = merged.masked_fill(attn_mask.bool(), float("-inf"))"""),
        ],
    ),
    Mutant(
        'float-mask-as-bool',
        variant='negative',
        why='merge_masks blocks where a float attn_mask is negative instead of adding its values.',
        edits=[
            ("            merged = attn_mask.to(dtype)  # a float mask's values are added as they are",
             '            merged = torch.where(attn_mask < 0, float("-inf"), 0.0).to(dtype)'),
        ],
    ),
    Mutant(
        'forbidden-builtin',
        why="merge_masks borrows nn.MultiheadAttention's own merge_masks (the class is forbidden).",
        edits=[
            ("""    merged = None
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            merged = torch.zeros(attn_mask.shape, dtype=dtype, device=attn_mask.device)
            merged = merged.masked_fill(attn_mask, float("-inf"))
        else:
            merged = attn_mask.to(dtype)  # a float mask's values are added as they are
    if key_padding_mask is not None:
        batch, m = key_padding_mask.shape
        padding = torch.zeros((batch, m), dtype=dtype, device=key_padding_mask.device)
        padding = padding.masked_fill(key_padding_mask, float("-inf"))
        # (b, m) -> (b*h, 1, m): every head of batch element i gets row i (batch-major).
        padding = padding.repeat_interleave(num_heads, dim=0).unsqueeze(1)
        # Blocked by either mask: -inf + anything = -inf.
        merged = padding if merged is None else merged + padding
""",
             """    if key_padding_mask is None and attn_mask is None:
        return None
    from torch import nn

    batch = key_padding_mask.size(0) if key_padding_mask is not None else 1
    helper = nn.MultiheadAttention(num_heads, num_heads, batch_first=True)
    query = torch.zeros(batch, 1, num_heads, dtype=dtype)
    merged, _ = helper.merge_masks(attn_mask, key_padding_mask, query)
"""),
        ],
    ),
    Mutant(
        'mask-and-instead-of-or',
        why='merge_masks combines the bool masks with & (blocked only where both block).',
        edits=[
            ("""    merged = None
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            merged = torch.zeros(attn_mask.shape, dtype=dtype, device=attn_mask.device)
            merged = merged.masked_fill(attn_mask, float("-inf"))
        else:
            merged = attn_mask.to(dtype)  # a float mask's values are added as they are
""",
             """    if key_padding_mask is None and attn_mask is None:
        return None
    padding = None  # bool (b*h, 1, m), True = blocked
"""),
            ("""        batch, m = key_padding_mask.shape
        padding = torch.zeros((batch, m), dtype=dtype, device=key_padding_mask.device)
        padding = padding.masked_fill(key_padding_mask, float("-inf"))
        # (b, m) -> (b*h, 1, m): every head of batch element i gets row i (batch-major).
        padding = padding.repeat_interleave(num_heads, dim=0).unsqueeze(1)
        # Blocked by either mask: -inf + anything = -inf.
        merged = padding if merged is None else merged + padding
    return merged
""",
             """        padding = key_padding_mask.repeat_interleave(num_heads, dim=0).unsqueeze(1)
    if attn_mask is not None and attn_mask.dtype != torch.bool:
        merged = attn_mask.to(dtype)
        if padding is not None:
            merged = merged.masked_fill(padding, float("-inf"))
        return merged
    if padding is None:
        blocked = attn_mask
    elif attn_mask is None:
        blocked = padding
    else:
        blocked = padding & attn_mask  # the mistake: blocked only where both block
    merged = torch.zeros(blocked.shape, dtype=dtype, device=blocked.device)
    return merged.masked_fill(blocked, float("-inf"))
"""),
        ],
    ),
    Mutant(
        'mask-and-instead-of-or',
        variant='maximum',
        why='merge_masks combines the additive masks with torch.maximum (an AND).',
        edits=[
            ("            merged = attn_mask.to(dtype)  # a float mask's values are added as they are",
             '            merged = attn_mask.to(dtype)'),
            ("""        # (b, m) -> (b*h, 1, m): every head of batch element i gets row i (batch-major).
""",
             ''),
            ("""        # Blocked by either mask: -inf + anything = -inf.
        merged = padding if merged is None else merged + padding
""",
             """        merged = padding if merged is None else torch.maximum(merged, padding)
"""),
        ],
    ),
    Mutant(
        'mask-and-instead-of-or',
        variant='product',
        why='merge_masks multiplies 0/1 blocked masks (an AND), and a float mask by the padding.',
        edits=[
            ("""    merged = None
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            merged = torch.zeros(attn_mask.shape, dtype=dtype, device=attn_mask.device)
            merged = merged.masked_fill(attn_mask, float("-inf"))
        else:
            merged = attn_mask.to(dtype)  # a float mask's values are added as they are
""",
             """    if key_padding_mask is None and attn_mask is None:
        return None
    padding = None
"""),
            ("""        batch, m = key_padding_mask.shape
        padding = torch.zeros((batch, m), dtype=dtype, device=key_padding_mask.device)
        padding = padding.masked_fill(key_padding_mask, float("-inf"))
        # (b, m) -> (b*h, 1, m): every head of batch element i gets row i (batch-major).
        padding = padding.repeat_interleave(num_heads, dim=0).unsqueeze(1)
        # Blocked by either mask: -inf + anything = -inf.
        merged = padding if merged is None else merged + padding
    return merged
""",
             """        padding = key_padding_mask.to(dtype).repeat_interleave(num_heads, dim=0).unsqueeze(1)
    if attn_mask is None:
        return torch.zeros_like(padding).masked_fill(padding.bool(), float("-inf"))
    if attn_mask.dtype != torch.bool:
        if padding is None:
            return attn_mask.to(dtype)
        additive = torch.zeros_like(padding).masked_fill(padding.bool(), float("-inf"))
        return attn_mask.to(dtype) * additive
    blocked = attn_mask.to(dtype) if padding is None else attn_mask.to(dtype) * padding
    return torch.zeros(blocked.shape, dtype=dtype, device=blocked.device).masked_fill(
        blocked.bool(), float("-inf"))
"""),
        ],
    ),
    Mutant(
        'mask-inverted',
        why='padding_mask is True at the valid positions instead of the padding.',
        edits=[
            ('    return positions[None, :] >= lengths[:, None]',
             '    return positions[None, :] < lengths[:, None]'),
        ],
    ),
    Mutant(
        'mask-inverted',
        variant='causal',
        why='causal_mask blocks the past and the diagonal, allows the future.',
        edits=[
            ("""    full = torch.full((size, size), float("-inf"), device=device)
    # diagonal=1 keeps the diagonal at 0: a token may attend to itself.
    return torch.triu(full, diagonal=1)
""",
             """    keep = torch.tril(torch.ones(size, size, device=device)).bool()
    return torch.zeros(size, size, device=device).masked_fill(keep, float("-inf"))
"""),
        ],
    ),
    Mutant(
        'mask-inverted',
        variant='merge_attn',
        why='merge_masks reads a bool attn_mask as True = may attend.',
        edits=[
            ('            merged = merged.masked_fill(attn_mask, float("-inf"))',
             '            merged = merged.masked_fill(attn_mask.logical_not(), float("-inf"))'),
        ],
    ),
    Mutant(
        'mask-inverted',
        variant='merge_padding',
        why='merge_masks blocks the valid keys of key_padding_mask, not the padded ones.',
        edits=[
            ('        padding = padding.masked_fill(key_padding_mask, float("-inf"))',
             '        padding = padding.masked_fill(~key_padding_mask, float("-inf"))'),
        ],
    ),
    Mutant(
        'padding-mask-head-order',
        why='merge_masks repeats the padding rows head-major (repeat instead of repeat_interleave).',
        edits=[
            ('        padding = padding.repeat_interleave(num_heads, dim=0).unsqueeze(1)',
             '        padding = padding.repeat(num_heads, 1).unsqueeze(1)'),
        ],
    ),
    Mutant(
        'padding-mask-head-order',
        variant='expand',
        why='merge_masks expands the padding over heads in front: (h, b, m) -> (h*b, 1, m).',
        edits=[
            ('        padding = padding.repeat_interleave(num_heads, dim=0).unsqueeze(1)',
             '        padding = padding.unsqueeze(0).expand(num_heads, batch, m).reshape(num_heads * batch, 1, m)'),
        ],
    ),
    Mutant(
        'causal-mask-transposed',
        why='builds the causal mask with tril where triu belongs: it blocks the past.',
        edits=[
            ('    return torch.triu(full, diagonal=1)',
             '    return torch.tril(full, diagonal=-1)'),
        ],
    ),
]
