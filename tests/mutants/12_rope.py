"""Kata 12's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

MUTANTS = [
    Mutant(
        'rope-pairs-mismatch',
        why='swaps the two pairings: halves when interleaved=True is asked, adjacent pairs '
            'by default (reading RoFormer\'s paper and Hugging Face\'s code as one).',
        edits=[
            ("    if interleaved:\n        x1, x2 = x[..., 0::2], x[..., 1::2]\n",
             "    if not interleaved:\n        x1, x2 = x[..., 0::2], x[..., 1::2]\n"),
            ("    if interleaved:\n        return torch.stack((y1, y2), dim=-1).flatten(-2)\n",
             "    if not interleaved:\n        return torch.stack((y1, y2), dim=-1).flatten(-2)\n"),
        ],
    ),
    Mutant(
        'rope-pairs-mismatch',
        variant='interleaved_table_with_rotate_half',
        why='builds the cos/sin table Meta\'s way (each frequency twice in a row, '
            'repeat_interleave) but rotates halves with rotate_half, as Hugging Face does.',
        base='hf_rotate_half',
        edits=[("    emb = torch.cat((freqs, freqs), dim=-1)\n",
                "    emb = freqs.repeat_interleave(2, dim=-1)\n")],
    ),
    Mutant(
        'rope-pairs-mismatch',
        variant='always_complex_pairs',
        why='reads adjacent features as one complex number whatever interleaved says.',
        base='complex_polar',
        edits=[("    if interleaved:\n        z = torch.view_as_complex",
                "    if True:\n        z = torch.view_as_complex")],
    ),
    Mutant(
        'rope-pairs-mismatch',
        variant='read_as_neighbours_written_as_halves',
        why='reads the pairs as neighbours x[0::2], x[1::2] whatever interleaved says, then '
            'writes the default\'s back as halves (cat): the right rotation, its features '
            'permuted.',
        edits=[("    if interleaved:\n        x1, x2 = x[..., 0::2], x[..., 1::2]\n"
                "    else:\n        x1, x2 = x[..., : d // 2], x[..., d // 2:]\n",
                "    x1, x2 = x[..., 0::2], x[..., 1::2]\n")],
    ),
    Mutant(
        'rope-wrong-frequency',
        why='forgets the 2 in the exponent: base ** (-i / head_dim).',
        edits=[("    inv_freq = base ** (-2.0 * pair / head_dim)\n",
                "    inv_freq = base ** (-pair / head_dim)\n")],
    ),
    Mutant(
        'rope-wrong-frequency',
        variant='doubled_two',
        why='takes i from arange(0, head_dim, 2), which already holds 2i, and doubles it '
            'again.',
        edits=[("    pair = torch.arange(head_dim // 2, dtype=torch.float64, device=positions.device)\n",
                "    pair = torch.arange(0, head_dim, 2, dtype=torch.float64, device=positions.device)\n")],
    ),
    Mutant(
        'rope-wrong-frequency',
        variant='no_reciprocal',
        why='multiplies by base ** (2i / d) instead of dividing by it.',
        base='hf_rotate_half',
        edits=[("    inv_freq = 1.0 / (base ** (torch.arange(",
                "    inv_freq = (base ** (torch.arange(")],
    ),
    Mutant(
        'rope-wrong-frequency',
        variant='exponent_precedence',
        why='writes base ** -2.0 * pair / head_dim without brackets: (base ** -2) * i / d.',
        edits=[("    inv_freq = base ** (-2.0 * pair / head_dim)\n",
                "    inv_freq = base ** -2.0 * pair / head_dim\n")],
    ),
    Mutant(
        'rope-wrong-frequency',
        variant='linspace_end_included',
        why='takes the exponents 2i/d from linspace(0, 1, d // 2), whose last one is 1, '
            'instead of dropping the end of linspace(0, 1, d // 2 + 1).',
        base='rotation_matrices',
        edits=[("    exponents = torch.linspace(0.0, 1.0, head_dim // 2 + 1, dtype=torch.float64)[:-1]\n",
                "    exponents = torch.linspace(0.0, 1.0, head_dim // 2, dtype=torch.float64)\n")],
    ),
    Mutant(
        'rope-wrong-frequency',
        variant='log_divided',
        why='writes base^(-2i/d) as an exponential and divides by log(base) where it should '
            'multiply: exp(-(2i/d) / log(base)).',
        base='complex_polar',
        edits=[("    freqs = torch.exp(-2.0 * i / head_dim * math.log(base))\n",
                "    freqs = torch.exp(-(2.0 * i / head_dim) / math.log(base))\n")],
    ),
    Mutant(
        'rope-wrong-frequency',
        variant='angles_in_x_dtype',
        why='computes the angles in x\'s dtype (positions and inv_freq cast to it): right in '
            'float32, off by a large fraction of a radian in float16 and bfloat16 at positions '
            'in the hundreds.',
        base='hf_rotate_half',
        edits=[("    freqs = rope_angles(positions, d, base)\n",
                "    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=x.dtype, device=x.device) / d))\n"
                "    freqs = positions.to(x.dtype)[..., None] * inv_freq\n")],
    ),
    Mutant(
        'rope-rotation-reversed',
        why='writes the rotation with the sin signs the other way round (a rotation by -θ).',
        edits=[
            ("    y1 = x1 * cos - x2 * sin\n    y2 = x1 * sin + x2 * cos\n",
             "    y1 = x1 * cos + x2 * sin\n    y2 = x2 * cos - x1 * sin\n"),
        ],
    ),
    Mutant(
        'rope-rotation-reversed',
        variant='rotate_half_sign',
        why='rotate_half returns cat(x2, -x1) instead of cat(-x2, x1).',
        base='hf_rotate_half',
        edits=[("    return torch.cat((-x2, x1), dim=-1)\n", "    return torch.cat((x2, -x1), dim=-1)\n")],
    ),
    Mutant(
        'rope-rotation-reversed',
        variant='conjugate',
        why='multiplies by the conjugate, e^(-iθ).',
        base='complex_polar',
        edits=[("    rotation = torch.polar(torch.ones_like(angles, dtype=work), angles.to(work))\n",
                "    rotation = torch.polar(torch.ones_like(angles, dtype=work), angles.to(work)).conj()\n")],
    ),
    Mutant(
        'rope-positions-ignored',
        why='always uses 0 ... n-1, as every example with arange would pass.',
        edits=[("    if positions is None:\n        positions = torch.arange(n, device=x.device)\n",
                "    positions = torch.arange(n, device=x.device)\n")],
    ),
    Mutant(
        'rope-positions-ignored',
        variant='first_row',
        why='with (b, n) positions, keeps the first batch row\'s angles for every row.',
        edits=[("        angles = angles[:, None]  # (b, 1, n, d/2): the same positions for every head\n",
                "        angles = angles[0]\n")],
    ),
    Mutant(
        'rope-cos-sin-swapped',
        why='takes sin for the cos table and cos for the sin table.',
        edits=[("    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)\n",
                "    sin, cos = angles.cos().to(x.dtype), angles.sin().to(x.dtype)\n")],
    ),
    Mutant(
        'rope-cos-sin-swapped',
        variant='hf_form',
        why='writes x * sin + rotate_half(x) * cos.',
        base='hf_rotate_half',
        edits=[("        return x * cos + rotate_half(x) * sin\n",
                "        return x * sin + rotate_half(x) * cos\n")],
    ),
]
