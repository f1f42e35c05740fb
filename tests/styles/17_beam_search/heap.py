"""Beam search with heapq.nlargest over (score, parent, token) triples."""

import heapq

import torch


def beam_search(step_fn, bos_idx, eos_idx, beam_size, max_len, length_penalty=1.0):
    beam = [((bos_idx,), 0.0)]
    done = []
    while beam and len(done) < beam_size and len(beam[0][0]) < max_len:
        prefixes = torch.tensor([list(p) for p, _score in beam], dtype=torch.long)
        rows = step_fn(prefixes).to(torch.float64).tolist()
        triples = ((score + lp, i, tok)
                   for i, (_p, score) in enumerate(beam)
                   for tok, lp in enumerate(rows[i]))
        next_beam = []
        for score, i, tok in heapq.nlargest(beam_size - len(done), triples):
            prefix = beam[i][0] + (tok,)
            (done if tok == eos_idx else next_beam).append((prefix, score))
        beam = next_beam
    done += beam
    return sorted(((list(p), s / (len(p) - 1) ** length_penalty) for p, s in done),
                  key=lambda h: h[1], reverse=True)
