"""Kata 05's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

MUTANTS = [
    Mutant(
        'dropout-in-eval',
        why='dropout is applied in eval mode too.',
        edits=[
            ('        return self.dropout(x + pe)',
             '        return nn.functional.dropout(x + pe, self.dropout.p, training=True)'),
        ],
    ),
    Mutant(
        'exponent-precedence',
        why='base ** 2 * i / d_model instead of base ** (2i / d_model), i the pair index.',
        edits=[
            ("""    inv_freq = torch.exp(-math.log(base) * two_i / d_model)  # 1 / base^(2i/d_model)
    angles = position * inv_freq  # (max_len, ceil(d_model / 2))
""",
             """    i = two_i / 2
    div_term = base ** 2 * i / d_model
    angles = position / div_term
"""),
        ],
    ),
    Mutant(
        'exponent-precedence',
        variant='two_i',
        why='position / base ** two_i / d_model: the exponent lost its parentheses.',
        edits=[
            ("""    inv_freq = torch.exp(-math.log(base) * two_i / d_model)  # 1 / base^(2i/d_model)
    angles = position * inv_freq  # (max_len, ceil(d_model / 2))
""",
             """    angles = position / base ** two_i / d_model
"""),
        ],
    ),
    Mutant(
        'halves-not-interleaved',
        why='sin columns first, then cos columns (torch.cat), not interleaved.',
        edits=[
            ("""    table = torch.empty(max_len, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles[:, : d_model // 2])  # odd d_model: one cos fewer
""",
             """    table = torch.cat([torch.sin(angles), torch.cos(angles[:, : d_model // 2])], dim=1)
"""),
        ],
    ),
    Mutant(
        'halves-not-interleaved',
        variant='slices',
        why='pe[:, :d/2] = sin, pe[:, d/2:] = cos instead of interleaving.',
        edits=[
            ("""    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles[:, : d_model // 2])  # odd d_model: one cos fewer
""",
             """    half = d_model // 2
    table[:, :half] = torch.sin(angles[:, :half])
    table[:, half:] = torch.cos(angles[:, : d_model - half])
"""),
        ],
    ),
    Mutant(
        'pe-not-buffer',
        why='pe is an nn.Parameter (frozen, but still a parameter).',
        edits=[
            ('        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model))',
             '        self.pe = nn.Parameter(sinusoidal_positional_encoding(max_len, d_model), requires_grad=False)'),
        ],
    ),
    Mutant(
        'pe-not-buffer',
        variant='attribute',
        why='pe is a plain tensor attribute, which .to() leaves behind.',
        edits=[
            ('        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model))',
             '        self.pe = sinusoidal_positional_encoding(max_len, d_model)'),
        ],
    ),
    Mutant(
        'pe-wrong-axis',
        why='batch_first is ignored: the table always goes along dim 0.',
        edits=[
            ('        seq_len = x.size(1 if self.batch_first else 0)',
             '        seq_len = x.size(0)'),
            ('        pe = pe.unsqueeze(0) if self.batch_first else pe.unsqueeze(1)',
             '        pe = pe.unsqueeze(1)'),
        ],
    ),
    Mutant(
        'pe-wrong-axis',
        variant='batch_rows',
        why='x + pe[:x.size(1)] in both layouts: with (seq, batch, d) the rows follow the batch.',
        edits=[
            ("""        pe = self.pe[:seq_len].to(x.dtype)  # (seq_len, d_model)
        pe = pe.unsqueeze(0) if self.batch_first else pe.unsqueeze(1)
""",
             """        pe = self.pe[: x.size(1)].to(x.dtype)  # broadcast as (1, rows, d_model)
"""),
        ],
    ),
    Mutant(
        'pe-wrong-axis',
        variant='broadcast_error',
        why='x + pe[:seq_len] without unsqueeze: (seq, d) does not line up with (seq, batch, d).',
        edits=[
            ("""        pe = pe.unsqueeze(0) if self.batch_first else pe.unsqueeze(1)
""",
             ''),
        ],
    ),
    Mutant(
        'positions-from-one',
        why='positions run 1 .. max_len instead of 0 .. max_len - 1.',
        edits=[
            ('    position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)  # (max_len, 1)',
             '    position = torch.arange(1, max_len + 1, dtype=torch.float64).unsqueeze(1)  # (max_len, 1)'),
        ],
    ),
    Mutant(
        'positions-from-one',
        variant='forward_offset',
        why='forward adds pe[1:seq_len + 1], as if positions started at 1.',
        edits=[
            ('        pe = self.pe[:seq_len].to(x.dtype)  # (seq_len, d_model)',
             '        pe = self.pe[1 : seq_len + 1].to(x.dtype)  # (seq_len, d_model)'),
        ],
    ),
    Mutant(
        'sin-cos-swapped',
        why='cos on the even columns, sin on the odd ones.',
        edits=[
            ("""    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles[:, : d_model // 2])  # odd d_model: one cos fewer
""",
             """    table[:, 0::2] = torch.cos(angles)
    table[:, 1::2] = torch.sin(angles[:, : d_model // 2])
"""),
        ],
    ),
    Mutant(
        'wrong-frequency',
        why='the exponent is i / d_model instead of 2i / d_model.',
        edits=[
            ('    inv_freq = torch.exp(-math.log(base) * two_i / d_model)  # 1 / base^(2i/d_model)',
             '    inv_freq = torch.exp(-math.log(base) * (two_i / 2) / d_model)  # 1 / base^(2i/d_model)'),
        ],
    ),
    Mutant(
        'wrong-frequency',
        variant='blog_loop',
        why='the well-known loop with 2*i on the column index i (and 2*(i+1) for cos).',
        base='stack_flatten',
        edits=[
            ("""    pairs = (d_model + 1) // 2
    freqs = torch.exp(torch.arange(pairs) * (-2.0 * math.log(base) / d_model))
    angles = torch.outer(torch.arange(max_len, dtype=torch.float32), freqs)
    table = torch.stack((angles.sin(), angles.cos()), dim=-1).flatten(start_dim=1)
    return table[:, :d_model].contiguous()
""",
             """    pe = torch.zeros(max_len, d_model)
    for pos in range(max_len):
        for i in range(0, d_model, 2):
            pe[pos, i] = math.sin(pos / (base ** ((2 * i) / d_model)))
            if i + 1 < d_model:
                pe[pos, i + 1] = math.cos(pos / (base ** ((2 * (i + 1)) / d_model)))
    return pe
"""),
            ('    def __init__(self, d_model, dropout=0.1, max_len=5000, batch_first=False):',
             """    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000,
                 batch_first: bool = False):"""),
            ("""        self.seq_dim = 1 if batch_first else 0
        self.drop = nn.Dropout(p=dropout)
""",
             """        self.max_len = max_len
        self.batch_first = batch_first
        self.dropout = nn.Dropout(dropout)
"""),
            ("""        n = x.size(self.seq_dim)
        if n > self.pe.size(0):
            raise ValueError(f"max_len={self.pe.size(0)} is too short for length {n}")
        shape = [1] * x.dim()
        shape[self.seq_dim], shape[-1] = n, x.size(-1)
        return self.drop(x + self.pe.narrow(0, 0, n).view(shape).to(x.dtype))
""",
             """        seq_len = x.size(1 if self.batch_first else 0)
        if seq_len > self.max_len:
            raise ValueError(f"sequence length {seq_len} is longer than max_len={self.max_len}")
        pe = self.pe[:seq_len].to(x.dtype)
        pe = pe.unsqueeze(0) if self.batch_first else pe.unsqueeze(1)
        return self.dropout(x + pe)
"""),
        ],
    ),
    Mutant(
        'wrong-frequency',
        variant='cos_column_index',
        why='each column j uses base^(-j/d): the cos columns get the wrong frequency.',
        edits=[
            ("""    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(d_model / 2),)
    inv_freq = torch.exp(-math.log(base) * two_i / d_model)  # 1 / base^(2i/d_model)
    angles = position * inv_freq  # (max_len, ceil(d_model / 2))
""",
             """    j = torch.arange(d_model, dtype=torch.float64)
    angles = position * torch.exp(-math.log(base) * j / d_model)  # (max_len, d_model)
"""),
            ("""    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles[:, : d_model // 2])  # odd d_model: one cos fewer
""",
             """    table[:, 0::2] = torch.sin(angles[:, 0::2])
    table[:, 1::2] = torch.cos(angles[:, 1::2])
"""),
        ],
    ),
    Mutant(
        'wrong-frequency',
        variant='integer_division',
        why='2 * i // d_model (integer division) makes every exponent 0: one frequency.',
        base='stack_flatten',
        edits=[
            ("""    pairs = (d_model + 1) // 2
    freqs = torch.exp(torch.arange(pairs) * (-2.0 * math.log(base) / d_model))
    angles = torch.outer(torch.arange(max_len, dtype=torch.float32), freqs)
    table = torch.stack((angles.sin(), angles.cos()), dim=-1).flatten(start_dim=1)
    return table[:, :d_model].contiguous()
""",
             """    pe = torch.zeros(max_len, d_model)
    for pos in range(max_len):
        for i in range(0, d_model, 2):
            pe[pos, i] = math.sin(pos / (base ** (2 * (i // 2) // d_model)))
            if i + 1 < d_model:
                pe[pos, i + 1] = math.cos(pos / (base ** (2 * (i // 2) // d_model)))
    return pe
"""),
            ('    def __init__(self, d_model, dropout=0.1, max_len=5000, batch_first=False):',
             """    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000,
                 batch_first: bool = False):"""),
            ("""        self.seq_dim = 1 if batch_first else 0
        self.drop = nn.Dropout(p=dropout)
""",
             """        self.max_len = max_len
        self.batch_first = batch_first
        self.dropout = nn.Dropout(dropout)
"""),
            ("""        n = x.size(self.seq_dim)
        if n > self.pe.size(0):
            raise ValueError(f"max_len={self.pe.size(0)} is too short for length {n}")
        shape = [1] * x.dim()
        shape[self.seq_dim], shape[-1] = n, x.size(-1)
        return self.drop(x + self.pe.narrow(0, 0, n).view(shape).to(x.dtype))
""",
             """        seq_len = x.size(1 if self.batch_first else 0)
        if seq_len > self.max_len:
            raise ValueError(f"sequence length {seq_len} is longer than max_len={self.max_len}")
        pe = self.pe[:seq_len].to(x.dtype)
        pe = pe.unsqueeze(0) if self.batch_first else pe.unsqueeze(1)
        return self.dropout(x + pe)
"""),
        ],
    ),
    Mutant(
        'wrong-frequency',
        variant='inverted',
        why='p * base^(2i/d) instead of p / base^(2i/d).',
        edits=[
            ('    inv_freq = torch.exp(-math.log(base) * two_i / d_model)  # 1 / base^(2i/d_model)',
             '    inv_freq = torch.exp(math.log(base) * two_i / d_model)  # 1 / base^(2i/d_model)'),
        ],
    ),
]
