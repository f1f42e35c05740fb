"""Kata 25_continuous_batching (iteration-level scheduling over a packed, ragged batch).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES), its own words for shared ones
(WORDINGS) and its quiz (QUESTIONS). Imports
nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

from graders.core.kata import Kata, Mistake
from graders.core.quizzes import INTEGER, Question

NESTED = (
    "torch.nested.nested_tensor",
    "torch.nested.as_nested_tensor",
    "torch.nested.nested_tensor_from_jagged",
    "torch.nested.narrow",
)

KATA = Kata(
    id="25",
    name="25_continuous_batching",
    file="batching.py",
    title="iteration-level scheduling over a packed, ragged batch",
    track="inference",
    difficulty="hard",
    target_minutes=40,
    prerequisites=("11", "22"),
    mistakes=(
        "cross-sequence-attention",
        "causal-mask-offset",
        "causal-mask-missing",
        "missing-scale",
        "padded-to-longest",
        "static-batching",
        "prefill-not-chunked",
        "budget-exceeded",
        "finished-request-kept",
        "continues-after-eos",
        "eos-dropped",
        "max-new-tokens-off-by-one",
        "position-ids-wrong",
        "tokens-refed",
        "sampled-mid-prompt",
        "logits-row-mismatch",
        "outputs-out-of-order",
    ),
    forbidden=("torch.nn.attention.flex_attention.flex_attention", *NESTED),
    hints=(
        "Attention: one segment at a time, its own queries against its own keys. Scheduling: "
        "keep, per request, the tokens known (prompt, then generated) and how many the model "
        "has seen; the ones in between are ready. Each call, walk the unfinished requests and "
        "give each as many ready tokens as the budget still allows.",
        "Segment j is rows cu[j] .. cu[j+1]-1 of q (and of k, v with cu_seqlens_k); a causal "
        "segment aligns bottom-right (query a sees keys 0 .. m - n + a). A segment yields a "
        "token only when it covers all its request's ready tokens; positions continue from "
        "what the model has seen; a request leaves at eos_id (kept) or its max_new_tokens-th "
        "token.",
        "if seen[i] == len(known[i]):   # after the call: row j is seq_ids[j]'s, chunks yield nothing\n"
        "    token = int(logits[row].argmax()); known[i].append(token); out[i].append(token)\n"
        "    done[i] = token == eos_id or len(out[i]) == max_new_tokens   # eos_id may be 0",
    ),
)


# The mistakes only this kata's grader names (shared ones: graders.core.catalogue).
MISTAKES = (
    Mistake("cross-sequence-attention",
            "A query attended to another segment's keys: one mask over the whole pack (causal "
            "or none) instead of one block per segment.",
            "Segment j's queries q[cu_q[j]:cu_q[j+1]] score only k[cu_k[j]:cu_k[j+1]]; a "
            "block-diagonal mask over the pack works too."),
    Mistake("padded-to-longest",
            "Every segment was padded to the longest one: the tensors created grow with B · "
            "max n · max m instead of the tokens really there.",
            "Loop over the segments, or build one (h, T_q, T_k) block-diagonal mask over the "
            "pack: no tensor above h · max(T_q · T_k, (T_q + T_k) · d) elements."),
    Mistake("static-batching",
            "A request waited while a call had room for it (a free slot and budget left): new "
            "requests were admitted only when the batch drained.",
            "Rebuild the batch before every call: fill free slots with waiting requests right "
            "away."),
    Mistake("prefill-not-chunked",
            "A prompt was left out (or cut short) while budget was left, because it did not "
            "fit whole; a prompt longer than max_batch_tokens could never run.",
            "Give a prompt whatever the budget still allows: take = min(ready, budget); the rest "
            "goes in later calls."),
    Mistake("budget-exceeded",
            "A call held more than max_batch_size segments or max_batch_tokens tokens.",
            "Stop adding segments at max_batch_size and cut the last one to the tokens left in "
            "the budget."),
    Mistake("finished-request-kept",
            "A request was in a call after its last token.",
            "Mark a request finished as soon as it generates eos_id or its max_new_tokens-th "
            "token, and schedule only unfinished ones."),
    Mistake("continues-after-eos",
            "A request went on generating after it generated eos_id.",
            "if token == eos_id or len(out[i]) == max_new_tokens: the request is finished "
            "(compare with ==: eos_id may be 0, so never `if token` or `if eos_id`)."),
    Mistake("eos-dropped",
            "eos_id was generated but left out of the request's output.",
            "Append the token first, then check whether it is eos_id: the output keeps it."),
    Mistake("max-new-tokens-off-by-one",
            "One token more than max_new_tokens was generated (the model saw the request in one "
            "call too many).",
            "Finish when len(out[i]) == max_new_tokens, right after appending."),
    Mistake("position-ids-wrong",
            "The positions were not each token's index in its own request: restarted at 0 in "
            "every call, taken from the pack (arange(T)), or off by one for fed-back tokens.",
            "A segment's positions are seen[i] .. seen[i] + take - 1: a prompt's tokens 0 .. p - "
            "1, the k-th generated token at p + k - 1."),
    Mistake("tokens-refed",
            "A request's earlier tokens were sent again: the prefix was recomputed instead of "
            "read from the model's cache.",
            "Send only the tokens the model has not seen: known[i][seen[i]:seen[i] + take]."),
    Mistake("sampled-mid-prompt",
            "A token was taken from the row of a prompt chunk that did not finish the prompt.",
            "After the call, a segment yields a token only if seen[i] == len(known[i]): a "
            "chunk's row predicts a prompt token that is already known."),
    Mistake("logits-row-mismatch",
            "A request's token was read from another segment's row (rows assumed in request "
            "order after the batch was reordered, or the wrong index).",
            "Row j belongs to seq_ids[j]: iterate over the call's own list of requests."),
    Mistake("outputs-out-of-order",
            "The outputs were returned in finishing order instead of the order of requests.",
            "Keep one output list per request index and return them in that order."),
)


# Shared mistakes in this kata's terms (graders.core.catalogue.mistake): kata 11's words speak
# of a cache length s, here the offset is m_j − n_j per segment.
WORDINGS = (
    Mistake("causal-mask-offset",
            "A segment's causal mask was not aligned bottom-right: its n_j queries are the last "
            "n_j of its m_j positions, so query a sees keys 0 … m_j − n_j + a, but the mask was "
            "shifted otherwise (aligned top-left, as is_causal=True aligns it, or by n_j − m_j): "
            "right only for a segment with n_j = m_j.",
            "Per segment, n = n_j queries against m = m_j keys: allowed = torch.ones(n, m, "
            "dtype=torch.bool).tril(m - n); a decode segment (n = 1) sees all its keys."),
)


QUESTIONS = (
    Question("The README's example (S = 2, C = 16) served first come first served with every "
             "call maximal: how many model calls?", 10, INTEGER,
             "(R0 3, R1 3), (R0 1, R1 1), (R1 1, R2 15), (R1 1, R2 5), (R1 1, R2 1), (R1 1, R3 2), "
             "(R1 1, R3 1) twice, (R3 1) twice: 10. Static batching needs 14."),
    Question("The bound on the number of calls for that example, ⌊W / min(S, C)⌋ + max n_i?",
             28, INTEGER,
             "W = Σ (p_i + n_i − 1) = 4 + 10 + 21 + 6 = 41; ⌊41 / 2⌋ + 8 = 28."),
    Question("Padding the skewed batch (a 96-token prefill, 40 decodes, one 5-token chunk: "
             "B = 42, h = 2) to its longest segment: how many elements has the (B, h, 96, 96) "
             "score tensor?", 774144, INTEGER,
             "42 · 2 · 96 · 96 = 774,144, against the limit h · max(T_q · T_k, (T_q + T_k) · d) "
             "= 2 · 141 · 436 = 122,952; a loop over segments peaks at 2 · 96 · 96 = 18,432."),
    Question("Prompts of 1000, 10, 10 and 10 tokens padded to the longest: what percentage of "
             "the 4,000 slots is padding (rounded)?", 74, INTEGER,
             "1 − 1,030 / 4,000 = 74.25%: Orca runs every other layer on the packed tokens."),
)
