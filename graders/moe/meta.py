"""Kata 20_moe (a sparse mixture-of-experts layer, in Mixtral's names).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES) and its quiz (QUESTIONS). Imports
nothing heavy: `kata list` reads every meta. Every number of the quiz is computed here.
"""

from __future__ import annotations

import math

from graders.core.kata import Kata, Mistake
from graders.core.quizzes import CHOICE, INTEGER, NUMBER, Question

KATA = Kata(
    id="20",
    name="20_moe",
    file="moe.py",
    title="A sparse mixture-of-experts layer",
    track="inference",
    difficulty="medium",
    target_minutes=30,
    prerequisites=("15",),
    mistakes=(
        "router-softmax-missing",
        "topk-renormalisation-wrong",
        "softmax-twice",
        "softmax-wrong-dim",
        "routing-weights-not-applied",
        "combine-overwrites",
        "swiglu-gate-swapped",
        "dense-expert-compute",
        "expert-called-repeatedly",
        "aux-loss-from-topk-weights",
        "aux-loss-f-wrong",
        "aux-loss-scale-wrong",
        "aux-loss-no-gradient",
        "z-loss-wrong",
        "capacity-formula-wrong",
        "capacity-priority-wrong",
        "dropped-weights-renormalised",
        "dropped-token-passthrough",
    ),
    forbidden=(),
    hints=(
        "Route one token on paper first: logits over the experts, a softmax, its top_k, their "
        "weights. Then ask which rows each expert must see, how many times it may be called "
        "in one forward, and which numbers of the aux loss are counts.",
        "Loop over the experts, not the tokens: for expert e, torch.where(chosen == e) gives "
        "the tokens (and the top-k slots) routed to it, in token order. Run the expert once on "
        "those rows, weight its output, and add it back with index_add_ (never assign: a "
        "token's second expert must add to its first). Capacity is then a cut of that list. "
        "In the aux loss, f_i counts every one of the T · top_k choices (neither "
        "probabilities nor first choices alone) and P_i is the full softmax's mean over the "
        "tokens: only P_i carries a gradient.",
        "token_ids, slot = torch.where(chosen == e)  # slot: which of each token's top_k picked e\n"
        "w = weights[token_ids, slot, None]  # (rows, 1): that pick's weight; weights[token_ids] is (rows, top_k)\n"
        "f = torch.bincount(chosen.flatten(), minlength=num_experts) / chosen.numel()  # every pick",
    ),
)


MISTAKES: tuple[Mistake, ...] = (
    Mistake("router-softmax-missing",
            "The top-k were taken of the raw router logits and used as the weights (divided "
            "by their sum, or as they are): logits are no probabilities, so the weights are "
            "wrong (negative, or huge when the chosen logits sum to nearly 0), although the "
            "same experts are chosen.",
            "probs = torch.softmax(router_logits, dim=-1); weights, chosen = probs.topk(top_k); "
            "then renormalise if norm_topk_prob."),
    Mistake("topk-renormalisation-wrong",
            "The top-k weights were not divided by their sum with norm_topk_prob=True (or were "
            "with norm_topk_prob=False).",
            "weights, chosen = probs.topk(top_k); with norm_topk_prob, weights / weights.sum(-1, "
            "keepdim=True)."),
    Mistake("softmax-twice",
            "A softmax was taken over the top-k probabilities: that is not renormalising them "
            "(a softmax of probabilities flattens them).",
            "Divide the top-k probabilities by their sum, or take the softmax of the top-k "
            "logits: both give the same weights."),
    Mistake("routing-weights-not-applied",
            "The experts' outputs were summed (or averaged) without the router's weights.",
            "output[t] = Σ_j weight[t, j] · experts[e[t, j]](x_t): multiply each expert's "
            "output by its weight before adding it."),
    Mistake("combine-overwrites",
            "A token's output was assigned (out[idx] = y, index_copy) instead of added to: its "
            "second expert overwrote its first.",
            "output.index_add_(0, token_ids, weighted): both experts' outputs add up."),
    Mistake("dense-expert-compute",
            "An expert ran on tokens not routed to it (all T rows, masked or weighted by 0 "
            "afterwards): the sparse layer's whole point is that it does not.",
            "Gather each expert's own rows first, tokens[token_ids], and run it on those "
            "alone: T · top_k rows in all, never T · num_experts."),
    Mistake("expert-called-repeatedly",
            "An expert was called several times in one forward (once per token or once per "
            "top-k slot) instead of once with all its rows.",
            "torch.where(chosen == e) gives every token of expert e, whichever slot chose "
            "it: one call per expert."),
    Mistake("aux-loss-from-topk-weights",
            "P_i was taken from the (renormalised) top-k weights, zero for unselected "
            "experts, instead of the full softmax.",
            "P_i = softmax(router_logits).mean(0): every token's probability for expert i, "
            "before top-k."),
    Mistake("aux-loss-f-wrong",
            "f_i is not the fraction of the T · top_k assignments that go to expert i: it was "
            "the mean router probability (a soft f, which makes the loss N · Σ P_i²) or was "
            "counted from each token's first choice alone (argmax) although top_k > 1.",
            "f_i counts every top-k choice: a bincount of torch.topk(probs, top_k).indices over "
            "all T · top_k of them, divided by T · top_k; no gradient."),
    Mistake("aux-loss-scale-wrong",
            "The load-balancing loss has another scale than N · Σ f_i · P_i (or top_k times "
            "it, Hugging Face's): no factor N, a mean over the experts instead of a sum, or N "
            "twice. Balanced routing does not give 1.",
            "f_i = count_i / (T · top_k), P_i = mean probability, loss = N · Σ f_i · P_i."),
    Mistake("aux-loss-no-gradient",
            "The load-balancing loss does not train the router: P_i was detached or taken "
            "from counts.",
            "Only f_i are counts (no gradient); P_i must stay the softmax's, in the graph."),
    Mistake("z-loss-wrong",
            "The z-loss is not the mean over tokens of logsumexp(logits)² (squares of the "
            "logits or of their max, no square, or a sum over tokens).",
            "torch.logsumexp(router_logits, dim=-1).square().mean()."),
    Mistake("capacity-formula-wrong",
            "The capacity is not C = ceil(T · top_k / num_experts · capacity_factor) over the "
            "whole batch (floor, T instead of T · top_k, or one capacity per batch row).",
            "capacity = math.ceil(b * n * top_k / num_experts * capacity_factor)."),
    Mistake("capacity-priority-wrong",
            "An expert kept other tokens than the first C routed to it in token order (the "
            "last ones, the highest weights, or first choices before second choices).",
            "torch.where(chosen == e) lists them in token order: keep token_ids[:capacity]."),
    Mistake("dropped-weights-renormalised",
            "After a drop, the token's surviving weights were rescaled: they stay as routed.",
            "Drop the assignment and nothing else: no renormalisation after capacity."),
    Mistake("dropped-token-passthrough",
            "A token whose every assignment was dropped got x_t instead of zeros: the "
            "residual connection belongs outside the layer.",
            "Start from output = torch.zeros_like(tokens): a fully dropped token stays 0."),
)


# Mixtral 8x7B: 32 layers, dim 4096, hidden 14336, 8 experts (top-2), 32 query and 8 kv
# heads of 128, vocab 32000, untied embeddings, RMSNorms with a weight each.
LAYERS, DIM, HIDDEN, EXPERTS, TOP_K, KV_DIM, VOCAB = 32, 4096, 14336, 8, 2, 8 * 128, 32000
ATTENTION = 2 * DIM * DIM + 2 * DIM * KV_DIM
EXPERT = 3 * DIM * HIDDEN
SHARED_PER_LAYER = ATTENTION + DIM * EXPERTS + 2 * DIM  # attention, router, two norms
EMBEDDINGS = 2 * VOCAB * DIM + DIM  # input and output embeddings, the final norm
TOTAL = LAYERS * (SHARED_PER_LAYER + EXPERTS * EXPERT) + EMBEDDINGS
ACTIVE = LAYERS * (SHARED_PER_LAYER + TOP_K * EXPERT) + EMBEDDINGS


def capacity(tokens: int, top_k: int, experts: int, factor: float) -> int:
    return math.ceil(tokens * top_k / experts * factor)


def aux_loss(probs: list[list[float]], top_k: int) -> float:
    """N · Σ f_i · P_i from probabilities (each token's top_k by probability)."""
    experts, tokens = len(probs[0]), len(probs)
    f = [0.0] * experts
    for row in probs:
        for i in sorted(range(experts), key=lambda i: -row[i])[:top_k]:
            f[i] += 1 / (tokens * top_k)
    p = [sum(row[i] for row in probs) / tokens for i in range(experts)]
    return experts * sum(fi * pi for fi, pi in zip(f, p))


AUX_EXAMPLE = [[0.34, 0.33, 0.33], [0.34, 0.33, 0.33], [0.0, 0.51, 0.49]]

QUESTIONS = (
    Question(
        "Mixtral 8x7B has 32 layers, dim 4096, experts with hidden size 14336, 8 experts per "
        "layer (top-2), grouped-query attention with 32 query and 8 key/value heads of 128, "
        "and untied embeddings over 32000 tokens. How many parameters does it have, in "
        "billions (1 decimal)?",
        round(TOTAL / 1e9, 1), NUMBER,
        f"Per layer: attention {ATTENTION:,} + router {DIM * EXPERTS:,} + two norms "
        f"{2 * DIM:,} + 8 experts × {EXPERT:,} (3 · 4096 · 14336); × 32, plus 2 · 32000 · 4096 "
        f"embeddings and the final norm: {TOTAL:,} ≈ {TOTAL / 1e9:.1f}B, "
        f"{LAYERS * EXPERTS * EXPERT / TOTAL:.1%} of them in experts. Not 8 × 7B = 56B: only "
        "the experts are eightfold, attention and embeddings are shared.",
        rel_tolerance=0.01),
    Question(
        "And how many of them does one token use (its 2 experts per layer, plus everything "
        "shared), in billions (1 decimal)?",
        round(ACTIVE / 1e9, 1), NUMBER,
        f"Replace 8 experts by 2 per layer: {ACTIVE:,} ≈ {ACTIVE / 1e9:.1f}B. The memory still "
        "holds all 46.7B: which experts a token needs is known only once the router has run.",
        rel_tolerance=0.01),
    Question(
        "T = 4096 tokens, 8 experts, top_k = 2, capacity factor 1.25: how many assignments "
        "may each expert keep?",
        capacity(4096, 2, 8, 1.25), INTEGER,
        "C = ceil(4096 · 2 / 8 · 1.25) = ceil(1280) = 1280. With a factor of 1.0 any "
        "imbalance drops tokens; with 2.0 half the expert compute is padding. Dropless MoE "
        "(MegaBlocks, grouped GEMM) sizes each expert's batch to its tokens instead.",
    ),
    Question(
        "At decode, a batch of 8 tokens routes uniformly, top-2 of 8 experts. What is the "
        "probability that a given expert receives none of them, in percent (nearest whole "
        "number)?",
        round(100 * 0.75 ** 8), INTEGER,
        "Each token avoids a given expert with probability 6/8 = 0.75 (it picks 2 of 8), so "
        f"all 8 avoid it with 0.75⁸ ≈ {0.75 ** 8:.3f}: about 10% (1% at 16 tokens). A decode "
        "step therefore reads nearly every expert's weights, like a dense 47B model, while "
        "its FLOPs stay a quarter of that.",
    ),
    Question(
        "Three tokens, 3 experts, top_k = 1; router probabilities (0.34, 0.33, 0.33) twice "
        "and (0, 0.51, 0.49). What is the load-balancing loss (2 decimals)?",
        round(aux_loss(AUX_EXAMPLE, 1), 2), NUMBER,
        "The tokens go to experts 0, 0 and 1: f = (2/3, 1/3, 0); P = (0.227, 0.39, 0.383); "
        f"3 · Σ f_i · P_i ≈ {aux_loss(AUX_EXAMPLE, 1):.2f}, below 1 although the routing is "
        "not balanced: 1 is not the loss's minimum. Its gradient, not its value, pushes the "
        "router towards balance.",
        rel_tolerance=0.01),
    Question(
        "With top_k = 1 and norm_topk_prob=True, what gradient does gate.weight get from the "
        "layer's output?",
        "A", CHOICE,
        "The one weight is divided by itself: it is always 1, so the output does not depend "
        "on the router's probabilities, and gate learns only from the auxiliary losses. "
        "Switch Transformer multiplies by the raw probability at top_k = 1 for this reason.",
        choices=("none: the weight is always 1", "the same as with top_k = 2",
                 "the gradient of the top probability, unscaled")),
)
