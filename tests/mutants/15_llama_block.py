"""Kata 15's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

MUTANTS = [
    Mutant(
        'rmsnorm-subtracts-mean',
        why='LayerNorm without a bias: x is centred and divided by its standard deviation.',
        edits=[
            ('        normed = wide * torch.rsqrt(wide.pow(2).mean(dim=-1, keepdim=True) + self.eps)',
             '        centred = wide - wide.mean(dim=-1, keepdim=True)\n'
             '        normed = centred * torch.rsqrt(centred.pow(2).mean(dim=-1, keepdim=True) + self.eps)'),
        ],
    ),
    Mutant(
        'rmsnorm-subtracts-mean',
        variant='variance_for_mean_square',
        base='hf_modeling_llama',
        why='the "variance" of LlamaRMSNorm taken literally: hidden_states.var(-1) (centred, '
            'unbiased) instead of the mean of the squares.',
        edits=[
            ('        variance = hidden_states.pow(2).mean(-1, keepdim=True)',
             '        variance = hidden_states.var(-1, keepdim=True)'),
        ],
    ),
    Mutant(
        'rmsnorm-eps-outside-sqrt',
        why='eps is added after the square root: x / (sqrt(mean(x²)) + eps).',
        edits=[
            ('        normed = wide * torch.rsqrt(wide.pow(2).mean(dim=-1, keepdim=True) + self.eps)',
             '        normed = wide / (wide.pow(2).mean(dim=-1, keepdim=True).sqrt() + self.eps)'),
        ],
    ),
    Mutant(
        'rmsnorm-eps-outside-sqrt',
        variant='norm_plus_eps',
        base='complex_rope',
        why='the root mean square is taken with x.norm() / sqrt(dim) and eps added to it.',
        edits=[
            ('        rms = x.pow(2).mean(dim=-1, keepdim=True).add(self.eps).sqrt()',
             '        rms = x.norm(dim=-1, keepdim=True) / x.shape[-1] ** 0.5 + self.eps'),
        ],
    ),
    Mutant(
        'rmsnorm-no-upcast',
        why='the norm is computed in the input\'s dtype: a float16 x is squared in float16.',
        edits=[
            ('        wide = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x\n',
             '        wide = x\n'),
        ],
    ),
    Mutant(
        'rmsnorm-no-upcast',
        variant='hf_without_upcast',
        base='hf_modeling_llama',
        why='LlamaRMSNorm without its .to(torch.float32): the variance of a float16 input '
            'is taken in float16.',
        edits=[
            ('        hidden_states = hidden_states.to(torch.float32)\n', ''),
        ],
    ),
    Mutant(
        'swiglu-gate-swapped',
        why='SiLU is applied to up_proj\'s output, and gate_proj\'s multiplies it.',
        edits=[
            ('        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))',
             '        return self.down_proj(self.gate_proj(x) * F.silu(self.up_proj(x)))'),
        ],
    ),
    Mutant(
        'swiglu-wrong-activation',
        why='GELU (the activation of GPT-2 and BERT) gates the MLP instead of SiLU.',
        edits=[
            ('        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))',
             '        return self.down_proj(F.gelu(self.gate_proj(x)) * self.up_proj(x))'),
        ],
    ),
    Mutant(
        'swiglu-wrong-activation',
        variant='sigmoid_only',
        base='sdpa_gqa',
        why='the gate is sigmoid(gate) (a GLU), the "z ·" of SiLU forgotten.',
        edits=[
            ('        return self.down_proj(gate * torch.sigmoid(gate) * up)',
             '        return self.down_proj(torch.sigmoid(gate) * up)'),
        ],
    ),
    Mutant(
        'swiglu-wrong-activation',
        variant='quick_gelu',
        why='quick-GELU, z · sigmoid(1.702 z) (CLIP\'s activation), gates the MLP instead of '
            'SiLU, z · sigmoid(z).',
        edits=[
            ('        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))',
             '        gate = self.gate_proj(x)\n'
             '        return self.down_proj(gate * torch.sigmoid(1.702 * gate) * self.up_proj(x))'),
        ],
    ),
    Mutant(
        'swiglu-wrong-activation',
        variant='relu',
        base='hf_modeling_llama',
        why='the activation module is nn.ReLU().',
        edits=[('        self.act_fn = nn.SiLU()', '        self.act_fn = nn.ReLU()')],
    ),
    Mutant(
        'rope-on-values',
        why='the values are rotated like the keys.',
        edits=[
            ('        k = k * cos + rotate_half(k) * sin  # values are never rotated',
             '        k = k * cos + rotate_half(k) * sin\n        v = v * cos + rotate_half(v) * sin'),
        ],
    ),
    Mutant(
        'rope-on-values',
        variant='loop',
        base='loops_einsum',
        why='the per-head loop rotates the value head too.',
        edits=[
            ('            v = v_all[..., g * d:(g + 1) * d]',
             '            v = self.rope(v_all[..., g * d:(g + 1) * d], positions)'),
        ],
    ),
    Mutant(
        'rope-pairs-mismatch',
        why='Meta\'s interleaved pairs (2i, 2i+1), rotation and table, on Hugging Face\'s '
            'weights, which pair (i, i + d/2).',
        edits=[
            ('    angles = torch.cat((angles, angles), dim=-1)  # column i and i + d/2 share an angle',
             '    angles = angles.repeat_interleave(2, dim=-1)'),
            ('    x1, x2 = x.chunk(2, dim=-1)\n    return torch.cat((-x2, x1), dim=-1)',
             '    x1, x2 = x[..., 0::2], x[..., 1::2]\n    return torch.stack((-x2, x1), dim=-1).flatten(-2)'),
        ],
    ),
    Mutant(
        'rope-pairs-mismatch',
        variant='complex_adjacent',
        base='complex_rope',
        why='the complex numbers are made from adjacent features (view_as_complex on (d/2, 2)), '
            'Meta\'s layout.',
        edits=[
            ('    half = t.shape[-1] // 2\n'
             '    z = torch.complex(t[..., :half].float() if t.dtype in (torch.float16, torch.bfloat16) else t[..., :half],\n'
             '                      t[..., half:].float() if t.dtype in (torch.float16, torch.bfloat16) else t[..., half:])\n'
             '    z = z * turn\n'
             '    return torch.cat((z.real, z.imag), dim=-1).to(t.dtype)',
             '    wide = t.float() if t.dtype in (torch.float16, torch.bfloat16) else t\n'
             '    z = torch.view_as_complex(wide.reshape(*t.shape[:-1], -1, 2).contiguous()) * turn\n'
             '    return torch.view_as_real(z).flatten(-2).to(t.dtype)'),
        ],
    ),
    Mutant(
        'rope-pairs-mismatch',
        variant='table_interleaved',
        base='hf_modeling_llama',
        why='rotate_half as in Hugging Face, but the cos/sin table laid out for adjacent pairs '
            '(repeat_interleave), as in code ported from Meta\'s checkpoint format.',
        edits=[
            ('        emb = torch.cat((freqs, freqs), dim=-1)',
             '        emb = freqs.repeat_interleave(2, dim=-1)'),
        ],
    ),
    Mutant(
        'rope-positions-ignored',
        why='the angles are those of 0 ... n-1 whatever positions says.',
        edits=[
            ('        if positions is None:\n            positions = torch.arange(n, device=x.device)\n'
             '        cos, sin = rope_cos_sin(',
             '        positions = torch.arange(n, device=x.device)\n'
             '        cos, sin = rope_cos_sin('),
        ],
    ),
    Mutant(
        'rope-positions-ignored',
        variant='first_row',
        base='hf_modeling_llama',
        why='(b, n) positions are reduced to their first row, as if the batch shared them.',
        edits=[
            ('        position_ids = positions.expand(input_shape[0], -1) if positions.dim() == 1 else positions',
             '        position_ids = (positions if positions.dim() == 1 else positions[0]).expand(input_shape[0], -1)'),
        ],
    ),
    Mutant(
        'causal-mask-missing',
        why='no causal mask: every query attends to every key, the later ones included.',
        edits=[
            ('        weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)',
             '        weights = torch.softmax(scores, dim=-1)'),
        ],
    ),
    Mutant(
        'causal-mask-missing',
        variant='sdpa_without_is_causal',
        base='sdpa_gqa',
        why='F.scaled_dot_product_attention called without is_causal=True.',
        edits=[
            ('        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)',
             '        out = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)'),
        ],
    ),
    Mutant(
        'kv-heads-tiled',
        why='the kv heads are copied with repeat, so query head j reads kv head j % num_kv_heads.',
        edits=[
            ('        k = k.repeat_interleave(group, dim=1)  # (b, h, n, d)\n'
             '        v = v.repeat_interleave(group, dim=1)',
             '        k = k.repeat(1, group, 1, 1)  # (b, h, n, d)\n'
             '        v = v.repeat(1, group, 1, 1)'),
        ],
    ),
    Mutant(
        'kv-heads-tiled',
        variant='loop_modulo',
        base='loops_einsum',
        why='the per-head loop picks kv head j % num_kv_heads.',
        edits=[('            g = j // group', '            g = j % self.num_kv_heads')],
    ),
    Mutant(
        'kv-heads-tiled',
        variant='expand_group_outermost',
        base='complex_rope',
        why='expand with the group axis in front of the kv axis, for the keys and the values.',
        edits=[
            ('        k = k[:, :, None].expand(b, kv, h // kv, n, d).reshape(b, h, n, d)\n'
             '        v = v[:, :, None].expand(b, kv, h // kv, n, d).reshape(b, h, n, d)',
             '        k = k[:, None].expand(b, h // kv, kv, n, d).reshape(b, h, n, d)\n'
             '        v = v[:, None].expand(b, h // kv, kv, n, d).reshape(b, h, n, d)'),
        ],
    ),
    Mutant(
        'missing-scale',
        why='the scores are not divided by sqrt(head_dim).',
        edits=[
            ('        scores = q @ k.transpose(-2, -1) / math.sqrt(d)  # (b, h, n, n)',
             '        scores = q @ k.transpose(-2, -1)  # (b, h, n, n)'),
        ],
    ),
    Mutant(
        'missing-scale',
        variant='scaling_one',
        base='hf_modeling_llama',
        why='the scaling attribute is left at 1.',
        edits=[('        self.scaling = self.head_dim**-0.5', '        self.scaling = 1.0')],
    ),
    Mutant(
        'norm-order-swapped',
        why='Post-LN, as in the original Transformer: each norm after its residual sum.',
        edits=[
            ('        h = x + self.self_attn(self.input_layernorm(x), positions)\n'
             '        return h + self.mlp(self.post_attention_layernorm(h))',
             '        h = self.input_layernorm(x + self.self_attn(x, positions))\n'
             '        return self.post_attention_layernorm(h + self.mlp(h))'),
        ],
    ),
    Mutant(
        'missing-residual',
        why='the MLP\'s output replaces the stream instead of being added to it.',
        edits=[
            ('        return h + self.mlp(self.post_attention_layernorm(h))',
             '        return self.mlp(self.post_attention_layernorm(h))'),
        ],
    ),
    Mutant(
        'missing-residual',
        variant='attention_residual',
        base='hf_modeling_llama',
        why='the first residual is forgotten: the stream after the attention is its output alone.',
        edits=[
            ('        hidden_states = self.self_attn(hidden_states, positions)\n'
             '        hidden_states = residual + hidden_states\n',
             '        hidden_states = self.self_attn(hidden_states, positions)\n'),
        ],
    ),
    Mutant(
        'forbidden-builtin',
        why='the norms are nn.RMSNorm, which this kata forbids.',
        edits=[
            ('        self.input_layernorm = RMSNorm(dim, eps)',
             '        self.input_layernorm = nn.RMSNorm(dim, eps)'),
        ],
    ),
    Mutant(
        'forbidden-builtin',
        variant='functional',
        base='sdpa_gqa',
        why='RMSNorm\'s forward calls F.rms_norm.',
        edits=[
            ('        x32 = x.float()\n',
             '        return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)\n'
             '        x32 = x.float()\n'),
        ],
    ),
]

MUTANTS += [
    Mutant(
        'rope-wrong-frequency',
        why='the frequencies use the model width dim where the head width belongs: '
            'base ** (-2i / dim) (RoPE written once for the whole vector, then split).',
        edits=[
            ('        cos, sin = rope_cos_sin(positions, d, self.rope_base, x.dtype)  # (n, d) or (b, n, d)',
             '        cos, sin = rope_cos_sin(positions, d, self.rope_base, x.dtype, h * d)  # (n, d) or (b, n, d)'),
            ('def rope_cos_sin(positions: Tensor, head_dim: int, base: float, dtype: torch.dtype\n'
             '                 ) -> tuple[Tensor, Tensor]:',
             'def rope_cos_sin(positions: Tensor, head_dim: int, base: float, dtype: torch.dtype,\n'
             '                 width: int = 0) -> tuple[Tensor, Tensor]:'),
            ('    angles = positions.to(torch.float64)[..., None] * base ** (-2 * pair / head_dim)',
             '    angles = positions.to(torch.float64)[..., None] * base ** (-2 * pair / width)'),
        ],
    ),
    Mutant(
        'rope-wrong-frequency',
        variant='rope_base_ignored',
        base='complex_rope',
        why='the base is hard-coded to 10000, so rope_base (Llama 3\'s 500000) is ignored.',
        edits=[
            ('        freqs = 1.0 / self.rope_base ** (torch.arange(0, d, 2, device=x.device, dtype=torch.float64) / d)',
             '        freqs = 1.0 / 10000.0 ** (torch.arange(0, d, 2, device=x.device, dtype=torch.float64) / d)'),
        ],
    ),
    Mutant(
        'rope-rotation-reversed',
        base='sdpa_gqa',
        why='the rotation is written (x1 cos + x2 sin, -x1 sin + x2 cos): it turns by -θ.',
        edits=[
            ('        return torch.cat((t1 * cos - t2 * sin, t1 * sin + t2 * cos), dim=-1)',
             '        return torch.cat((t1 * cos + t2 * sin, -t1 * sin + t2 * cos), dim=-1)'),
        ],
    ),
    Mutant(
        'causal-mask-transposed',
        why='tril where triu belongs: each query sees itself and the keys after it.',
        edits=[
            ('        future = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(diagonal=1)',
             '        future = torch.ones(n, n, dtype=torch.bool, device=x.device).tril(diagonal=-1)'),
        ],
    ),
    Mutant(
        'causal-diagonal',
        why='triu(diagonal=0): each query is blocked from its own key too, and the first one '
            'from every key (NaN).',
        edits=[
            ('        future = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(diagonal=1)',
             '        future = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(diagonal=0)'),
        ],
    ),
    Mutant(
        'causal-diagonal',
        variant='finite_fill',
        base='hf_modeling_llama',
        why='the finfo.min mask built with triu(0): the first query, its only key blocked, '
            'spreads its weight uniformly over every key.',
        edits=[
            ('                                 device=attn_weights.device).triu(1)',
             '                                 device=attn_weights.device).triu(0)'),
        ],
    ),
    Mutant(
        'scale-by-embed-dim',
        base='loops_einsum',
        why='the scores are divided by sqrt(dim), the model width, not sqrt(head_dim).',
        edits=[
            ('            scores = torch.einsum("bqd,bkd->bqk", q, k) / math.sqrt(d)',
             '            scores = torch.einsum("bqd,bkd->bqk", q, k) / math.sqrt(self.dim)'),
        ],
    ),
    Mutant(
        'norm-inside-residual',
        why='each norm is applied to its sublayer\'s output: x + norm(f(x)).',
        edits=[
            ('        h = x + self.self_attn(self.input_layernorm(x), positions)\n'
             '        return h + self.mlp(self.post_attention_layernorm(h))',
             '        h = x + self.input_layernorm(self.self_attn(x, positions))\n'
             '        return h + self.post_attention_layernorm(self.mlp(h))'),
        ],
    ),
    Mutant(
        'residual-from-normed',
        base='complex_rope',
        why='x is overwritten by its normalised copy, so the residuals add the normalised '
            'stream.',
        edits=[
            ('        h = x + self.self_attn(self.input_layernorm(x), positions)\n'
             '        return h + self.mlp(self.post_attention_layernorm(h))',
             '        x = self.input_layernorm(x)\n'
             '        h = x + self.self_attn(x, positions)\n'
             '        h = self.post_attention_layernorm(h)\n'
             '        return h + self.mlp(h)'),
        ],
    ),
]
