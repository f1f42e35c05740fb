"""Kata 19's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

MUTANTS = [
    Mutant(
        'softmax-jacobian-missing-d',
        why='the softmax backward taken elementwise, dS = P ∘ dP, as if each weight depended '
            'on its own score alone.',
        edits=[('            ds = p * (dp - delta[..., rows, :])', '            ds = p * dp')],
    ),
    Mutant(
        'softmax-jacobian-missing-d',
        variant='plain',
        base='plain_formulas',
        why='D left out of the plain formulas.',
        edits=[('    ds = p * (dp - D)', '    ds = p * dp')],
    ),
    Mutant(
        'missing-scale-in-grad',
        why='dQ without the 1/sqrt(d) the scores were multiplied by.',
        edits=[('            dq[..., rows, :] += ds @ k_j * scale', '            dq[..., rows, :] += ds @ k_j')],
    ),
    Mutant(
        'missing-scale-in-grad',
        variant='dk',
        base='query_blocks',
        why='dK without the scale, dQ with it.',
        edits=[('            dk[:, :, j0:j1] += torch.einsum("bhij,bhid->bhjd", ds, q_i) * scale',
                '            dk[:, :, j0:j1] += torch.einsum("bhij,bhid->bhjd", ds, q_i)')],
    ),
    Mutant(
        'dk-not-transposed',
        why='dK from dS instead of its transpose (fits only when n == m).',
        edits=[('            dk_j = dk_j + ds.transpose(-2, -1) @ q_i * scale',
                '            dk_j = dk_j + ds @ q_i * scale')],
    ),
    Mutant(
        'dv-not-transposed',
        why='dV = P dO instead of Pᵀ dO (fits only when n == m).',
        edits=[('            dv_j = dv_j + p.transpose(-2, -1) @ do_i', '            dv_j = dv_j + p @ do_i')],
    ),
    Mutant(
        'dv-not-transposed',
        variant='plain',
        base='plain_formulas',
        why='dV from P, not its transpose, in the plain formulas.',
        edits=[('    dv = torch.matmul(p.transpose(-1, -2), do)', '    dv = torch.matmul(p, do)')],
    ),
    Mutant(
        'causal-mask-missing-in-backward',
        why='the backward recomputes P from unmasked scores: future tiles are skipped, but the '
            'tiles on the diagonal (and the one-tile case) keep their future keys.',
        edits=[('            if causal:\n                s = s.masked_fill(',
                '            if False:\n                s = s.masked_fill(')],
    ),
    Mutant(
        'causal-mask-missing-in-backward',
        variant='softmax',
        base='plain_formulas',
        why='the plain backward forgets the causal mask before its fresh softmax.',
        edits=[('    if causal:\n        rows = torch.arange(first_row', '    if False:\n        rows = torch.arange(first_row')],
    ),
    Mutant(
        'lse-not-subtracted',
        why='P recomputed as exp(S): the log-sum-exp not subtracted.',
        edits=[('            p = torch.exp(s - lse[..., rows, :])', '            p = torch.exp(s)')],
    ),
    Mutant(
        'lse-not-subtracted',
        variant='tile_max',
        base='query_blocks',
        why='each tile subtracts its own row maximum instead of lse: unnormalised weights.',
        edits=[('            p = torch.exp(s - lse[:, :, i0:i1, None])',
                '            p = torch.exp(s - s.amax(-1, keepdim=True))')],
    ),
    Mutant(
        'lse-wrong',
        base='plain_formulas',
        why='the forward returns log(l) as lse, forgetting the maximum it subtracted.',
        edits=[('    lse = (row_max + torch.log(total)).squeeze(-1)', '    lse = torch.log(total).squeeze(-1)')],
    ),
    Mutant(
        'lse-wrong',
        variant='max_only',
        base='two_pass_key_blocks',
        why='the online forward returns the running maximum as lse.',
        edits=[('    return (acc / l_i[..., None]).to(q.dtype), m_i + torch.log(l_i)',
                '    return (acc / l_i[..., None]).to(q.dtype), m_i')],
    ),
    Mutant(
        'saves-probabilities',
        why='the forward keeps the softmax weights in ctx, in a list, for the backward to reuse.',
        edits=[('        ctx.causal = causal\n',
                '        ctx.causal = causal\n'
                '        ctx.cache = [torch.exp(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)) - lse[..., None])]\n')],
    ),
    Mutant(
        'saves-probabilities',
        variant='saved',
        base='query_blocks',
        why='the forward saves the probabilities with save_for_backward.',
        edits=[('        ctx.save_for_backward(q, k, v, out, lse)',
                '        ctx.save_for_backward(q, k, v, out, lse, torch.softmax(q @ k.transpose(-2, -1), -1))'),
               ('        q, k, v, out, lse = ctx.saved_tensors', '        q, k, v, out, lse, _p = ctx.saved_tensors')],
    ),
    Mutant(
        'autograd-in-backward',
        why='attention_backward redoes the forward under enable_grad and asks autograd, with '
            'grad imported at module level.',
        edits=[('import torch\n', 'import torch\nfrom torch.autograd import grad\n'),
               ('    n, m = q.size(-2), k.size(-2)\n    scale = 1.0 / math.sqrt(q.size(-1))\n    block = ',
                '    with torch.enable_grad():\n'
                '        leaves = [t.detach().requires_grad_() for t in (q, k, v)]\n'
                '        return grad(attention_forward(*leaves, causal)[0], leaves, grad_out)\n'
                '    n, m = q.size(-2), k.size(-2)\n    scale = 1.0 / math.sqrt(q.size(-1))\n    block = ')],
    ),
    Mutant(
        'autograd-in-backward',
        variant='func_vjp',
        base='plain_formulas',
        why='the Function\'s backward takes torch.func.vjp of the forward.',
        edits=[('        t = ctx.tensors\n',
                '        t = ctx.tensors\n'
                '        _out, pull = torch.func.vjp(lambda q, k, v: attention_forward(q, k, v, ctx.causal)[0],\n'
                '                                   t["q"], t["k"], t["v"])\n'
                '        return (*pull(grad_out), None)\n')],
    ),
    Mutant(
        'autograd-in-backward',
        variant='tensor_backward',
        base='query_blocks',
        why='the Function\'s backward calls .backward() on a recomputed output and reads .grad.',
        edits=[('        q, k, v, out, lse = ctx.saved_tensors\n',
                '        q, k, v, out, lse = ctx.saved_tensors\n'
                '        with torch.enable_grad():\n'
                '            leaves = [t.detach().requires_grad_() for t in (q, k, v)]\n'
                '            (attention_forward(*leaves, ctx.causal)[0] * grad_out).sum().backward()\n'
                '        return leaves[0].grad, leaves[1].grad, leaves[2].grad, None\n')],
    ),
    Mutant(
        'd-from-wrong-terms',
        why='D as the row sum of dO, not of dO ∘ O.',
        edits=[('    delta = (grad_out * out).sum(dim=-1, keepdim=True)',
                '    delta = grad_out.sum(dim=-1, keepdim=True)')],
    ),
    Mutant(
        'd-from-wrong-terms',
        variant='one_key_block',
        base='two_pass_key_blocks',
        why='D summed over the current key block only, inside the loop, instead of all keys.',
        edits=[('        ds = p * (grad_out @ v_j.transpose(-2, -1) - D[..., None])',
                '        dp = grad_out @ v_j.transpose(-2, -1)\n'
                '        ds = p * (dp - (p * dp).sum(-1, keepdim=True))')],
    ),
    Mutant(
        'd-from-wrong-terms',
        variant='rowsum_dp',
        base='plain_formulas',
        why='D as the row sum of dP alone, forgetting the P weights.',
        edits=[('    D = (p * dp).sum(-1, keepdim=True)', '    D = dp.sum(-1, keepdim=True)')],
    ),
    Mutant(
        'd-from-wrong-terms',
        variant='no_keepdim',
        base='plain_formulas',
        why='D summed without keepdim and unsqueezed on the wrong side: D_j of the key\'s '
            'index subtracted instead of D_i (fits only when n == m).',
        edits=[('    D = (p * dp).sum(-1, keepdim=True)', '    D = (p * dp).sum(-1).unsqueeze(-2)')],
    ),
    Mutant(
        'missing-scale',
        why='the forward\'s scores are not divided by sqrt(d).',
        edits=[('    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (b, h, n, m)',
                '    scores = q @ k.transpose(-2, -1)  # (b, h, n, m)')],
    ),
    Mutant(
        'missing-scale',
        variant='recomputed',
        why='the backward recomputes the scores without the scale.',
        edits=[('            s = q_i @ k_j.transpose(-2, -1) * scale  # (b, h, Bq, Bk)',
                '            s = q_i @ k_j.transpose(-2, -1)  # (b, h, Bq, Bk)')],
    ),
    Mutant(
        'full-score-matrix',
        why='the tiled backward slices each tile\'s causal mask out of one (n, m) mask built '
            'up front.',
        edits=[('    dq = torch.zeros_like(q)\n', '    dq = torch.zeros_like(q)\n    future = causal_blocked(0, n, 0, m, q.device)\n'),
               ('                s = s.masked_fill(causal_blocked(q_start, q_i.size(-2), k_start, k_j.size(-2),\n'
                '                                                 q.device), float("-inf"))',
                '                s = s.masked_fill(future[rows, k_start:k_start + block], float("-inf"))')],
    ),
    Mutant(
        'full-score-matrix',
        variant='all_scores',
        base='two_pass_key_blocks',
        why='the first pass computes D from all the scores at once.',
        edits=[('    for start in starts:  # first pass: D_i = sum over every key block of P ∘ dP\n'
                '        p = torch.exp(_tile_scores(q, k[..., start:start + B, :], start, causal, scale) - lse[..., None])\n'
                '        D = D + (p * (grad_out @ v[..., start:start + B, :].transpose(-2, -1))).sum(-1)\n',
                '    p = torch.exp(_tile_scores(q, k, 0, causal, scale) - lse[..., None])\n'
                '    D = (p * (grad_out @ v.transpose(-2, -1))).sum(-1)\n')],
    ),
    Mutant(
        'non-contiguous-view',
        base='plain_formulas',
        why='the tiled backward flattens grad_out with .view to slice its rows, which a '
            'transposed (non-contiguous) grad_out refuses; the untiled path never calls it.',
        edits=[('    dqs = []\n',
                '    dqs = []\n    d = q.shape[-1]\n    rows = grad_out.view(*grad_out.shape[:-2], -1)  # (b, h, n * d)\n'),
               ('lse[..., start:end], grad_out[..., start:end, :],',
                'lse[..., start:end], rows[..., start * d:end * d].unflatten(-1, (-1, d)),')],
    ),
    Mutant(
        'forbidden-builtin',
        why='the forward calls F.scaled_dot_product_attention for the output.',
        edits=[('    out = torch.exp(scores - lse[..., None]) @ v  # (b, h, n, d)',
                '    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)')],
    ),
]
