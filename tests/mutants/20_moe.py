"""Kata 20's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

NORMALISE = '''        if self.norm_topk_prob:
            weights = weights / weights.sum(dim=-1, keepdim=True)'''
COMBINE = "            output.index_add_(0, token_ids, out * weights[token_ids, slot, None])"
RUN = "            out = expert(tokens[token_ids])"
KEEP = "                token_ids, slot = token_ids[:capacity], slot[:capacity]"
P = "    p = probs.mean(dim=0)"

MUTANTS = [
    Mutant('router-softmax-missing', why="The top-k of the raw router logits, renormalised "
           "(no softmax): the room's `weights, chosen = torch.topk(router_logits, self.top_k, dim=-1)`.",
           edits=[("        probs = torch.softmax(router_logits, dim=-1)\n"
                   "        weights, chosen = torch.topk(probs, self.top_k, dim=-1)",
                   "        weights, chosen = torch.topk(router_logits, self.top_k, dim=-1)")]),
    Mutant('aux-loss-f-wrong', why='f_i the mean router probability (a soft f) instead of counts.',
           edits=[("    f = counts / (logits.shape[0] * top_k)\n", "    f = probs.mean(dim=0)\n")]),
    Mutant('aux-loss-f-wrong', variant='argmax_counts', why="f_i counted from each token's "
           "argmax alone, divided by T, whatever top_k.",
           edits=[("    chosen = torch.topk(probs, top_k, dim=-1).indices\n",
                   "    chosen = probs.argmax(dim=-1, keepdim=True)\n"),
                  ("    f = counts / (logits.shape[0] * top_k)\n", "    f = counts / logits.shape[0]\n")]),
    Mutant('aux-loss-scale-wrong', variant='mean_over_experts', why='A mean over the experts '
           'instead of the sum and the factor N: (f * p).mean().',
           edits=[("    return num_experts * (f * p).sum()", "    return (f * p).mean()")]),
    Mutant('topk-renormalisation-wrong', why='The condition is inverted: renormalised exactly '
           'when norm_topk_prob is False.',
           edits=[(NORMALISE, NORMALISE.replace("if self.norm_topk_prob", "if not self.norm_topk_prob"))]),
    Mutant('softmax-twice', why='A softmax over the top-k probabilities instead of dividing by '
           'their sum.',
           edits=[(NORMALISE, NORMALISE.replace("weights / weights.sum(dim=-1, keepdim=True)",
                                                "torch.softmax(weights, dim=-1)"))]),
    Mutant('softmax-wrong-dim', why="The router's softmax over the tokens (dim 0).",
           edits=[("probs = torch.softmax(router_logits, dim=-1)",
                   "probs = torch.softmax(router_logits, dim=0)")]),
    Mutant('routing-weights-not-applied', why="The experts' outputs added unweighted.",
           edits=[(COMBINE, "            output.index_add_(0, token_ids, out)")]),
    Mutant('combine-overwrites', why="index_copy_: a token's later expert overwrites its first.",
           edits=[(COMBINE, COMBINE.replace("index_add_", "index_copy_"))]),
    Mutant('swiglu-gate-swapped', why='SiLU on w3 instead of w1.',
           edits=[("self.w2(F.silu(self.w1(x)) * self.w3(x))",
                   "self.w2(self.w1(x) * F.silu(self.w3(x)))")]),
    Mutant('dense-expert-compute', why='Each expert runs on every token, then the routed rows '
           'are picked out (the output is right).',
           edits=[(RUN, "            out = expert(tokens)[token_ids]")]),
    Mutant('expert-called-repeatedly', why='Each expert called once per token.',
           edits=[(RUN, "            out = torch.cat([expert(tokens[t:t + 1]) for t in token_ids.tolist()])")]),
    Mutant('aux-loss-from-topk-weights', why="P_i from the renormalised top-k weights, zero for "
           "experts a token did not choose.",
           edits=[(P, "    top = torch.topk(probs, top_k, dim=-1).values\n"
                      "    p = torch.zeros_like(probs).scatter(1, chosen, top / top.sum(-1, keepdim=True)).mean(dim=0)")]),
    Mutant('aux-loss-scale-wrong', why='No factor N.',
           edits=[("    return num_experts * (f * p).sum()", "    return (f * p).sum()")]),
    Mutant('aux-loss-no-gradient', why='P_i detached: the loss cannot train the router.',
           edits=[(P, P + ".detach()")]),
    Mutant('z-loss-wrong', why='A sum over tokens instead of the mean.',
           edits=[("torch.logsumexp(logits, dim=-1).square().mean()",
                   "torch.logsumexp(logits, dim=-1).square().sum()")]),
    Mutant('capacity-formula-wrong', why='floor instead of ceil.',
           edits=[("math.ceil(b * n * self.top_k", "math.floor(b * n * self.top_k")]),
    Mutant('capacity-priority-wrong', why='Each expert keeps the last C tokens routed to it.',
           edits=[(KEEP, "                token_ids, slot = token_ids[-capacity:], slot[-capacity:]")]),
    Mutant('dropped-weights-renormalised', why="A token's kept weights rescaled to sum to 1 "
           "after its other assignment was dropped.",
           edits=[("        for e, expert in enumerate(self.experts):\n",
                   "        if capacity is not None:\n"
                   "            kept = torch.zeros_like(weights, dtype=torch.bool)\n"
                   "            for e in range(self.num_experts):\n"
                   "                t, s = torch.where(chosen == e)\n"
                   "                kept[t[:capacity], s[:capacity]] = True\n"
                   "            weights = weights * kept\n"
                   "            weights = weights / weights.sum(-1, keepdim=True).clamp_min(1e-30)\n"
                   "        for e, expert in enumerate(self.experts):\n")]),
    Mutant('dropped-token-passthrough', why='A token with every assignment dropped gets x_t.',
           edits=[("        return output.reshape(b, n, dim), router_logits",
                   "        if capacity is not None:\n"
                   "            hits = torch.zeros(b * n, dtype=torch.long)\n"
                   "            for e in range(self.num_experts):\n"
                   "                hits[torch.where(chosen == e)[0][:capacity]] += 1\n"
                   "            output = torch.where((hits == 0)[:, None], tokens, output)\n"
                   "        return output.reshape(b, n, dim), router_logits")]),
]
