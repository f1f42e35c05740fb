"""Kata 13's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

MUTANTS = [
    Mutant(
        'kv-heads-tiled',
        why='the kv heads are copied with repeat, which tiles them (0, 1, 0, 1) instead of '
            'repeating each in place (0, 0, 1, 1): the classic mix-up of repeat and '
            'repeat_interleave.',
        edits=[
            ('        k = k.repeat_interleave(group, dim=1)\n        v = v.repeat_interleave(group, dim=1)\n',
             '        k = k.repeat(1, group, 1, 1)\n        v = v.repeat(1, group, 1, 1)\n'),
        ],
    ),
    Mutant(
        'kv-heads-tiled',
        variant='expand_group_outermost',
        base='einsum_expand',
        why='the kv heads are widened with expand, but with the group axis in front of the kv '
            'axis, so the reshape lays them out tiled.',
        edits=[
            ('        return t[:, :, None].expand(b, self.kv, self.h // self.kv, n, self.d).reshape(b, self.h, n, self.d)',
             '        return t[:, None].expand(b, self.h // self.kv, self.kv, n, self.d).reshape(b, self.h, n, self.d)'),
        ],
    ),
    Mutant(
        'kv-heads-tiled',
        variant='query_heads_split_group_first',
        base='grouped_broadcast',
        why='the query heads are grouped as (group, kv) instead of (kv, group), so query head j '
            'lands beside kv head j % num_kv_heads.',
        edits=[
            ('        q = self.q_proj(x).reshape(b, n, kv, g, d).permute(0, 2, 3, 1, 4)  # (b, kv, g, n, d)',
             '        q = self.q_proj(x).reshape(b, n, g, kv, d).permute(0, 3, 2, 1, 4)  # (b, kv, g, n, d)'),
            ('        out = (weights @ v).permute(0, 3, 1, 2, 4).reshape(b, n, e)',
             '        out = (weights @ v).permute(0, 3, 2, 1, 4).reshape(b, n, e)'),
            ('        blocked = blocked.reshape(b, kv, g, n, n)',
             '        blocked = blocked.reshape(b, g, kv, n, n).transpose(1, 2)'),
            ('            scores = scores + torch.broadcast_to(attn_mask, (b, h, n, n)).reshape(b, kv, g, n, n)',
             '            scores = scores + torch.broadcast_to(attn_mask, (b, h, n, n)).reshape(b, g, kv, n, n).transpose(1, 2)'),
        ],
    ),
    Mutant(
        'kv-heads-tiled',
        variant='loop_modulo',
        base='per_head_loop',
        why='the per-head loop picks kv head j % num_kv_heads for query head j.',
        edits=[
            ('            g = j // group', '            g = j % self.num_kv_heads'),
        ],
    ),
    Mutant(
        'kv-proj-full-width',
        why='k_proj and v_proj keep multi-head attention\'s full width E (and the forward '
            'splits them into num_heads heads, so no kv head is shared).',
        edits=[
            ('        kv_dim = num_kv_heads * self.head_dim\n',
             '        kv_dim = embed_dim\n'),
            ('        k = self.k_proj(x).view(b, n, self.num_kv_heads, self.head_dim).transpose(1, 2)  # (b, kv, n, d)\n'
             '        v = self.v_proj(x).view(b, n, self.num_kv_heads, self.head_dim).transpose(1, 2)  # (b, kv, n, d)\n',
             '        k = self.k_proj(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)\n'
             '        v = self.v_proj(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)\n'),
            ('        group = self.num_heads // self.num_kv_heads\n', '        group = 1\n'),
        ],
    ),
    Mutant(
        'kv-proj-full-width',
        variant='value_only',
        base='per_head_loop',
        why='v_proj alone was left at width E (copied from an MHA template); the loop only '
            'reads its first kv heads.',
        edits=[
            ('        self.v_proj = nn.Linear(embed_dim, num_kv_heads * head_dim, bias)',
             '        self.v_proj = nn.Linear(embed_dim, embed_dim, bias)'),
        ],
    ),
    Mutant(
        'missing-scale',
        why='the scores are not divided by sqrt(head_dim).',
        edits=[
            ('        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # (b, h, n, n)',
             '        scores = q @ k.transpose(-2, -1)  # (b, h, n, n)'),
        ],
    ),
    Mutant(
        'mask-inverted',
        why='the bool mask is read as "may attend" (F.scaled_dot_product_attention\'s '
            'convention): the blocked scores are those where the mask is False.',
        edits=[
            ('                scores = scores.masked_fill(attn_mask, float("-inf"))',
             '                scores = scores.masked_fill(~attn_mask, float("-inf"))'),
        ],
    ),
    Mutant(
        'mask-inverted',
        variant='additive_from_keep_mask',
        base='einsum_expand',
        why='the additive mask puts -inf where the bool mask is False.',
        edits=[
            ('                    attn_mask, float("-inf"))',
             '                    ~attn_mask, float("-inf"))'),
        ],
    ),
    Mutant(
        'kv-cache-missing-values',
        why='the cache counts the keys only.',
        edits=[
            ('    return 2 * batch_size * seq_len * num_layers * num_kv_heads * head_dim * itemsize',
             '    return batch_size * seq_len * num_layers * num_kv_heads * head_dim * itemsize'),
        ],
    ),
    Mutant(
        'kv-cache-per-query-head',
        why='the cache is sized with num_heads key/value heads, as in multi-head attention.',
        edits=[
            ('    return 2 * batch_size * seq_len * num_layers * num_kv_heads * head_dim * itemsize',
             '    return 2 * batch_size * seq_len * num_layers * num_heads * head_dim * itemsize'),
        ],
    ),
    Mutant(
        'kv-cache-per-query-head',
        variant='embed_dim',
        base='einsum_expand',
        why='the cache stores E numbers per token for keys and for values (embed_dim instead '
            'of num_kv_heads * head_dim).',
        edits=[
            ('    per_token = 2 * num_kv_heads * (embed_dim // num_heads) * dtype.itemsize',
             '    per_token = 2 * embed_dim * dtype.itemsize'),
        ],
    ),
    Mutant(
        'forbidden-builtin',
        why='the attention is delegated to F.scaled_dot_product_attention(enable_gqa=True).',
        edits=[
            ('        group = self.num_heads // self.num_kv_heads\n',
             '        import torch.nn.functional as F\n'
             '        keep = None if attn_mask is None else (~attn_mask if attn_mask.dtype == torch.bool else attn_mask)\n'
             '        out = F.scaled_dot_product_attention(q, k, v, attn_mask=keep, is_causal=is_causal, enable_gqa=True)\n'
             '        return self.o_proj(out.transpose(1, 2).reshape(b, n, self.embed_dim))\n'
             '        group = self.num_heads // self.num_kv_heads\n'),
        ],
    ),
]
MUTANTS += [
    Mutant(
        'kv-cache-dtype-ignored',
        why='the element size is fixed at 2 bytes (float16), whatever dtype asks for.',
        edits=[
            ('    itemsize = torch.empty((), dtype=dtype).element_size()\n', '    itemsize = 2\n'),
        ],
    ),
    Mutant(
        'kv-cache-dtype-ignored',
        variant='four_bytes',
        base='grouped_broadcast',
        why='the element size is fixed at 4 bytes (float32), whatever dtype asks for.',
        edits=[
            ('    return elements * torch.finfo(dtype).bits // 8', '    return elements * 4'),
        ],
    ),
]
MUTANTS += [
    Mutant(
        'kv-heads-tiled',
        variant='values_only',
        why='the keys are repeated in place, but the values are tiled with repeat: the two '
            'lines were written at different times.',
        edits=[
            ('        v = v.repeat_interleave(group, dim=1)\n', '        v = v.repeat(1, group, 1, 1)\n'),
        ],
    ),
    Mutant(
        'scale-by-embed-dim',
        why='the scores are divided by sqrt(E), the model width, instead of sqrt(head_dim).',
        edits=[
            ('        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # (b, h, n, n)',
             '        scores = q @ k.transpose(-2, -1) / math.sqrt(self.embed_dim)  # (b, h, n, n)'),
        ],
    ),
    Mutant(
        'causal-diagonal',
        why='is_causal blocks the diagonal as well (triu(diagonal=0)): a token no longer sees '
            'itself, and the first one sees nothing.',
        edits=[
            ('            future = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(diagonal=1)',
             '            future = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(diagonal=0)'),
        ],
    ),
]
MUTANTS += [
    Mutant(
        'nan-on-fully-masked',
        why='the softmax runs on rows whose keys are all blocked, and softmax(-inf, ..., -inf) '
            'is NaN.',
        edits=[
            ('        scores = scores.masked_fill(all_blocked, 0.0)\n'
             '        weights = torch.softmax(scores, dim=-1).masked_fill(all_blocked, 0.0)\n',
             '        weights = torch.softmax(scores, dim=-1)\n'),
        ],
    ),
    Mutant(
        "finite-mask-fill",
        why="Hugging Face's eager attention: blocked scores filled with torch.finfo(dtype).min, "
            "so a query whose keys are all blocked attends uniformly instead of getting zeros.",
        edits=[('scores = scores.masked_fill(attn_mask, float("-inf"))',
                'scores = scores.masked_fill(attn_mask, torch.finfo(scores.dtype).min)')],
    ),
]
