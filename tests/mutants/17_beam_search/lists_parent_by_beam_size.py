# Mutant [beam-index-wrong]: CS224n's loop over Python lists, with the parent of a flat
# candidate index taken as flat // beam_size instead of flat // V (the token, flat % V, is
# right): hypotheses[parent] runs past the list, "list index out of range".
import torch


def beam_search(step_fn, bos_idx, eos_idx, beam_size, max_len, length_penalty=1.0):
    hypotheses = [[bos_idx]]
    hyp_scores = torch.zeros(1, dtype=torch.float64)
    completed = []
    while len(completed) < beam_size and len(hypotheses[0]) < max_len:
        log_p = step_fn(torch.tensor(hypotheses)).double()
        vocab = log_p.size(1)
        flat_scores = (hyp_scores[:, None] + log_p).view(-1)
        top_scores, top_pos = flat_scores.topk(min(beam_size - len(completed), flat_scores.numel()))
        new_hypotheses, new_scores = [], []
        for pos, score in zip(top_pos.tolist(), top_scores.tolist()):
            parent, word = pos // beam_size, pos % vocab
            sentence = hypotheses[parent] + [word]
            if word == eos_idx:
                completed.append((sentence, score))
            else:
                new_hypotheses.append(sentence)
                new_scores.append(score)
        if not new_hypotheses:
            break
        hypotheses, hyp_scores = new_hypotheses, torch.tensor(new_scores, dtype=torch.float64)
    if len(completed) < beam_size:
        completed += list(zip(hypotheses, hyp_scores.tolist()))
    ranked = [(h, s / (len(h) - 1) ** length_penalty) for h, s in completed[:beam_size]]
    return sorted(ranked, key=lambda item: item[1], reverse=True)
