"""Kata 16's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

MUTANTS = [
    Mutant(
        'temperature-after-softmax',
        why='the temperature divides the probabilities after the softmax; torch.multinomial '
            'renormalises them, so T has no effect.',
        edits=[
            ('    logits = apply_temperature(logits, temperature)\n', ''),
            ('    probs = torch.softmax(logits, dim=-1, dtype=wide)\n',
             '    probs = torch.softmax(logits, dim=-1, dtype=wide) / temperature\n'),
        ],
    ),
    Mutant(
        'temperature-after-softmax',
        variant='gumbel_log_probs',
        base='gumbel_max',
        why='the Gumbel-max draw adds the noise to log(softmax(logits) / T): a constant shift '
            'of every score, so the temperature is lost.',
        edits=[
            ('    scores = apply_temperature(logits, temperature)\n', '    scores = logits\n'),
            ('    return torch.argmax(scores.double() + gumbel, dim=-1)',
             '    log_probs = torch.log(torch.softmax(scores.double(), dim=-1) / temperature)\n'
             '    return torch.argmax(log_probs + gumbel, dim=-1)'),
        ],
    ),
    Mutant(
        'temperature-multiplied',
        why='apply_temperature multiplies the logits by T.',
        edits=[('    return logits / temperature\n', '    return logits * temperature\n')],
    ),
    Mutant(
        'temperature-multiplied',
        variant='hf_warper',
        base='hf_warpers',
        why='the temperature warper multiplies the scores (a "scale" read as a factor).',
        edits=[('        return scores / self.temperature\n',
                '        return scores * self.temperature\n')],
    ),
    Mutant(
        'top-k-off-by-one',
        why='top-k takes the (k + 1)-th largest logit as its threshold, keeping k + 1 tokens.',
        edits=[('    kth_largest = torch.topk(logits, k, dim=-1).values[..., -1:]',
                '    kth_largest = torch.topk(logits, min(k + 1, logits.size(-1)), dim=-1).values[..., -1:]')],
    ),
    Mutant(
        'top-k-off-by-one',
        variant='strict_threshold',
        why='top-k removes the logits <= the k-th largest, so the k-th itself goes: k - 1 kept.',
        edits=[('    return logits.masked_fill(logits < kth_largest, NEG_INF)',
                '    return logits.masked_fill(logits <= kth_largest, NEG_INF)')],
    ),
    Mutant(
        'top-k-off-by-one',
        variant='sorted_index_k',
        base='gumbel_max',
        why='the threshold is read at sorted position k instead of k - 1.',
        edits=[('    threshold = logits.sort(dim=-1, descending=True).values[..., k - 1:k]  # (..., 1)',
                '    threshold = logits.sort(dim=-1, descending=True).values[..., k:k + 1]  # (..., 1)')],
    ),
    Mutant(
        'top-p-drops-crossing-token',
        why='top-p compares the inclusive cumulative sum with p, dropping the token that '
            'crosses p.',
        edits=[('    mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs  # exclusive cumulative sum',
                '    mass_before = sorted_probs.cumsum(dim=-1)')],
    ),
    Mutant(
        'top-p-drops-crossing-token',
        variant='gumbel_inclusive',
        base='gumbel_max',
        why='the kept set is "cumulative <= p", the textbook slip that leaves the nucleus short '
            'of p.',
        edits=[('    keep_sorted = (cumulative - sorted_probs) < p',
                '    keep_sorted = cumulative <= p')],
    ),
    Mutant(
        'top-p-unsorted',
        why='top-p sums the probabilities in vocabulary order, without sorting.',
        edits=[('    sorted_probs, order = probs.sort(dim=-1, descending=True)  # (..., V) each',
                '    sorted_probs, order = probs, torch.arange(probs.size(-1)).expand_as(probs).contiguous()')],
    ),
    Mutant(
        'top-p-unsorted',
        variant='hf_without_sort',
        base='hf_warpers',
        why="Hugging Face's warper without its sort: the ascending cumulative sum runs in "
            'vocabulary order.',
        edits=[('        sorted_logits, sorted_indices = torch.sort(scores, descending=False)',
                '        sorted_logits = scores\n'
                '        sorted_indices = torch.arange(scores.size(-1)).expand_as(scores).contiguous()')],
    ),
    Mutant(
        'top-p-on-logits',
        why='top-p sums the logits themselves instead of the softmax probabilities.',
        edits=[('    probs = torch.softmax(logits, dim=-1)\n', '    probs = logits\n')],
    ),
    Mutant(
        'top-p-on-logits',
        variant='unnormalised_exp',
        base='exponential_race',
        why='top-p sums exp(logits) without dividing by their total.',
        edits=[('    probs, indices = torch.sort(torch.softmax(logits, dim=-1), dim=-1, descending=True)',
                '    probs, indices = torch.sort(torch.exp(logits), dim=-1, descending=True)')],
    ),
    Mutant(
        'top-p-on-logits',
        variant='hf_cumsum_of_logits',
        base='hf_warpers',
        why="Hugging Face's warper with the softmax left out: the cumulative sum of sorted logits.",
        edits=[('        cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)',
                '        cumulative_probs = sorted_logits.cumsum(dim=-1)')],
    ),
    Mutant(
        'filtered-set-to-zero',
        why='top-k sets the removed logits to 0 instead of -inf.',
        edits=[('    return logits.masked_fill(logits < kth_largest, NEG_INF)',
                '    return logits.masked_fill(logits < kth_largest, 0.0)')],
    ),
    Mutant(
        'filtered-set-to-zero',
        variant='top_p_where',
        base='gumbel_max',
        why='top-p keeps the nucleus with torch.where(keep, logits, 0).',
        edits=[('    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)\n'
                '    return torch.where(keep, logits, torch.full_like(logits, float("-inf")))',
                '    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)\n'
                '    return torch.where(keep, logits, torch.zeros_like(logits))')],
    ),
    Mutant(
        'filtered-set-to-zero',
        variant='multiplied_by_mask',
        base='exponential_race',
        why='top-k multiplies the logits by the keep mask, which zeroes the removed ones.',
        edits=[('    return torch.where(logits < values[..., -1:], MINUS_INFINITY, logits)',
                '    return logits * (logits >= values[..., -1:])')],
    ),
    Mutant(
        'filter-order',
        why='sample runs top-p before top-k, so top-p sees the full distribution, not the '
            'top-k-renormalised one.',
        edits=[
            ('    if top_k is not None:\n        logits = top_k_filter(logits, top_k)\n'
             '    if top_p is not None:\n        logits = top_p_filter(logits, top_p)\n',
             '    if top_p is not None:\n        logits = top_p_filter(logits, top_p)\n'
             '    if top_k is not None:\n        logits = top_k_filter(logits, top_k)\n'),
        ],
    ),
    Mutant(
        'filter-order',
        variant='filters_before_temperature',
        why='sample filters the raw logits and divides by the temperature afterwards, so top-p '
            'chooses its nucleus on the untempered distribution.',
        edits=[
            ('    logits = apply_temperature(logits, temperature)\n'
             '    if top_k is not None:\n        logits = top_k_filter(logits, top_k)\n'
             '    if top_p is not None:\n        logits = top_p_filter(logits, top_p)\n',
             '    if top_k is not None:\n        logits = top_k_filter(logits, top_k)\n'
             '    if top_p is not None:\n        logits = top_p_filter(logits, top_p)\n'
             '    logits = apply_temperature(logits, temperature)\n'),
        ],
    ),
    Mutant(
        'sampling-ignores-generator',
        why='torch.multinomial is called without the generator: the draws come from the global RNG.',
        edits=[('    draws = torch.multinomial(probs.reshape(-1, probs.size(-1)), 1, generator=generator)',
                '    draws = torch.multinomial(probs.reshape(-1, probs.size(-1)), 1)')],
    ),
    Mutant(
        'sampling-ignores-generator',
        variant='rand_like',
        base='gumbel_max',
        why='the Gumbel noise comes from torch.rand_like, which takes no generator.',
        edits=[('    uniform = torch.rand(scores.shape, generator=generator, dtype=torch.float64,\n'
                '                         device=scores.device)',
                '    uniform = torch.rand_like(scores, dtype=torch.float64)')],
    ),
    Mutant(
        'sampling-ignores-generator',
        variant='consumes_global_too',
        base='exponential_race',
        why='the draw uses the generator, but a tie-breaking jitter comes from the global RNG.',
        edits=[('    return (probs / waits).argmax(dim=-1)',
                '    jitter = torch.rand(probs.shape, dtype=probs.dtype, device=probs.device) * 1e-12\n'
                '    return (probs / waits + jitter * (probs > 0)).argmax(dim=-1)')],
    ),
    Mutant(
        'greedy-temperature-zero-missing',
        why='sample has no temperature-0 branch: apply_temperature raises for T = 0.',
        edits=[('    if temperature == 0:\n        return logits.argmax(dim=-1)\n', '')],
    ),
    Mutant(
        'greedy-temperature-zero-missing',
        variant='divides_by_zero',
        base='gumbel_max',
        why='no temperature-0 branch, and logits * (1.0 / T) raises ZeroDivisionError.',
        edits=[('    if temperature == 0:\n        return torch.argmax(logits, dim=-1)\n', '')],
    ),
    Mutant(
        'greedy-temperature-zero-missing',
        variant='tensor_division',
        base='exponential_race',
        why='no temperature-0 branch: torch.div(logits, 0) gives inf and NaN, and the race '
            'returns whatever argmax makes of NaN.',
        edits=[('    if temperature == 0:\n        return logits.argmax(-1)\n', '')],
    ),
    Mutant(
        'input-modified-in-place',
        why='apply_temperature divides the logits in place and returns them.',
        edits=[('    return logits / temperature\n',
                '    logits /= temperature\n    return logits\n')],
    ),
    Mutant(
        'input-modified-in-place',
        variant='masked_fill_',
        why='top_k_filter removes tokens with masked_fill_ on the caller\'s logits.',
        edits=[('    return logits.masked_fill(logits < kth_largest, NEG_INF)',
                '    return logits.masked_fill_(logits < kth_largest, NEG_INF)')],
    ),
    Mutant(
        'input-modified-in-place',
        variant='scatter_back_into_input',
        base='inverse_cdf',
        why='top_p_filter writes -inf into the caller\'s logits with index_put_.',
        edits=[('    return logits.masked_fill(drop, float("-inf"))',
                '    logits[drop] = float("-inf")\n    return logits')],
    ),
]
