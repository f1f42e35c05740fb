# Mutant [finished-beam-not-removed]: a fixed-width tensor beam in which a finished row is "frozen":
# its next-token row is replaced by eos at log-probability 0 (everything else -inf), so it
# keeps its score and its slot and competes with the live candidates every step; the tokens
# are cut after the first eos at the end.
import torch
def beam_search(step_fn, bos_idx, eos_idx, beam_size, max_len, length_penalty=1.0):
    tokens = torch.full((1, 1), bos_idx, dtype=torch.long)
    scores = torch.zeros(1, dtype=torch.float64)
    done = torch.zeros(1, dtype=torch.bool)
    while tokens.size(1) < max_len and not bool(done.all()):
        lp = step_fn(tokens).double()
        V = lp.size(1)
        frozen = torch.full((V,), float('-inf'), dtype=torch.float64); frozen[eos_idx] = 0.0
        lp = torch.where(done[:, None], frozen, lp)
        cand = (scores[:, None] + lp).flatten()
        top, flat = cand.topk(min(beam_size, int(torch.isfinite(cand).sum())))
        parent, tok = flat // V, flat % V
        done = done[parent] | (tok == eos_idx)
        tokens = torch.cat([tokens[parent], tok[:, None]], 1)
        scores = top
    out = []
    for row, s in zip(tokens.tolist(), scores.tolist()):
        if eos_idx in row[1:]:
            row = row[:row.index(eos_idx, 1) + 1]
        out.append((row, s / (len(row) - 1) ** length_penalty))
    return sorted(out, key=lambda x: x[1], reverse=True)
