"""Kata 25's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

SCORES = '        scores = torch.einsum("ahd,bhd->hab", qs, ks) * scale\n'
CAUSAL = "        if causal:  # bottom-right: query a sits at position m - n + a of its segment\n"
TRIL = "            allowed = torch.ones(n, m, dtype=torch.bool, device=q.device).tril(m - n)\n"
TAKE = "            take = min(len(known[i]) - seen[i], budget)\n"
SKIP = "            if done[i] or len(seq_ids) == max_batch_size or budget == 0:\n"
DONE = "            if token == eos_id or len(out[i]) == requests[i][1]:\n"
WALK = "        for i in range(len(requests)):\n"
IDS = "            ids += known[i][seen[i]:seen[i] + take]\n"
POS = "            pos += range(seen[i], seen[i] + take)\n"
CU = "            cu.append(cu[-1] + take)\n"
ARGMAX = "            token = int(logits[row].argmax())\n"
APPEND = "            out[i].append(token)\n"
BLOCK = "    allowed = seg_q[:, None] == seg_k[None, :]\n"

MUTANTS = [
    Mutant("missing-scale", why="leaves the scores unscaled.",
           edits=[(SCORES, SCORES.replace(" * scale", ""))]),
    Mutant("causal-mask-offset", why="aligns each segment's causal mask top-left.",
           edits=[(TRIL, TRIL.replace("tril(m - n)", "tril(0)"))]),
    Mutant("causal-mask-offset", variant="flipped",
           why="shifts each segment's causal mask by n - m instead of m - n (right only for "
               "square segments).",
           edits=[(TRIL, TRIL.replace("tril(m - n)", "tril(n - m)"))]),
    Mutant("causal-mask-missing", why="never masks, causal or not.",
           edits=[(CAUSAL, CAUSAL.replace("if causal:", "if False:"))]),
    Mutant("cross-sequence-attention", base="block_diagonal",
           why="one causal mask over the whole pack instead of a block-diagonal one.",
           edits=[(BLOCK, "    allowed = torch.ones(t_q, t_k, dtype=torch.bool, device=q.device)\n"),
                  ("        allowed &= local_k[None, :] <= local_q[:, None]\n",
                   "        allowed = allowed.tril(t_k - t_q)\n")]),
    Mutant("padded-to-longest", file="padded.py",
           why="pads every segment to the longest: (B, h, max n, max m) scores."),
    Mutant("forbidden-builtin", why="packs each segment as a nested tensor.",
           edits=[("        n, m = qs.shape[0], ks.shape[0]\n",
                   "        n, m = qs.shape[0], ks.shape[0]\n"
                   "        nested = torch.nested.nested_tensor([qs, ks])\n")]),
    Mutant("static-batching", why="admits new requests only when the batch has drained.",
           edits=[("    while not all(done):\n",
                   "    active = []\n    while not all(done):\n"
                   "        active = [i for i in active if not done[i]] or [\n"
                   "            i for i in range(len(requests)) if not done[i]][:max_batch_size]\n"),
                  (WALK, "        for i in active:\n")]),
    Mutant("prefill-not-chunked", why="skips a prompt that does not fit the budget left.",
           edits=[(TAKE, "            take = len(known[i]) - seen[i]\n"
                         "            if take > budget:\n                continue\n")]),
    Mutant("budget-exceeded", why="ignores max_batch_tokens.",
           edits=[(TAKE, "            take = len(known[i]) - seen[i]\n")]),
    Mutant("finished-request-kept", why="keeps requests that finished by max_new_tokens.",
           edits=[(SKIP, SKIP.replace("if done[i] or",
                                      "if (done[i] and out[i][-1] == eos_id) or"))]),
    Mutant("continues-after-eos", why="ignores eos_id.",
           edits=[(DONE, DONE.replace("token == eos_id or ", ""))]),
    Mutant("continues-after-eos", variant="falsy_token",
           why="tests the token for truthiness, so eos_id = 0 never stops a request.",
           edits=[(DONE, DONE.replace("if token == eos_id", "if token and token == eos_id"))]),
    Mutant("eos-dropped", why="leaves eos out of the output.",
           edits=[(APPEND, "            if token != eos_id:\n    " + APPEND)]),
    Mutant("max-new-tokens-off-by-one", why="finishes one token late.",
           edits=[(DONE, DONE.replace("requests[i][1]", "requests[i][1] + 1"))]),
    Mutant("position-ids-wrong", why="restarts positions at 0 in every call.",
           edits=[(POS, "            pos += range(take)\n")]),
    Mutant("tokens-refed", why="sends each request's whole sequence again every call.",
           edits=[(IDS, "            ids += known[i][:seen[i] + take]\n"),
                  (POS, "            pos += range(seen[i] + take)\n"),
                  (CU, "            cu.append(cu[-1] + seen[i] + take)\n")]),
    Mutant("sampled-mid-prompt", why="takes a token from every segment's row.",
           edits=[("            if seen[i] < len(known[i]):\n"
                   "                continue  # a prompt chunk that does not finish the prompt\n",
                   "")]),
    Mutant("logits-row-mismatch", why="reads the rows in reverse order.",
           edits=[(ARGMAX, "            token = int(logits[len(seq_ids) - 1 - row].argmax())\n")]),
    Mutant("outputs-out-of-order", why="returns the outputs in finishing order.",
           edits=[("    done = [False] * len(requests)\n",
                   "    done = [False] * len(requests)\n    order = []\n"),
                  ("                done[i] = True\n",
                   "                done[i] = True\n                order.append(i)\n"),
                  ("                order.append(i)\n    return out\n",
                   "                order.append(i)\n    return [out[i] for i in order]\n")]),
]
