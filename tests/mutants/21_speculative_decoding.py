"""Kata 21's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

ACCEPT = "            keep = bool(u < p[token] / q[token])  # a ratio above 1 always keeps the token\n"
RESIDUAL = "                residual = (p - q).clamp(min=0)\n"
RETURN_AT_REJECTION = ("            return torch.tensor(accepted + [last], dtype=torch.int64), i\n"
                       "        accepted.append(token)\n")

MUTANTS = [
    Mutant(
        'ratio-inverted',
        why='the draft token is kept with probability min(1, q/p), Chen et al.\'s letters read '
            'as Leviathan et al.\'s.',
        edits=[(ACCEPT, "            keep = bool(u < q[token] / p[token])\n")],
    ),
    Mutant(
        'ratio-not-clipped',
        why='torch.bernoulli gets p/q itself, above 1 whenever the target likes the token more.',
        edits=[("            u = torch.rand((), dtype=torch.float64, generator=generator)\n" + ACCEPT,
                "            keep = bool(torch.bernoulli(p[token] / q[token], generator=generator))\n")],
    ),
    Mutant(
        'residual-from-target',
        why='the token after a rejection is drawn from the target\'s row p.',
        edits=[(RESIDUAL, "                residual = p.clone()\n")],
    ),
    Mutant(
        'residual-from-draft',
        why='the token after a rejection is drawn from the draft\'s row q again.',
        edits=[("                last = int(torch.multinomial(residual / residual.sum(), 1, generator=generator))\n",
                "                last = int(torch.multinomial(q, 1, generator=generator))\n")],
    ),
    Mutant(
        'residual-not-normalised',
        variant='argmax_of_cdf',
        why='an inverse CDF of the unnormalised residual by argmax(cdf > u): when u is above '
            'its total, every comparison is False and token 0 comes out.',
        edits=[("                last = int(torch.multinomial(residual / residual.sum(), 1, generator=generator))\n",
                "                u = torch.rand((), dtype=residual.dtype, generator=generator)\n"
                "                last = int(torch.argmax((residual.cumsum(0) > u).int()))\n")],
    ),
    Mutant(
        'residual-not-normalised',
        base='inverse_cdf_bernoulli',
        why='the clamped difference goes to an inverse-CDF draw that assumes a total of 1.',
        edits=[("    u = torch.rand((), dtype=torch.float64, generator=generator) * cdf[-1]\n",
                "    u = torch.rand((), dtype=torch.float64, generator=generator)\n"),
               ("        fix = draw(residual / residual.sum(), generator)\n",
                "        fix = draw(residual, generator)\n")],
    ),
    Mutant(
        'residual-not-clamped',
        why='the residual keeps the negative entries of p - q; torch.multinomial refuses it.',
        edits=[(RESIDUAL, "                residual = p - q\n")],
    ),
    Mutant(
        'bonus-token-missing',
        why='when every draft token is accepted, nothing is added.',
        edits=[("    return torch.tensor(accepted + [bonus], dtype=torch.int64), gamma\n",
                "    return torch.tensor(accepted, dtype=torch.int64), gamma\n")],
    ),
    Mutant(
        'bonus-from-wrong-position',
        why='the bonus token comes from the row that judged the last draft token.',
        edits=[("    bonus_row = target_rows[gamma]\n", "    bonus_row = target_rows[gamma - 1]\n")],
    ),
    Mutant(
        'bonus-from-wrong-position',
        variant='first_row',
        why='the bonus token comes from the first verified row, p_0.',
        edits=[("    bonus_row = target_rows[gamma]\n", "    bonus_row = target_rows[0]\n")],
    ),
    Mutant(
        'bonus-from-wrong-position',
        variant='draft_row',
        why='the bonus token comes from the draft\'s last row.',
        edits=[("    bonus_row = target_rows[gamma]\n", "    bonus_row = draft_rows[-1]\n")],
    ),
    Mutant(
        'draft-not-sampled',
        why='the draft proposes its argmax while the test divides by q as if it sampled.',
        edits=[("        token = q.argmax() if greedy else torch.multinomial(q, 1, generator=generator)[0]\n",
                "        token = q.argmax()\n")],
    ),
    Mutant(
        'position-off-by-one',
        why='the target\'s rows are read from P[n], so P[n + i] judges d_i.',
        edits=[("    target_rows = target_fn(sequence)[n - 1:]", "    target_rows = target_fn(sequence)[n:]"),
               ("    bonus_row = target_rows[gamma]\n", "    bonus_row = target_rows[-1]\n")],
    ),
    Mutant(
        'position-off-by-one',
        variant='draft_row_after_append',
        why='the draft\'s row for d_i is read after appending it: the next position\'s row.',
        edits=[("        draft_rows.append(q)\n        sequence = torch.cat([sequence, token.view(1)])\n",
                "        sequence = torch.cat([sequence, token.view(1)])\n"
                "        draft_rows.append(draft_fn(sequence)[-1])\n")],
    ),
    Mutant(
        'no-stop-at-rejection',
        why='a rejected token is replaced by the residual\'s and verification goes on; the '
            'bonus comes only when all were kept.',
        edits=[("    accepted: list[int] = []\n", "    accepted: list[int] = []\n    kept = 0\n"),
               (RETURN_AT_REJECTION,
                "            accepted.append(last)\n            continue\n"
                "        accepted.append(token)\n        kept += 1\n"),
               ("    bonus_row = target_rows[gamma]\n",
                "    if kept < gamma:\n        return torch.tensor(accepted, dtype=torch.int64), kept\n"
                "    bonus_row = target_rows[gamma]\n")],
    ),
    Mutant(
        'shared-uniform',
        why='one uniform number, drawn before the loop, serves every acceptance test.',
        edits=[("            u = torch.rand((), dtype=torch.float64, generator=generator)\n", ""),
               ("    accepted: list[int] = []\n",
                "    accepted: list[int] = []\n"
                "    u = None if greedy else torch.rand((), dtype=torch.float64, generator=generator)\n")],
    ),
    Mutant(
        'target-called-per-token',
        why='each draft token is verified by its own target call on the sequence up to it.',
        edits=[("        p = target_rows[i]\n", "        p = target_fn(sequence[:n + i])[-1]\n")],
    ),
    Mutant(
        'greedy-not-target-greedy',
        why='greedy mode keeps the draft\'s token at the first mismatch.',
        edits=[("            if greedy:\n                last = int(p.argmax())\n",
                "            if greedy:\n                last = token\n")],
    ),
    Mutant(
        'sampling-ignores-generator',
        why='the acceptance tests draw from the global RNG.',
        edits=[("            u = torch.rand((), dtype=torch.float64, generator=generator)\n",
                "            u = torch.rand((), dtype=torch.float64)\n")],
    ),
    Mutant(
        'input-modified-in-place',
        why='the draft tokens are appended by resizing the caller\'s prefix and writing into it.',
        edits=[("    sequence = prefix\n", "    sequence = prefix.resize_(n + gamma)\n"),
               ("        q = draft_fn(sequence)[-1]", "        q = draft_fn(sequence[:n + len(drafted)])[-1]"),
               ("        sequence = torch.cat([sequence, token.view(1)])\n",
                "        sequence[n + len(drafted) - 1] = token\n")],
    ),
    Mutant(
        'no-stop-at-rejection',
        variant='passed_tests_counted',
        base='gumbel_vectorised',
        why='num_accepted counts every passed test, not the run before the first rejection.',
        edits=[("    accepted = int(ok.long().cumprod(0).sum())\n",
                "    accepted = int(ok.long().sum())\n")],
    ),
    Mutant(
        'shared-uniform',
        variant='one_uniform_expanded',
        base='gumbel_vectorised',
        why='the vectorised tests compare every ratio with one uniform number.',
        edits=[("        u = torch.rand(gamma, dtype=torch.float64, generator=generator)\n",
                "        u = torch.rand((), dtype=torch.float64, generator=generator).expand(gamma)\n")],
    ),
    Mutant(
        'ratio-inverted',
        variant='vectorised',
        base='gumbel_vectorised',
        why='the vectorised test divides the draft\'s probabilities by the target\'s.',
        edits=[("        ok = u <= p_d / q_d\n", "        ok = u <= q_d / p_d\n")],
    ),
]
