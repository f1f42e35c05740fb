# Mutant [finished-beam-not-removed]: a fixed-width beam in which a hypothesis ending in eos
# keeps its slot with its frozen score and competes with the live candidates every step, so
# later, better candidates can push it out (the contract moves it to the finished list).
import torch


def beam_search(step_fn, bos_idx, eos_idx, beam_size, max_len, length_penalty=1.0):
    beam = [([bos_idx], 0.0, False)]  # (tokens, cumulative log-prob, ended)
    growing = [([bos_idx], 0.0)]
    while growing and len(growing[0][0]) < max_len:
        log_probs = step_fn(torch.tensor([t for t, _s in growing])).double()
        candidates = [(t, s, True) for t, s, ended in beam if ended]
        for (t, s), row in zip(growing, log_probs.tolist()):
            candidates += [(t + [v], s + lp, v == eos_idx) for v, lp in enumerate(row)]
        candidates.sort(key=lambda c: c[1], reverse=True)
        beam = candidates[:beam_size]
        growing = [(t, s) for t, s, ended in beam if not ended]
    ranked = [(t, s / (len(t) - 1) ** length_penalty) for t, s, _ended in beam]
    return sorted(ranked, key=lambda item: item[1], reverse=True)
