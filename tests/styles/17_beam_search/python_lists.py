"""Beam search as CS224n's assignment writes it: Python lists of hypotheses, candidates
collected hypothesis by hypothesis, one sort (still one step_fn call per step)."""

import math

import torch


def beam_search(step_fn, bos_idx, eos_idx, beam_size, max_len, length_penalty=1.0):
    hypotheses = [[bos_idx]]
    hyp_scores = [0.0]
    completed = []
    t = 1
    while len(completed) < beam_size and t < max_len:
        log_p = step_fn(torch.tensor(hypotheses)).double().tolist()
        candidates = []
        for hyp, score, row in zip(hypotheses, hyp_scores, log_p):
            for word, lp in enumerate(row):
                candidates.append((score + lp, hyp + [word]))
        candidates.sort(key=lambda c: c[0], reverse=True)
        live_size = beam_size - len(completed)
        new_hyps, new_scores = [], []
        for score, hyp in candidates[:live_size]:
            if hyp[-1] == eos_idx:
                completed.append((hyp, score))
            else:
                new_hyps.append(hyp)
                new_scores.append(score)
        hypotheses, hyp_scores = new_hyps, new_scores
        t += 1
        if not hypotheses:
            break
    if len(completed) < beam_size:
        completed.extend(zip(hypotheses, hyp_scores))
    ranked = [(hyp, score / math.pow(len(hyp) - 1, length_penalty)) for hyp, score in completed]
    return sorted(ranked, key=lambda h: h[1], reverse=True)
