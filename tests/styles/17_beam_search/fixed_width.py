"""A fixed-width beam: beam_size rows every step, finished rows kept in place and passed to
step_fn again, but masked to -inf so that they are never extended (the contract allows
extra rows that do not change the result)."""

import torch


def beam_search(step_fn, bos_idx, eos_idx, beam_size, max_len, length_penalty=1.0):
    tokens = torch.full((beam_size, 1), bos_idx, dtype=torch.long)      # (B, t)
    scores = torch.full((beam_size,), float("-inf"), dtype=torch.float64)
    scores[0] = 0.0                                                      # one live row at start
    alive = torch.zeros(beam_size, dtype=torch.bool)
    alive[0] = True
    finished = []
    while tokens.size(1) < max_len and len(finished) < beam_size:
        log_probs = step_fn(tokens).to(torch.float64)                    # (B, V)
        vocab = log_probs.size(1)
        total = scores[:, None] + log_probs                              # (B, V)
        total = total.masked_fill(~alive[:, None], float("-inf"))
        valid = int(alive.sum()) * vocab
        keep = min(beam_size - len(finished), valid)
        top, flat = total.flatten().topk(keep)
        parent = torch.div(flat, vocab, rounding_mode="floor")
        token = flat - parent * vocab
        grown = torch.cat([tokens[parent], token[:, None]], dim=1)     # (keep, t + 1)
        is_eos = token == eos_idx
        finished += [(grown[i].tolist(), top[i].item()) for i in torch.nonzero(is_eos).flatten().tolist()]
        live = ~is_eos
        n_live = int(live.sum())
        pad = beam_size - n_live
        # Pad back to beam_size rows with copies of the first kept row, masked dead.
        filler = grown[:1].expand(pad, -1)
        tokens = torch.cat([grown[live], filler], dim=0)
        scores = torch.cat([top[live], torch.full((pad,), float("-inf"), dtype=torch.float64)])
        alive = torch.cat([torch.ones(n_live, dtype=torch.bool), torch.zeros(pad, dtype=torch.bool)])
        if n_live == 0:
            break
    finished += [(tokens[i].tolist(), scores[i].item()) for i in range(beam_size) if alive[i]]
    result = [(seq, s / (len(seq) - 1) ** length_penalty) for seq, s in finished[:beam_size]]
    result.sort(key=lambda item: item[1], reverse=True)
    return result
