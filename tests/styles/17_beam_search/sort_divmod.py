"""Beam search with one sort over the flattened candidates and divmod for (parent, token);
scores kept in the step function's own dtype."""

import torch


def beam_search(step_fn, bos_idx, eos_idx, beam_size, max_len, length_penalty=1.0):
    prefixes = torch.full((1, 1), bos_idx, dtype=torch.long)
    scores = None
    finished = []
    for _step in range(max_len - 1):
        log_probs = step_fn(prefixes)
        if scores is None:
            scores = torch.zeros(1, dtype=log_probs.dtype)
        k, vocab = log_probs.shape
        total = (scores.unsqueeze(1) + log_probs).reshape(-1)
        order = torch.sort(total, descending=True).indices[: beam_size - len(finished)]
        keep_prefixes, keep_scores = [], []
        for flat in order.tolist():
            parent, token = divmod(flat, vocab)
            seq = prefixes[parent].tolist() + [token]
            if token == eos_idx:
                finished.append((seq, float(total[flat])))
            else:
                keep_prefixes.append(seq)
                keep_scores.append(total[flat])
        if len(finished) >= beam_size or not keep_prefixes:
            break
        prefixes = torch.tensor(keep_prefixes, dtype=torch.long)
        scores = torch.stack(keep_scores)
    if len(finished) < beam_size and keep_prefixes:
        finished += [(p, float(s)) for p, s in zip(keep_prefixes, keep_scores)]
    out = [(seq, score / (len(seq) - 1) ** length_penalty) for seq, score in finished]
    out.sort(key=lambda pair: -pair[1])
    return out
