"""Kata 17's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

MUTANTS = [
    Mutant(
        'log-probs-not-summed',
        why='the running score multiplies the log-probabilities, starting from 1.',
        edits=[
            ('live_scores = torch.zeros(1, dtype=torch.float64)',
             'live_scores = torch.ones(1, dtype=torch.float64)'),
            ('candidates = (live_scores[:, None] + log_probs).flatten()',
             'candidates = (live_scores[:, None] * log_probs).flatten()'),
        ],
    ),
    Mutant(
        'log-probs-not-summed',
        variant='probabilities_added',
        why='the running score adds probabilities: exp of each log-probability.',
        edits=[
            ('candidates = (live_scores[:, None] + log_probs).flatten()',
             'candidates = (live_scores[:, None] + log_probs.exp()).flatten()'),
        ],
    ),
    Mutant(
        'scores-not-accumulated',
        why="the candidates are ranked by this step's log-probability alone.",
        edits=[
            ('candidates = (live_scores[:, None] + log_probs).flatten()',
             'candidates = log_probs.flatten()'),
        ],
    ),
    Mutant(
        'topk-per-beam',
        why='each live hypothesis keeps its own best continuation(s): a topk per row, not over '
            'all k * V candidates.',
        edits=[
            ('        candidates = (live_scores[:, None] + log_probs).flatten()  # (k * V,)\n'
             '        keep = min(beam_size - len(finished), candidates.numel())\n'
             '        top_scores, flat = candidates.topk(keep)\n',
             '        grid = live_scores[:, None] + log_probs  # (k, V)\n'
             '        keep = min(beam_size - len(finished), grid.numel())\n'
             '        each = max(1, keep // grid.size(0))\n'
             '        row_best, row_tokens = grid.topk(each, dim=1)  # (k, each)\n'
             '        flat_rows = row_tokens + torch.arange(grid.size(0))[:, None] * vocab\n'
             '        top_scores, pick = row_best.flatten().topk(min(keep, row_best.numel()))\n'
             '        flat = flat_rows.flatten()[pick]\n'),
        ],
    ),
    Mutant(
        'beam-index-wrong',
        why='the flat index is split with the number of live hypotheses as the divisor, as if '
            'the candidates were laid out (V, k).',
        edits=[
            ('parent, token = flat // vocab, flat % vocab',
             'parent, token = flat % live.size(0), flat // live.size(0)'),
        ],
    ),
    Mutant(
        'finished-beam-not-removed',
        why='a hypothesis ending in eos is recorded as finished but stays in the live beam and '
            'is extended further.',
        edits=[
            ('live, live_scores = extended[~ended], top_scores[~ended]',
             'live, live_scores = extended, top_scores'),
        ],
    ),
    Mutant(
        'length-penalty-in-pruning',
        why='the running scores are divided by n ** length_penalty at every step and carried '
            'forward.',
        edits=[
            ('        live, live_scores = extended[~ended], top_scores[~ended]\n',
             '        live, live_scores = extended[~ended], top_scores[~ended]\n'
             '        live_scores = live_scores / (live.size(1) - 1) ** length_penalty\n'),
            ('finished.append((extended[row].tolist(), top_scores[row].item()))',
             'finished.append((extended[row].tolist(), top_scores[row].item() / (extended.size(1) - 1) ** length_penalty))'),
            ("ranked = [(tokens, score / (len(tokens) - 1) ** length_penalty) for tokens, score in finished]",
             "ranked = [(tokens, score) for tokens, score in finished]"),
        ],
    ),
    Mutant(
        'length-penalty-missing',
        why='the final scores are the raw cumulative log-probabilities.',
        edits=[
            ("ranked = [(tokens, score / (len(tokens) - 1) ** length_penalty) for tokens, score in finished]",
             "ranked = [(tokens, score) for tokens, score in finished]"),
        ],
    ),
    Mutant(
        'length-penalty-missing',
        variant='ranked_raw',
        why='the scores are divided by n ** length_penalty, but the list is sorted by the raw '
            'sums.',
        edits=[
            ("    ranked = [(tokens, score / (len(tokens) - 1) ** length_penalty) for tokens, score in finished]\n"
             "    return sorted(ranked, key=lambda item: item[1], reverse=True)",
             "    finished.sort(key=lambda item: item[1], reverse=True)\n"
             "    return [(tokens, score / (len(tokens) - 1) ** length_penalty) for tokens, score in finished]"),
        ],
    ),
    Mutant(
        'max-len-off-by-one',
        why='the loop runs while the prefixes have at most max_len tokens: one token too many.',
        edits=[
            ('live.size(1) < max_len', 'live.size(1) <= max_len'),
        ],
    ),
    Mutant(
        'max-len-off-by-one',
        variant='one_short',
        why='the loop stops one step early, as if max_len did not count bos.',
        edits=[
            ('live.size(1) < max_len', 'live.size(1) < max_len - 1'),
        ],
    ),
    Mutant(
        'eos-ignored',
        why='eos is treated as an ordinary token: nothing finishes before max_len.',
        edits=[
            ('ended = token == eos_idx', 'ended = torch.zeros_like(token, dtype=torch.bool)'),
        ],
    ),
    Mutant(
        'step-per-hypothesis',
        why='step_fn is called once per live hypothesis and the rows are concatenated.',
        edits=[
            ('log_probs = step_fn(live).to(torch.float64)',
             'log_probs = torch.cat([step_fn(row[None]) for row in live]).to(torch.float64)'),
        ],
    ),
]

MUTANTS += [
    Mutant(
        'finished-beam-not-removed',
        variant='frozen_in_beam',
        why='a fixed-width beam keeps hypotheses ending in eos in their slots with frozen scores, '
            'competing with the live candidates.',
        file='frozen_in_beam.py',
    ),
    Mutant(
        'topk-per-beam',
        variant='row_topk_concatenated',
        base='python_lists',
        why="each hypothesis's own best continuations are collected hypothesis by hypothesis, "
            "and the first beam_size of that list are kept, without one ranking over all.",
        edits=[
            ('        for hyp, score, row in zip(hypotheses, hyp_scores, log_p):\n'
             '            for word, lp in enumerate(row):\n'
             '                candidates.append((score + lp, hyp + [word]))\n'
             '        candidates.sort(key=lambda c: c[0], reverse=True)\n'
             '        live_size = beam_size - len(completed)\n',
             '        live_size = beam_size - len(completed)\n'
             '        for hyp, score, row in zip(hypotheses, hyp_scores, log_p):\n'
             '            own = [(score + lp, hyp + [word]) for word, lp in enumerate(row)]\n'
             '            candidates += sorted(own, key=lambda c: c[0], reverse=True)[:live_size]\n'),
        ],
    ),
    Mutant(
        'beam-index-wrong',
        variant='divmod_by_beam_size',
        base='sort_divmod',
        why='divmod by beam_size instead of the vocabulary size V.',
        edits=[
            ('parent, token = divmod(flat, vocab)', 'parent, token = divmod(flat, beam_size)'),
        ],
    ),
    Mutant(
        'length-penalty-in-pruning',
        variant='normalised_then_divided_again',
        base='heap',
        why='the candidates are scored (sum) / n ** length_penalty, carried forward, and '
            'divided again at the end.',
        edits=[
            ('        triples = ((score + lp, i, tok)',
             '        n = len(beam[0][0])\n'
             '        triples = (((score + lp) / n ** length_penalty, i, tok)'),
        ],
    ),
    Mutant(
        'step-per-hypothesis',
        variant='loop_over_hypotheses',
        base='python_lists',
        why='step_fn is called inside the loop over hypotheses, one prefix at a time.',
        edits=[
            ('        log_p = step_fn(torch.tensor(hypotheses)).double().tolist()\n',
             '        log_p = [step_fn(torch.tensor([hyp])).double()[0].tolist() for hyp in hypotheses]\n'),
        ],
    ),
    Mutant(
        'eos-ignored',
        variant='eos_checked_at_the_end',
        base='heap',
        why='no hypothesis leaves the beam at eos: all of them run to max_len.',
        edits=[
            ('(done if tok == eos_idx else next_beam).append((prefix, score))',
             'next_beam.append((prefix, score))'),
        ],
    ),
]

MUTANTS += [
    Mutant(
        'log-probs-not-summed',
        variant='product_from_zero',
        why='the running score multiplies the log-probabilities, starting from 0: every '
            'candidate scores 0 for ever.',
        edits=[
            ('candidates = (live_scores[:, None] + log_probs).flatten()',
             'candidates = (live_scores[:, None] * log_probs).flatten()'),
        ],
    ),
    Mutant(
        'length-penalty-in-pruning',
        variant='live_scores_divided',
        why='after each step the live scores are divided by the number of tokens after bos, '
            'and the final ranking divides every hypothesis again.',
        edits=[
            ('        live, live_scores = extended[~ended], top_scores[~ended]\n',
             '        live, live_scores = extended[~ended], top_scores[~ended]\n'
             '        live_scores = live_scores / (live.size(1) - 1) ** length_penalty\n'),
        ],
    ),
]

# Issue 23 (independently written searches the grader killed without a name)
MUTANTS += [
    Mutant(
        'beam-index-wrong',
        variant='transposed_flatten',
        why='the (k, V) candidates are flattened transposed, (V, k), and the index is still '
            'split as flat // V, flat % V.',
        edits=[
            ('candidates = (live_scores[:, None] + log_probs).flatten()',
             'candidates = (live_scores[:, None] + log_probs).T.flatten()'),
        ],
    ),
    Mutant(
        'beam-index-wrong',
        variant='parent_by_beam_size',
        why='the parent is flat // beam_size (the token flat % V is right).',
        edits=[
            ('parent, token = flat // vocab, flat % vocab',
             'parent, token = flat // beam_size, flat % vocab'),
        ],
    ),
    Mutant(
        'beam-index-wrong',
        variant='list_index_out_of_range',
        why="CS224n's loop over Python lists with the parent taken as flat // beam_size: "
            "hypotheses[parent] raises IndexError (list index out of range).",
        file='lists_parent_by_beam_size.py',
    ),
    Mutant(
        'finished-beam-not-removed',
        variant='frozen_by_eos_padding',
        why='a fixed-width tensor beam freezes finished rows (eos at log-probability 0, '
            'everything else -inf), so they keep their slots and compete with live candidates.',
        file='frozen_eos_padding.py',
    ),
]
